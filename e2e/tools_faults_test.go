package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/jail"
)

// faultServerEnv, in its environment, makes this test binary an MCP server
// that does what the real ones cannot on demand: crash mid-call, hang.
const faultServerEnv = "CRUCIBLE_TEST_FAULT_SERVER"

// init, not TestMain: the server must start before anything else does.
func init() {
	if os.Getenv(faultServerEnv) == "" {
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "faults", Version: "1"}, nil)
	type textArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo " + a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns its process id."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("pid %d", os.Getpid())}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits in the middle of the call."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// faultConfig writes a crucible.yaml whose server f is this test binary
// serving the faults, with a per-call timeout; its argument, unique to the
// test, finds its processes. It returns the file and the argument.
func faultConfig(t *testing.T, timeout string) (cfg, mark string) {
	t.Helper()
	exe := mustExecutable(t)
	dir := testenv.PublicDir(t)
	mark = "fault-" + filepath.Base(dir)
	yaml := "servers:\n  f:\n    command: " + exe + "\n    args: [" + mark + "]\n" +
		"    env: {" + faultServerEnv + ": '1'}\n    timeout: " + timeout + "\n"
	cfg = filepath.Join(dir, "crucible.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, mark
}

// leftBehind lists the processes whose command line holds mark.
func leftBehind(t *testing.T, mark string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), mark) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// A server that crashes mid-call fails that call with an error that says
// so, is restarted for the next call, and the next execution finds it
// working.
func TestToolsCrash(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct{ lang, crash, again string }{
		{"ts", `
const caught = (p: Promise<unknown>) => p.then(() => "no error", (e) => e instanceof Error ? e.kind + ": " + e.message : "not an Error");
const before = await tools.f.pid({});
const crash = await caught(tools.f.crash({}));
export default { before, crash, after: await tools.f.pid({}) };
`, `export default await tools.f.echo({ text: "next" });`},
		{"py", `import crucible
tools = crucible.tools
before = tools.f.pid()
try:
    tools.f.crash()
    crash = "no error"
except crucible.ToolError as e:
    crash = e.kind + ": " + str(e)
crucible.result = {"before": before, "crash": crash, "after": tools.f.pid()}
`, `import crucible
crucible.result = crucible.tools.f.echo(text="next")
`},
	} {
		t.Run(c.lang, func(t *testing.T) {
			cfg, mark := faultConfig(t, "60s")
			r := runJSON(t, c.crash, "--lang", c.lang, "--config", cfg, "-")
			var got struct{ Before, Crash, After string }
			if err := json.Unmarshal(r.Result, &got); err != nil || r.ExitCode != 0 {
				t.Fatalf("%v: %+v", err, r)
			}
			if !strings.HasPrefix(got.Crash, "error: tool server f failed during the call of f.crash (") || !strings.Contains(got.Crash, "it is restarted for the next call") {
				t.Errorf("the crash: %q", got.Crash)
			}
			if !strings.HasPrefix(got.Before, "pid ") || !strings.HasPrefix(got.After, "pid ") || got.Before == got.After {
				t.Errorf("before the crash %q, after %q: want two processes", got.Before, got.After)
			}
			if len(r.ToolCalls) != 3 || !r.ToolCalls[0].OK || r.ToolCalls[1].Tool != "crash" || r.ToolCalls[1].OK || !r.ToolCalls[2].OK {
				t.Errorf("tool_calls: %+v", r.ToolCalls)
			}
			// The server's failure is not the code's doing.
			if len(r.Violations) != 0 {
				t.Errorf("violations: %+v", r.Violations)
			}

			r = runJSON(t, c.again, "--lang", c.lang, "--config", cfg, "-")
			if r.ExitCode != 0 || string(r.Result) != `"echo next"` {
				t.Errorf("the next execution: %+v", r)
			}
			if ps := leftBehind(t, mark); len(ps) != 0 {
				t.Errorf("servers left behind: %q", ps)
			}
		})
	}
}

// A server that hangs: its per-call timeout fails the call, as a limit,
// and the program goes on; where the execution's timeout comes first, it
// ends the execution, and the server with it.
func TestToolsHang(t *testing.T) {
	requireRoot(t)
	// Mostly waits: see parallel, in main_test.go.
	t.Parallel()
	for _, c := range []struct{ lang, hang, forever string }{
		{"ts", `
for (;;) {
  try { await tools.list(); break; }
  catch (e) { if (!String(e.message).includes("still starting")) throw e; }
}
const hang = await tools.f.hang({}).then(() => "no error", (e) => e.kind + ": " + e.message);
export default { hang, after: await tools.f.echo({ text: "after" }) };
`, `console.log("calling");
await tools.f.hang({});
`},
		{"py", `import crucible
while True:
    try:
        crucible.tools.list()
        break
    except crucible.ToolError as e:
        if "still starting" not in str(e):
            raise
try:
    crucible.tools.f.hang()
    hang = "no error"
except crucible.ToolError as e:
    hang = e.kind + ": " + str(e)
crucible.result = {"hang": hang, "after": crucible.tools.f.echo(text="after")}
`, `import crucible
print("calling", flush=True)
crucible.tools.f.hang()
`},
	} {
		// Each program starts the server first, by listing its tools until
		// it has: the per-call timeout covers a server's start too, and
		// starting this race-built binary can take more than 2 s on a
		// loaded machine. The hang's 2 s are then its own. (A list is
		// neither a call nor, when the start outlasts it, a violation: the
		// start goes on, and the next list waits for it.)
		t.Run(c.lang, func(t *testing.T) {
			t.Parallel()
			cfg, mark := faultConfig(t, "2s")
			r := runJSON(t, c.hang, "--lang", c.lang, "--config", cfg, "-")
			var got struct{ Hang, After string }
			if err := json.Unmarshal(r.Result, &got); err != nil || r.ExitCode != 0 {
				t.Fatalf("%v: %+v", err, r)
			}
			if got.Hang != "limit: f.hang did not answer within 2s, the per-call timeout" || got.After != "echo after" {
				t.Errorf("%+v", got)
			}
			if len(r.Violations) != 1 || r.Violations[0].Kind != "limit" || len(r.ToolCalls) != 2 || r.ToolCalls[0].OK || !r.ToolCalls[1].OK {
				t.Errorf("violations %+v, tool_calls %+v", r.Violations, r.ToolCalls)
			}
			if ps := leftBehind(t, mark); len(ps) != 0 {
				t.Errorf("servers left behind: %q", ps)
			}

			// The execution's timeout must leave the jail and a cold
			// interpreter, on a loaded machine, the time to print "calling".
			cfg, mark = faultConfig(t, "60s")
			r = runJSON(t, c.forever, "--lang", c.lang, "--config", cfg, "--timeout", "10s", "-")
			if r.ExitCode != jail.ExitTimeout || r.Stdout != "calling\n" {
				t.Errorf("past the execution's timeout: %+v", r)
			}
			if ps := leftBehind(t, mark); len(ps) != 0 {
				t.Errorf("servers left behind: %q", ps)
			}
		})
	}
}

// Python's side of groups and sizes: a server of another group is refused
// once one has been used, and an argument past its limit is refused, each
// a ToolError with the kind and a violation.
func TestToolsPythonGroupsAndSizes(t *testing.T) {
	requireRoot(t)
	cfg, _ := everythingConfig(t, "    group: mail\n  f:\n    command: "+mustExecutable(t)+"\n    args: [fault]\n"+
		"    env: {"+faultServerEnv+": '1'}\n    group: public\n"+
		"tools: {max_arg_size: 1KiB}\n")
	r := runJSON(t, `import crucible
tools = crucible.tools
def caught(f, *args, **kw):
    try:
        f(*args, **kw)
        return "ok"
    except crucible.ToolError as e:
        return e.kind + ": " + str(e)
crucible.result = {"mail": caught(tools.ev.echo, message="secret"), "public": caught(tools.f.echo, text="secret"),
                   "bigArg": caught(tools.ev.echo, message="x" * 2000)}
`, "--lang", "py", "--config", cfg, "-")
	var got struct{ Mail, Public, BigArg string }
	if err := json.Unmarshal(r.Result, &got); err != nil || r.ExitCode != 0 {
		t.Fatalf("%v: %+v", err, r)
	}
	if got.Mail != "ok" || !strings.HasPrefix(got.Public, `tool: tool server f is in group "public"`) || !strings.HasPrefix(got.BigArg, "limit: the arguments are") {
		t.Errorf("%+v", got)
	}
	kinds := map[string]int{}
	for _, v := range r.Violations {
		kinds[v.Kind] += v.Count
	}
	if kinds["tool"] != 1 || kinds["limit"] != 1 {
		t.Errorf("violations: %+v", r.Violations)
	}
}

func mustExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
