package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// Attacks on a warm jail that runs the programs of another language than
// its pool's (Pool.Do, sameWorker: one engine worker for TypeScript
// and JavaScript).

// Language names near a real one, or naming another worker, given to
// Do of a TypeScript and of a Python pool: each is refused with an
// error (no panic), before the pool hands out a jail (none is used up, none
// is audited), and the pools still run their own programs afterwards.
func TestAttackPoolLanguageNames(t *testing.T) {
	var buf testenv.Buffer
	w := audit.New(&buf)
	ts := jsPool(t, PoolOptions{Size: 1, Audit: w}, 0)
	defer ts.Close()
	py := pyPool(t, nil, PoolOptions{Size: 1, Audit: w})
	bad := []string{"TS", "Ts", "ts ", " js", "js\x00", "../js", "js/../ts", "javascript", "typescript",
		"deno", "python", "py", "sh", "execute.js", ".js", "ts\njs"}
	for _, l := range bad {
		for _, c := range []struct {
			name string
			p    *Pool
		}{{"ts", ts}, {"py", py}} {
			if c.name == "py" && l == "py" {
				continue
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("a %s pool's Do(%q) panicked: %v", c.name, l, r)
					}
				}()
				x, err := c.p.Do(context.Background(), Job{Language: l, Source: []byte("console.log(1)\n"), File: "-"})
				if err == nil || x != nil {
					t.Errorf("a %s pool ran a program of language %q: %+v, %v", c.name, l, x, err)
				}
			}()
		}
	}
	for _, l := range []string{"ts", "js"} {
		if _, err := py.Do(context.Background(), Job{Language: l, Source: []byte("return 1"), File: "-"}); err == nil {
			t.Errorf("a py pool ran a %s program", l)
		}
	}
	if st := ts.Stats(); st.Warm+st.Cold != 0 {
		t.Errorf("the refused programs used jails of the ts pool: %+v", st)
	}
	if st := py.Stats(); st.Warm+st.Cold != 0 {
		t.Errorf("the refused programs used jails of the py pool: %+v", st)
	}
	if x, err := ts.Do(context.Background(), Job{Language: "js", Source: []byte("return 6 * 7"), File: "-"}); err != nil || string(x.Result) != "42" {
		t.Errorf("after the refusals, js on the ts pool: %+v, %v", x, err)
	}
	if x, err := py.Do(context.Background(), Job{Language: "py", Source: []byte("import crucible\ncrucible.result = 42\n"), File: "-"}); err != nil || string(x.Result) != "42" {
		t.Errorf("after the refusals, py on the py pool: %+v, %v", x, err)
	}
	ts.Close()
	py.Close()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	langs := auditedLanguages(buf.String())
	if strings.Join(langs, " ") != "js py" {
		t.Errorf("audited executions %q; want only js and py", langs)
	}
}

// A TypeScript program leaves marks in everything of its jail but the
// workspace: a file in /tmp, a global, the environment it can change; the
// JavaScript program that runs next on the same pool (its warm jail was
// readied for TypeScript) finds none of them, and runs with JavaScript's
// semantics where TypeScript's differ (f<T>(x) is two comparisons in
// JavaScript, a generic call in TypeScript); and the other way round. On
// each engine: on Deno the runner's JSON is its own, whatever the program
// makes of the global's.
func TestAttackPoolLanguageIsolation(t *testing.T) {
	onEngines(t, nil, func(t *testing.T, cfg *config.Config) { languageIsolation(t, enginePool(t, cfg, PoolOptions{Size: 1})) })
}

func languageIsolation(t *testing.T, p *Pool) {
	run := func(language, src string) *Result {
		t.Helper()
		x, err := p.Do(context.Background(), Job{Language: language, Source: []byte(src), File: "-"})
		if err != nil {
			t.Fatalf("%s: %v", language, err)
		}
		return x
	}
	const mark = `await fs.writeTextFile("/tmp/mark", "L");
globalThis.mark = "L";
Object.prototype.polluted = "L";
Array.prototype.push = () => "L";
JSON.stringify = () => '"L"';
`
	const look = `const seen = [];
try { await fs.readTextFile("/tmp/mark"); seen.push("tmp") } catch {}
if (typeof globalThis.mark !== "undefined") seen.push("global");
if (({}).polluted !== undefined) seen.push("prototype");
if ([].push(1) !== 1) seen.push("push");
if (JSON.stringify(1) !== "1") seen.push("JSON");
const f = 1, T = 2, x = 3;
let generic;
try { generic = String(f<T>(x)) } catch (e) { generic = e.name }
return {seen, generic};
`
	for i, c := range []struct{ first, then, generic string }{
		{"ts", "js", "false"}, {"js", "ts", "TypeError"}, {"ts", "js", "false"},
	} {
		if x := run(c.first, mark+"return 1"); x.Error != nil || x.ExitCode != 0 {
			t.Fatalf("step %d: the %s program that leaves marks: %+v %+v", i, c.first, x, x.Error)
		}
		x := run(c.then, look)
		var got struct {
			Seen    []string
			Generic string
		}
		if x.Error != nil || json.Unmarshal(x.Result, &got) != nil {
			t.Fatalf("step %d: the %s program that looks: %+v %+v", i, c.then, x, x.Error)
		}
		if len(got.Seen) != 0 {
			t.Errorf("step %d: a %s program saw the marks of the %s program before it: %q", i, c.then, c.first, got.Seen)
		}
		if got.Generic != c.generic {
			t.Errorf("step %d: f<T>(x) in %s gave %q; want %q (%s's semantics)", i, c.then, got.Generic, c.generic, c.then)
		}
	}
}
