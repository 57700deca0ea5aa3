package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// A TypeScript pool runs JavaScript programs too, as JavaScript (the
// engine's one worker serves both, told the language by its job), and
// records them as JavaScript; it refuses a language of another worker.
func TestPoolRunsAnotherLanguage(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{{"ts", "ts", true}, {"ts", "js", true}, {"js", "ts", true}, {"py", "py", true},
		{"ts", "py", false}, {"py", "js", false}, {"ts", "cobol", false}, {"cobol", "ts", false},
		{"cobol", "cobol", false}, {"deno", "deno", false}} {
		if got := sameWorker(embedded(), c.a, c.b); got != c.same {
			t.Errorf("SameWorker(%q, %q) = %v", c.a, c.b, got)
		}
	}

	var buf testenv.Buffer
	w := audit.New(&buf)
	p := jsPool(t, PoolOptions{Size: 1, Audit: w}, 0)
	defer p.Close()
	if !p.Serves("js") || p.Serves("py") {
		t.Errorf("a ts pool serves js %v, py %v", p.Serves("js"), p.Serves("py"))
	}
	run := func(language, src string) *Result {
		t.Helper()
		x, err := p.Do(context.Background(), Job{Language: language, Source: []byte(src), File: "-"})
		if err != nil {
			t.Fatalf("%s %q: %v", language, src, err)
		}
		return x
	}
	const typed = "const n: number = 2; return n"
	if x := run("js", typed); x.Error == nil || x.Error.Name != "SyntaxError" {
		t.Errorf("TypeScript's syntax as JavaScript: %+v", x)
	}
	if x := run("ts", typed); x.Error != nil || string(x.Result) != "2" {
		t.Errorf("TypeScript: %+v %+v", x, x.Error)
	}
	if x := run("js", "return typeof 1"); x.Error != nil || string(x.Result) != `"number"` {
		t.Errorf("JavaScript: %+v %+v", x, x.Error)
	}
	if _, err := p.Do(context.Background(), Job{Language: "py", Source: []byte("print(1)"), File: "-"}); err == nil || !strings.Contains(err.Error(), `does not run "py"`) {
		t.Errorf("a Python program on a ts pool: %v", err)
	}

	p.Close()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if langs := auditedLanguages(buf.String()); strings.Join(langs, " ") != "js ts js" {
		t.Errorf("audited languages %q, want js ts js", langs)
	}
}

// auditedLanguages are the languages of the execution lines of an audit
// trail, in order.
func auditedLanguages(trail string) []string {
	var langs []string
	for _, line := range strings.Split(strings.TrimSpace(trail), "\n") {
		var e struct{ Event, Language string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "execution" {
			langs = append(langs, e.Language)
		}
	}
	return langs
}
