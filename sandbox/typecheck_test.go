package sandbox

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// checkedTools is server-everything's tools (as ev), with one call each, and their
// declarations, as search_tools shows them.
func checkedTools(t *testing.T) (*config.Config, *Tools, *TypeCheck) {
	t.Helper()
	cfg, tools := everythingTools(t)
	t.Cleanup(tools.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := tools.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, tools, &TypeCheck{Declarations: ToolDeclarations(list)}
}

// A program type-checked before it runs, on Deno, in a warm jail: one that
// names a tool's argument wrongly, or a tool that is not there, or gives
// a string for a number, is a TypeCheckError that lists each mistake at
// the program's own line (a script's, a module's, JavaScript's too), and
// nothing of it runs: no output, no tool call, no file. A program that
// passes runs as it would unchecked; one that does not parse is the
// SyntaxError it is.
func TestTypeCheck(t *testing.T) {
	cfg, tools, check := checkedTools(t)
	for _, warm := range []bool{false, true} {
		c := *cfg
		c.Serve.TypeCheck = warm // a worker that readies the checker
		t.Run(map[bool]string{false: "cold checker", true: "warm checker"}[warm], func(t *testing.T) {
			testTypeCheck(t, denoPool(t, &c, PoolOptions{Size: 1, Tools: tools}), check)
		})
	}
}

func testTypeCheck(t *testing.T, p *Pool, check *TypeCheck) {
	const effects = "console.log(\"ran\");\nDeno.writeTextFileSync(\"/tmp/ran\", \"\");\n"
	for _, c := range []struct {
		name, file, src, result string
		diags                   []string
	}{
		{"a script that passes, without annotations, a catch's error used", "execute.ts", `function f(x) { return x; }
let name = "";
try { JSON.parse("{"); } catch (e) { name = e.name; }
const r: unknown = await tools.ev.echo({ message: "hi" });
return [r, f(name)];`, `["Echo: hi","SyntaxError"]`, nil},
		{"a script: a string for a number on line 1, a wrong argument, a tool not there", "execute.ts",
			`const n: number = "one"; ` + effects + `await tools.ev.echo({ mesage: "hi" });
return await tools.ev.ech({ message: "hi" });`, "",
			[]string{"execute.ts:1:7 TS2322 ", "execute.ts:3:23 TS2561 ", "execute.ts:4:23 TS2551 "}},
		{"a module", "m.ts", effects + `const n: number = await tools.ev.get_sum({ a: 1, b: "2" });
export default n;`, "", []string{"m.ts:3:50 TS2322 "}},
		{"JavaScript", "main.js", effects + `return await tools.ev.echo({ message: 1 });`, "", []string{"main.js:3:"}},
	} {
		language := "ts"
		if strings.HasSuffix(c.file, ".js") {
			language = "js"
		}
		x, err := p.Do(context.Background(), Job{Language: language, Source: []byte(c.src), File: c.file, TypeCheck: check})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.diags == nil {
			if x.Error != nil || string(x.Result) != c.result {
				t.Errorf("%s: %s %+v\n%s", c.name, x.Result, x.Error, x.Stderr)
			}
			continue
		}
		for _, d := range c.diags {
			if x.Error == nil || x.Error.Name != "TypeCheckError" || !strings.Contains(x.Error.Message, "\n"+d) || x.ExitCode == 0 {
				t.Errorf("%s: exit %d, %+v; want a TypeCheckError at %s", c.name, x.ExitCode, x.Error, d)
			}
		}
		if strings.Contains(x.Stdout, "ran") || len(x.ToolCalls) > 0 || len(x.Violations) > 0 {
			t.Errorf("%s: the program ran: %q, %d tool calls, violations %+v", c.name, x.Stdout, len(x.ToolCalls), x.Violations)
		}
	}

	x, err := p.Do(context.Background(), Job{Source: []byte("return 1 +;"), File: "execute.ts", TypeCheck: check})
	if err != nil || x.Error == nil || x.Error.Name != "SyntaxError" || !strings.Contains(x.Error.Stack, "execute.ts:1:") {
		t.Errorf("a program that does not parse: %v %+v", err, x)
	}
}

// checkers are the warm checkers (`deno lsp`) of this process's jails:
// each a child of a Deno worker.
func checkers() []int {
	return denoProcs(3, func(args []string) bool { return args[1] == "lsp" })
}

// Under serve.typecheck, a Deno worker waits with its checker started
// (Deno's language server, in the worker's jail), checks with it, and
// kills it before any of the program runs, checked or not: the program
// finds no checker among the jail's processes. A checker that died while
// its worker waited leaves the check to `deno check`: the program is
// checked all the same, and does not run.
func TestTypeCheckWarm(t *testing.T) {
	cfg, tools, check := checkedTools(t)
	cfg.Serve.TypeCheck = true
	p := denoPool(t, cfg, PoolOptions{Size: 1, Tools: tools})
	const procs = `const ps = new Deno.Command("/bin/sh", { args: ["-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"] }).outputSync();
return new TextDecoder().decode(ps.stdout).includes(" lsp ");
`
	for _, checked := range []*TypeCheck{check, nil} {
		awaitReady(t, p, 1)
		if n := len(checkers()); n != 1 {
			t.Fatalf("%d checkers wait, want 1", n)
		}
		x, err := p.Do(context.Background(), Job{Source: []byte(procs), File: "execute.ts", TypeCheck: checked})
		if err != nil || x.Error != nil || string(x.Result) != "false" {
			t.Errorf("checked %v: %v %s %+v\n%s", checked != nil, err, x.Result, x.Error, x.Stderr)
		}
	}

	awaitReady(t, p, 1)
	for _, pid := range checkers() {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	x, err := p.Do(context.Background(), Job{Source: []byte("const n: number = \"one\";\nconsole.log(\"ran\");\nreturn n;\n"), File: "execute.ts", TypeCheck: check})
	if err != nil || x.Error == nil || x.Error.Name != "TypeCheckError" || !strings.Contains(x.Error.Message, "\nexecute.ts:1:7 TS2322 ") || strings.Contains(x.Stdout, "ran") {
		t.Errorf("a checker that died: %v %+v %+v", err, x, x.Error)
	}
	p.Close()
	if n := checkers(); len(n) != 0 {
		t.Errorf("checkers after Close: %v", n)
	}
}

// A cold program is checked as a warm one is; a check that cannot finish
// (here, its memory runs out) runs nothing of the program either. On the
// embedded engine nothing is type-checked: asked for, a check is refused
// and says how to get one.
func TestTypeCheckCold(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	cfg := config.Default()
	cfg.Runtimes.Engine = config.EngineDeno
	needDeno(t, cfg)
	check := &TypeCheck{Declarations: ToolDeclarations(nil)}
	prog, err := CheckedProgram(cfg, "ts", []byte(`console.log("ran");
return fs.readTextFile(42);`), "execute.ts", check)
	if err != nil {
		t.Fatal(err)
	}
	x, err := Run(context.Background(), cfg, prog, Options{})
	if err != nil || x.Error == nil || x.Error.Name != "TypeCheckError" || !strings.Contains(x.Error.Message, "execute.ts:2:24 TS2345 ") || strings.Contains(x.Stdout, "ran") {
		t.Errorf("cold: %v %+v %+v", err, x, x.Error)
	}

	small := *cfg
	small.Sandbox.Memory = 96 * config.MiB
	prog, err = CheckedProgram(&small, "ts", []byte(`console.log("ran"); return 1;`), "execute.ts", check)
	if err != nil {
		t.Fatal(err)
	}
	x, err = Run(context.Background(), &small, prog, Options{})
	if err != nil || strings.Contains(x.Stdout, "ran") || x.ExitCode == 0 {
		t.Fatalf("a check without the memory for it: %v %+v", err, x)
	}
	if (x.Error == nil || x.Error.Name != "TypeCheckError" || !strings.Contains(x.Error.Message, "could not finish")) && !slices.Contains(x.LimitsHit, "memory") {
		t.Errorf("a check without the memory for it: %+v %+v; want a TypeCheckError or the memory limit", x, x.Error)
	}

	if err := CanTypeCheck(embedded(), "ts"); err == nil || !strings.Contains(err.Error(), "runtimes.engine") {
		t.Errorf("a check on the embedded engine: %v", err)
	}
	if _, err := CheckedProgram(embedded(), "py", []byte("1"), "-", check); err == nil {
		t.Error("a Python program type-checked")
	}
}
