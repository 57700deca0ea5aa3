package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/e2e/internal/brokenworker"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/lang/js"
)

func TestRunJS(t *testing.T) {
	requireRoot(t)
	// TypeScript is the default, on the embedded engine: no Node or Deno.
	embedded := onEmbedded(t, "")
	r := runJSON(t, `interface P { x: number }
const p: P = { x: 2 };
console.log("env", env.HOME, typeof Deno, typeof process);
await new Promise((r) => setTimeout(r, 10));
return { answer: p.x * 21 };
`, append(embedded, "-")...)
	if r.ExitCode != 0 || r.Stdout != "env /workspace undefined undefined\n" || string(r.Result) != `{"answer":42}` || r.Error != nil {
		t.Fatalf("%s", dump(r))
	}

	// An uncaught error, in the file's own name and lines, on stderr too.
	file := filepath.Join(testenv.PublicDir(t), "prog.ts")
	if err := os.WriteFile(file, []byte("type T = number;\n\nfunction f(n: T): never {\n  throw new RangeError(`bad ${n}`);\n}\nexport default f(1);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runJSON(t, "", append(embedded, file)...)
	if r.ExitCode != 1 || r.Error == nil || r.Error.Name != "RangeError" || r.Error.Message != "bad 1" ||
		!strings.Contains(r.Error.Stack, "prog.ts:4:") || !strings.Contains(r.Stderr, "Uncaught RangeError: bad 1") {
		t.Fatalf("%s", dump(r))
	}

	// Plain JavaScript by extension; files under /workspace and /tmp.
	file = filepath.Join(testenv.PublicDir(t), "prog.mjs")
	if err := os.WriteFile(file, []byte(`fs.writeTextFile("/tmp/x", "in tmp");
let etc; try { fs.readTextFile("/etc/passwd"); } catch (e) { etc = e.name; }
export default [fs.readTextFile("/tmp/x"), etc];
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runJSON(t, "", append(embedded, file)...)
	if r.ExitCode != 0 || string(r.Result) != `["in tmp","TypeError"]` {
		t.Fatalf("%s", dump(r))
	}
}

// The jail stops what the engine's own limits do not: a runaway loop at
// the execution's timeout, a heap bomb at the engine's heap limit, deep
// recursion at its stack limit. What the program printed before any of
// them is kept.
func TestRunJSLimits(t *testing.T) {
	requireRoot(t)
	// Mostly waits: see parallel, in main_test.go.
	t.Parallel()
	// The worker stops the program a second before the timeout, to say
	// so; the jail's kill still ends it, as for any command. The worker's
	// clock starts only once it runs, and a loaded machine may take more
	// than that second to start it: then the jail's kill comes first and
	// there is no TimeoutError. Either ending is right; the timeout is
	// reported and the output kept whichever it was.
	r := runJSON(t, "console.log('start');\nfor (;;) {}\n", append(onEmbedded(t, ""), "--timeout", "5s", "-")...)
	if r.ExitCode != 124 || !hasLimit(r, "timeout") || r.Stdout != "start\n" || r.Result != nil ||
		r.Error != nil && r.Error.Name != "TimeoutError" {
		t.Errorf("busy loop: %s", dump(r))
	}
	// The other runs are not about time; under the race detector on a slow
	// machine a heap bomb takes most of the default 30 s. A timeout no
	// machine reaches leaves only the limit under test to end them.
	cfg := filepath.Join(testenv.PublicDir(t), "crucible.yaml")
	// The smallest heap and a small jail keep the bombs short: under the
	// race detector the engine allocates slowly (64MiB took ~15 s here).
	if err := os.WriteFile(cfg, []byte(embeddedYAML+"  js_heap: 16MiB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bomb := "console.log('before');\nconst a: string[] = [];\nwhile (true) a.push('x'.repeat(1 << 20) + a.length);\n"
	r = runJSON(t, bomb, "--config", cfg, "--timeout", "1h", "-")
	if r.ExitCode != 1 || r.Error == nil || r.Error.Message != "out of memory" || hasLimit(r, "memory") || r.Stdout != "before\n" {
		t.Errorf("heap bomb: %s", dump(r))
	}
	// Each frame costs the worker ~4 KiB of Go stack, several times that
	// under -race: a bound well inside the jail's memory.
	if err := os.WriteFile(cfg, []byte(embeddedYAML+"  js_stack: 2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runJSON(t, "const f = (n: number): number => f(n + 1) + 1;\ntry { f(0); } catch (e) { console.log(String(e)); }\n", "--config", cfg, "--timeout", "1h", "-")
	if r.ExitCode != 0 || r.Stdout != "InternalError: stack overflow\n" {
		t.Errorf("recursion: %s", dump(r))
	}
	// The jail's memory limit holds if the engine's were set too high; it
	// kills the worker, and what it printed is out already. ArrayBuffers
	// fill it: their zeroed pages are the jail's as soon as they are made,
	// and they cost the race detector a thirtieth of the strings' writing.
	if err := os.WriteFile(cfg, []byte(embeddedYAML+"  js_heap: 4GiB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	buffers := "console.log('before');\nconst a: ArrayBuffer[] = [];\nwhile (true) a.push(new ArrayBuffer(1 << 20));\n"
	r = runJSON(t, buffers, "--config", cfg, "--memory", "64MiB", "--timeout", "1h", "-")
	if r.ExitCode != 137 || !hasLimit(r, "memory") || r.Stdout != "before\n" {
		t.Errorf("heap bomb past the jail's memory: %s", dump(r))
	}
}

// Attack: the engine is broken and the program runs native code in the
// worker (package brokenworker stands in for it). The worker is jailed like
// any command: every layer holds.
func TestAttackJSWorkerCompromised(t *testing.T) {
	requireRoot(t)
	r := runJSON(t, brokenworker.Mark+"return 1\n", append(onEmbedded(t, ""), "-")...)
	for _, want := range []string{
		"init environ\topen /proc/1/environ: permission denied",
		"write /usr\topen /usr/bin/crucible-x: read-only file system",
		"write self\topen " + js.Worker + ": read-only file system",
		"mount\toperation not permitted",
		"setuid\toperation not permitted",
		"ptrace init\toperation not permitted",
		"connect\tnetwork is unreachable",
		"Uid: 1000 1000 1000 1000", "CapEff: 0000000000000000", "NoNewPrivs: 1", "Seccomp: 2",
	} {
		if !strings.Contains(r.Stdout, want+"\n") {
			t.Errorf("no %q:\n%s", want, dump(r))
		}
	}
	for _, v := range []string{"mount", "ptrace"} {
		if !violated(r, v) {
			t.Errorf("no %s violation recorded: %v", v, r.Violations)
		}
	}
}
