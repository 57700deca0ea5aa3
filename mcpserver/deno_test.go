package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With runtimes.engine deno, execute's TypeScript and JavaScript run on a
// warm pool of Deno workers, one pool for ts, js and deno: V8's APIs are
// there (Intl, which the embedded engine lacks), the session's workspace
// stays, the tools are called, and a refused host is a violation.
func TestExecuteOnDeno(t *testing.T) {
	needDeno(t)
	ev := everything(t)
	s := ownServer(t, func(c *config.Config) {
		c.Runtimes.Engine = config.EngineDeno
		c.Servers = map[string]config.Server{"ev": ev}
	}, Options{})
	cs := connect(t, s)
	p := s.gens.current().views[""].poolFor("ts")
	if p == nil || s.gens.current().views[""].poolFor("js") != p || s.gens.current().views[""].poolFor("deno") != p {
		t.Fatal("no one pool for ts, js and deno")
	}
	if res, out := execute(t, cs, map[string]any{"code": `await Deno.writeTextFile("/workspace/n", "7");
return new Intl.NumberFormat("en-US").format(1234.5)`}); out == nil || out.ExitCode != 0 || string(out.Result) != `"1,234.5"` {
		t.Fatalf("TypeScript on Deno: %q %+v", text(res), out)
	}
	res, out := execute(t, cs, map[string]any{"language": "js", "code": `const n = await Deno.readTextFile("n");
const echoed = await tools.ev.echo({ message: n });
let host = "";
try { await fetch("https://not-allowed.example/"); } catch (e) { host = e.name; }
return { echoed, host };`})
	var got struct{ Echoed, Host string }
	if out == nil || json.Unmarshal(out.Result, &got) != nil || got.Echoed != "Echo: 7" || got.Host != "TypeError" {
		t.Fatalf("JavaScript on Deno: %q %+v", text(res), out)
	}
	refused := false
	for _, v := range out.Violations {
		refused = refused || v.Host == "not-allowed.example"
	}
	if !refused {
		t.Errorf("the refused host is no violation: %+v", out.Violations)
	}
	if st := p.Stats(); st.Warm+st.Cold != 2 {
		t.Errorf("the Deno pool ran %d programs, want 2: %+v", st.Warm+st.Cold, st)
	}
}

// needDeno is Missing without the repository's deno (npm install).
func needDeno(t *testing.T) {
	t.Helper()
	probe := config.Default()
	probe.Runtimes.Engine = config.EngineDeno
	if sandbox.CheckEngine(probe) != nil {
		testenv.Missing(t, "no deno: run npm install at the repository's root")
	}
}

// onEngines runs test once on each engine of ts and js, as a subtest
// named after it: the embedded engine, then Deno.
func onEngines(t *testing.T, test func(t *testing.T, engine string)) {
	t.Helper()
	for _, engine := range []string{config.EngineEmbedded, config.EngineDeno} {
		t.Run(engine, func(t *testing.T) {
			if engine == config.EngineDeno {
				needDeno(t)
			}
			test(t, engine)
		})
	}
}

// execute's check: on Deno, a program that calls a tool with a wrong
// argument is a TypeCheckError and runs nothing (no tool call); one that
// passes runs. serve.typecheck checks every program without being asked,
// and check: false skips it. On the embedded engine execute has no check
// (a check asked for is refused), and serve.typecheck refuses to start.
func TestExecuteTypeCheck(t *testing.T) {
	needDeno(t)
	ev := everything(t)
	const wrong = `await tools.ev.echo({ mesage: "hi" });
return "ran";`
	for _, every := range []bool{false, true} {
		s := ownServer(t, func(c *config.Config) {
			c.Runtimes.Engine = config.EngineDeno
			c.Serve.TypeCheck = every
			c.Servers = map[string]config.Server{"ev": ev}
		}, Options{})
		cs := connect(t, s)
		if !hasCheck(t, cs) {
			t.Error("execute on Deno has no check")
		}
		args := map[string]any{"code": wrong}
		if !every {
			args["check"] = true
		}
		res, out := execute(t, cs, args)
		if !res.IsError || out == nil || out.Error == nil || out.Error.Name != "TypeCheckError" ||
			!strings.Contains(out.Error.Message, "execute.ts:1:23 TS2561 ") || len(out.ToolCalls) != 0 || string(out.Result) == `"ran"` {
			t.Errorf("typecheck %v: a wrong argument: %q %+v", every, text(res), out)
		}
		args["code"] = `return await tools.ev.echo({ message: "hi" });`
		if res, out := execute(t, cs, args); res.IsError || out == nil || string(out.Result) != `"Echo: hi"` {
			t.Errorf("typecheck %v: a program that passes: %q %+v", every, text(res), out)
		}
		if res, out := execute(t, cs, map[string]any{"code": `const n: number = "one";` + "\nreturn \"ran\";", "check": false}); res.IsError || out == nil || string(out.Result) != `"ran"` {
			t.Errorf("typecheck %v: check false: %q %+v", every, text(res), out)
		}
		if res, _ := execute(t, cs, map[string]any{"language": "py", "code": "1", "check": true}); !res.IsError || !strings.Contains(text(res), "check: type checking is for TypeScript and JavaScript") {
			t.Errorf("typecheck %v: a Python program checked: %q", every, text(res))
		}
	}

	s := newServer(t, nil)
	cs := connect(t, s)
	if hasCheck(t, cs) {
		t.Error("execute on the embedded engine offers check")
	}
	if res, _ := execute(t, cs, map[string]any{"code": "return 1", "check": true}); !res.IsError || !strings.Contains(text(res), `"check"`) {
		t.Errorf("a check on the embedded engine: %q", text(res))
	}
	cfg, tools := testConfig(t, func(c *config.Config) { c.Serve.TypeCheck = true })
	defer tools.Close()
	if s, err := New(Options{Config: cfg, Tools: tools}); err == nil || !strings.Contains(err.Error(), "serve.typecheck") {
		if s != nil {
			_ = s.Close()
		}
		t.Errorf("serve.typecheck on the embedded engine: %v", err)
	}
}

// A checked program that imports a skill is checked against the skill's
// types, by either checker (serve.typecheck's warm one, or execute's
// check: true, cold): a wrong argument to the skill's function is a
// TypeCheckError at the program's line, and nothing runs; a right one
// runs. A skill's own type errors are not the program's: it runs.
func TestExecuteTypeCheckSkill(t *testing.T) {
	needDeno(t)
	dir := t.TempDir()
	for name, src := range map[string]string{
		"greet.ts":  "export const greet = (n: string): string => `hi ${n}`;\n",
		"sloppy.ts": "const n: number = \"one\";\nexport const two = 2;\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, every := range []bool{false, true} {
		cs := connect(t, ownServer(t, func(c *config.Config) {
			c.Runtimes.Engine = config.EngineDeno
			c.Serve.TypeCheck = every
			c.Serve.Skills = dir
		}, Options{}))
		code := "import { greet } from \"/skills/greet.ts\";\nconsole.log(\"ran\");\nexport default greet(%s);\n"
		res, out := execute(t, cs, map[string]any{"code": fmt.Sprintf(code, "42"), "check": true})
		if !res.IsError || out == nil || out.Error == nil || out.Error.Name != "TypeCheckError" ||
			!strings.Contains(out.Error.Message, "execute.ts:3:22 TS2345 ") || strings.Contains(out.Stdout, "ran") {
			t.Errorf("typecheck %v: a wrong argument to a skill: %q %+v", every, text(res), out)
		}
		if res, out := execute(t, cs, map[string]any{"code": fmt.Sprintf(code, `"ada"`), "check": true}); res.IsError || out == nil || string(out.Result) != `"hi ada"` {
			t.Errorf("typecheck %v: a right one: %q %+v", every, text(res), out)
		}
		sloppy := "import { two } from \"/skills/sloppy.ts\";\nexport default two;\n"
		if res, out := execute(t, cs, map[string]any{"code": sloppy, "check": true}); res.IsError || out == nil || string(out.Result) != "2" {
			t.Errorf("typecheck %v: a skill's own error: %q %+v", every, text(res), out)
		}
	}
}

// hasCheck says whether execute's input schema has check.
func hasCheck(t *testing.T, cs *mcp.ClientSession) bool {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "execute" {
			b, _ := json.Marshal(tool.InputSchema)
			return strings.Contains(string(b), `"check"`)
		}
	}
	t.Fatal("no execute tool")
	return false
}
