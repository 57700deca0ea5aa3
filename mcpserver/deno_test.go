package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
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
	p := s.views[""].poolFor("ts")
	if p == nil || s.views[""].poolFor("js") != p || s.views[""].poolFor("deno") != p {
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
