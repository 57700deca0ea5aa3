package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// runJSON runs `crucible run --json ARGS...` with src on stdin.
func runJSON(t *testing.T, src string, args ...string) *sandbox.Result {
	t.Helper()
	return jsonRun(t, src, append([]string{"run", "--json"}, args...)...)
}

func TestRunPython(t *testing.T) {
	requireRoot(t)
	t.Setenv("CRUCIBLE_CANARY", "py-canary")
	r := runJSON(t, `import crucible, os, sys
print("hi from", sys.flags.isolated)
crucible.result = {"n": 42, "env": "CRUCIBLE_CANARY" in os.environ, "path0": sys.path[0]}
`, "--lang", "py", "-")
	if r.ExitCode != 0 || r.Stdout != "hi from 1\n" || string(r.Result) != `{"n":42,"env":false,"path0":"/crucible/python/lib"}` {
		t.Fatalf("%+v", r)
	}

	// An uncaught error: the stack names the program's lines, not the
	// runner's, under the name Python gives standard input.
	r = runJSON(t, "def f():\n    raise ValueError('boom')\n\nf()\n", "--lang", "py", "-")
	if r.ExitCode != 1 || r.Error == nil || r.Error.Name != "ValueError" || r.Error.Message != "boom" {
		t.Fatalf("%+v", r)
	}
	for _, want := range []string{`"<stdin>", line 4`, `"<stdin>", line 2, in f`} {
		if !strings.Contains(r.Error.Stack, want) || !strings.Contains(r.Stderr, want) {
			t.Errorf("stack lacks %q:\n%s", want, r.Error.Stack)
		}
	}
	if strings.Contains(r.Error.Stack, "runpy") || strings.Contains(r.Error.Stack, "run.py") || strings.Contains(r.Error.Stack, "/crucible") {
		t.Errorf("the runner shows in the stack:\n%s", r.Error.Stack)
	}

	r = runJSON(t, "import crucible, sys\ncrucible.result = 7\nsys.exit(3)\n", "--lang", "py", "-")
	if r.ExitCode != 3 || string(r.Result) != "7" {
		t.Errorf("sys.exit(3): %+v", r)
	}
	r = runJSON(t, "import crucible\ncrucible.result = {1, 2}\n", "--lang", "py", "-")
	if r.ExitCode != 1 || r.Error == nil || r.Error.Name != "TypeError" {
		t.Errorf("a set as result: %+v", r)
	}
}

// requireDeno checks that the repository's node_modules holds deno (npm
// install; CI does), which `crucible run --lang deno` finds by itself from
// this package's directory.
func requireDeno(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("../node_modules/.bin/deno"); err != nil {
		testenv.Missing(t, "no deno: run npm install at the repository's root")
	}
}

func TestRunDeno(t *testing.T) {
	requireRoot(t)
	requireDeno(t)
	r := runJSON(t, `interface P { x: number }
const p: P = { x: 2 };
console.log("env", Deno.env.get("CRUCIBLE_CANARY") ?? "none", Deno.env.get("HOME"));
export default await Promise.resolve({ answer: p.x * 21 });
`, "--lang", "deno", "-")
	if r.ExitCode != 0 || r.Stdout != "env none /workspace\n" || string(r.Result) != `{"answer":42}` {
		t.Fatalf("%+v", r)
	}

	// Errors carry the TypeScript source's own line numbers.
	r = runJSON(t, "function f(): never {\n  throw new RangeError(\"bad\");\n}\nf();\n", "--lang", "deno", "-")
	if r.ExitCode != 1 || r.Error == nil || r.Error.Name != "RangeError" || !strings.Contains(r.Error.Stack, "main.ts:2:9") {
		t.Fatalf("%+v", r)
	}

	// Deno's own walls stand inside the jail's: no read or write outside
	// the program's places. The network is the egress's: a fetch reaches
	// its decision, and its refusal is recorded for the model.
	r = runJSON(t, `
const out: string[] = [];
try { Deno.readTextFileSync("/etc/shadow"); out.push("read"); } catch (e) { out.push((e as Error).name); }
try { Deno.writeTextFileSync("/usr/x", "x"); out.push("wrote"); } catch (e) { out.push((e as Error).name); }
try { await fetch("http://1.1.1.1/"); out.push("fetched"); } catch (e) { out.push((e as Error).name); }
try { await fetch("https://example.com/"); out.push("fetched"); } catch (e) { out.push((e as Error).name); }
export default out;
`, "--lang", "deno", "-")
	if r.ExitCode != 0 || string(r.Result) != `["NotCapable","NotCapable","TypeError","TypeError"]` ||
		len(r.Violations) != 1 || r.Violations[0].Kind != "dns" || r.Violations[0].Host != "example.com" {
		t.Fatalf("%+v", r)
	}
}

// A runaway program is stopped by the jail, whatever the language: the time
// limit kills a busy loop, the memory limit a heap bomb.
func TestRunLimits(t *testing.T) {
	requireRoot(t)
	r := runJSON(t, "while True:\n    pass\n", "--timeout", "1s", "--lang", "py", "-")
	if r.ExitCode != 124 || !hasLimit(r, "timeout") || r.Result != nil {
		t.Errorf("busy loop: %+v", r)
	}
	r = runJSON(t, "x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n", "--memory", "64MiB", "--lang", "py", "-")
	if r.ExitCode != 137 || !hasLimit(r, "memory") {
		t.Errorf("heap bomb: %+v", r)
	}
	requireDeno(t)
	r = runJSON(t, "const a: Uint8Array[] = [];\nwhile (true) a.push(new Uint8Array(1 << 20).fill(1));\n", "--memory", "128MiB", "--lang", "deno", "-")
	if r.ExitCode == 0 || !hasLimit(r, "memory") {
		t.Errorf("deno heap bomb: %+v", r)
	}
	r = runJSON(t, "while (true) {}\n", "--timeout", "1s", "--lang", "deno", "-")
	if r.ExitCode != 124 || !hasLimit(r, "timeout") {
		t.Errorf("deno busy loop: %+v", r)
	}
}
