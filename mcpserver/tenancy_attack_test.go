package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Attack: tenant A stores a secret in a stateful MCP server (the real
// server-memory), and tenant B's program reads the server's whole graph.
// Each client has its own process of the server, and {client} gives each
// its own file: B finds nothing of A's; A finds its own again.
func TestAttackTenantMemory(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	node := testenv.NeedTool(t, "node")
	main, _ := filepath.Abs("../node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	if _, err := os.Stat(main); err != nil {
		testenv.Missing(t, "needs @modelcontextprotocol/server-memory (npm install at the repository's root)")
	}
	dir := t.TempDir()
	s := newServer(t, func(c *config.Config) {
		c.Servers = map[string]config.Server{"memory": {Command: node, Args: []string{main},
			Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "{client}.jsonl")}}}
	})
	url := serveHTTP(t, s)
	write := `await tools.memory.create_entities({ entities: [{ name: "launch-codes", entityType: "secret", observations: ["0000"] }] }); return "stored";`
	read := `return JSON.stringify(await tools.memory.read_graph({}));`
	if _, out := execute(t, connectHTTP(t, url, tokenA, ""), map[string]any{"code": write}); out == nil || string(out.Result) != `"stored"` {
		t.Fatalf("A's write: %+v", out)
	}
	_, out := execute(t, connectHTTP(t, url, tokenB, ""), map[string]any{"code": read})
	if out == nil || out.ExitCode != 0 || strings.Contains(string(out.Result), "launch-codes") {
		t.Errorf("B read A's memory: %+v", out)
	}
	_, out = execute(t, connectHTTP(t, url, tokenA, "2025-11-25"), map[string]any{"code": read})
	if out == nil || !strings.Contains(string(out.Result), "launch-codes") {
		t.Errorf("A lost its own memory: %+v", out)
	}
	// A's file, named by its key, holds it; no other does.
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), "token-") {
		t.Errorf("state files %q, want A's alone", files)
	}
}

// A named client is known by its name: the audit trail's execution line
// and the metrics say it, a rule's client.name sees it; an anonymous token
// is "other" in the metrics, whose labels only configured names make.
func TestNamedClients(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	const ciToken = "ci-token-0123456789abcdef"
	trail := filepath.Join(t.TempDir(), "audit.ndjson")
	aw, err := audit.Open(trail)
	if err != nil {
		t.Fatal(err)
	}
	ev := everything(t)
	ev.Rules = []config.CallRule{{Tools: []string{"echo"}, AllowIf: `client.name == "ci"`, Reason: "only ci echoes"}}
	cfg, tools := testConfig(t, func(c *config.Config) {
		c.Servers = map[string]config.Server{"ev": ev}
		c.Clients = map[string]config.Client{"ci": {Token: config.SecretSource{From: "env:UNUSED"}}}
	})
	s, err := New(Options{Config: cfg, Tools: tools, Audit: aw, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		tools.Close()
		_ = aw.Close()
	})
	url := serveHTTPClients(t, s, map[string]string{"ci": ciToken})
	code := `try { return await tools.ev.echo({ message: "x" }) } catch (e) { return "refused: " + e.message }`
	for token, want := range map[string]string{ciToken: `"Echo: x"`, tokenA: "only ci echoes"} {
		if _, out := execute(t, connectHTTP(t, url, token, ""), map[string]any{"code": code}); out == nil || !strings.Contains(string(out.Result), want) {
			t.Errorf("token %.6s: %+v, want %q", token, out, want)
		}
	}
	_, body := get(t, url, "/metrics", "", ciToken)
	for _, want := range []string{`crucible_client_executions_total{client="ci"} 1`, `crucible_client_executions_total{client="other"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(trail)
	named := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["client"] == "ci" {
			named[ev["event"].(string)] = true
		}
	}
	if !named["execution"] || !named["tool_call"] {
		t.Errorf("the audit trail's execution and tool_call lines do not name the client (%v):\n%s", named, b)
	}
}

// Attack: two clients of different profiles, each trying to reach what
// the other's profile holds. Each sees only its own servers (search_tools,
// tools.list()), APIs (tools.apis()) and secrets (its jail's environment);
// a call to the other's server is refused as a call to a server that is
// not there, naming none of the other profile's; a client without a
// profile sees the whole configuration.
func TestAttackProfiles(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	t.Setenv("CRUCIBLE_TEST_TRACKER", "tracker-secret-value-0123456789")
	const devToken, roToken = "dev-token-0123456789abcdef", "ro-token-0123456789abcdef"
	node := testenv.NeedTool(t, "node")
	memory, _ := filepath.Abs("../node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	s := newServer(t, func(c *config.Config) {
		c.Servers = map[string]config.Server{"ev": everything(t), "mem": {Command: node, Args: []string{memory},
			Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "{client}.jsonl")}}}
		c.Secrets = map[string]config.Secret{"TRACKER_TOKEN": {From: "env:CRUCIBLE_TEST_TRACKER"}}
		c.APIs = map[string]config.API{"tracker": {Description: "Issues.", Hosts: []string{"tracker.example.com"}, Secrets: []string{"TRACKER_TOKEN"}}}
		c.Profiles = map[string]config.Profile{
			"readonly": {Servers: []string{"ev"}},
			"dev":      {Servers: []string{"mem"}, APIs: []string{"tracker"}, Secrets: []string{"TRACKER_TOKEN"}},
		}
		c.Clients = map[string]config.Client{
			"ro":  {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "readonly"},
			"dev": {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "dev"},
		}
	})
	url := serveHTTPClients(t, s, map[string]string{"dev": devToken, "ro": roToken})
	probe := `const servers = [...new Set((await tools.list()).map((t) => t.server))].sort();
const apis = (await tools.apis()).map((a) => a.name);
let other;
try { await tools.call(SERVER, TOOL, {}); other = "reached"; } catch (e) { other = e.message; }
return { servers, apis, other, env: Object.keys(env).filter((k) => k.includes("TRACKER")) };`
	for _, c := range []struct {
		token, other, tool string
		servers, apis, env string
	}{
		{roToken, "mem", "read_graph", `["ev"]`, `[]`, `[]`},
		{devToken, "ev", "echo", `["mem"]`, `["tracker"]`, `["TRACKER_TOKEN"]`},
		{tokenA, "", "", `["ev","mem"]`, `["tracker"]`, `["TRACKER_TOKEN"]`},
	} {
		cs := connectHTTP(t, url, c.token, "")
		code := strings.NewReplacer("SERVER", strconv.Quote(c.other), "TOOL", strconv.Quote(c.tool)).Replace(probe)
		_, out := execute(t, cs, map[string]any{"code": code})
		if out == nil || out.ExitCode != 0 {
			t.Fatalf("token %.6s: %+v", c.token, out)
		}
		var got struct {
			Servers, APIs, Env []string
			Other              string
		}
		if err := json.Unmarshal(out.Result, &got); err != nil {
			t.Fatal(err)
		}
		j := func(v []string) string { b, _ := json.Marshal(v); return string(b) }
		if j(got.Servers) != c.servers || j(got.APIs) != c.apis || j(got.Env) != c.env {
			t.Errorf("token %.6s sees servers %v, APIs %v, secrets %v; want %s, %s, %s", c.token, got.Servers, got.APIs, got.Env, c.servers, c.apis, c.env)
		}
		if c.other != "" {
			mine := strings.Trim(c.servers, `[]"`)
			if want := fmt.Sprintf("there is no tool server %q (servers: %s)", c.other, mine); got.Other != want {
				t.Errorf("token %.6s calling %s: %q, want %q", c.token, c.other, got.Other, want)
			}
		}
		search := searchTools(t, cs, "", "")
		for _, name := range []string{"ev", "mem", "tracker"} {
			if want := strings.Contains(c.servers+c.apis, `"`+name+`"`); strings.Contains(search, name) != want {
				t.Errorf("token %.6s: search_tools shows %s: %v, want %v:\n%s", c.token, name, !want, want, search)
			}
		}
	}
}

// A profile's lower limits bound its clients' executions (their warm jails
// are the profile's), and leave other clients' alone.
func TestProfileLimits(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	const quick = "quick-token-0123456789abcdef"
	s := newServer(t, func(c *config.Config) {
		c.Profiles = map[string]config.Profile{"quick": {Limits: config.ProfileLimits{Timeout: config.Duration(time.Second)}}}
		c.Clients = map[string]config.Client{"quick": {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "quick"}}
	})
	url := serveHTTPClients(t, s, map[string]string{"quick": quick})
	code := `await new Promise((r) => setTimeout(r, 3000)); return "slept"`
	_, out := execute(t, connectHTTP(t, url, quick, ""), map[string]any{"code": code})
	if out == nil || !slices.Contains(out.LimitsHit, "timeout") {
		t.Errorf("the quick profile's program: %+v", out)
	}
	_, out = execute(t, connectHTTP(t, url, tokenA, ""), map[string]any{"code": code})
	if out == nil || string(out.Result) != `"slept"` {
		t.Errorf("another client's program: %+v", out)
	}
}

// Attack: a client of one profile imports a skill that a client of
// another saved (its code would run in the importer's jail, with the
// importer's tools and secrets). Profiles with skills directories of their
// own keep them apart: B neither sees nor imports A's skill; A does.
func TestAttackProfileSkills(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	const aTok, bTok = "alpha-token-0123456789ab", "bravo-token-0123456789ab"
	da, db := testenv.PublicDir(t), testenv.PublicDir(t)
	s := newServer(t, func(c *config.Config) {
		c.Serve.Rate = 0
		c.Profiles = map[string]config.Profile{
			"pa": {Skills: config.ProfileSkills{Dir: da, Writable: true, Saved: testenv.PublicDir(t)}},
			"pb": {Skills: config.ProfileSkills{Dir: db, Writable: true, Saved: testenv.PublicDir(t)}},
		}
		c.Clients = map[string]config.Client{
			"alpha": {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "pa"},
			"bravo": {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "pb"},
		}
	})
	url := serveHTTPClients(t, s, map[string]string{"alpha": aTok, "bravo": bTok})
	a, b := connectHTTP(t, url, aTok, "2025-11-25"), connectHTTP(t, url, bTok, "2025-11-25")
	r, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "save_skill", Arguments: map[string]any{
		"name": "secret.ts", "code": `export const secret = "alpha's";`, "description": "Alpha's."}})
	if err != nil || r.IsError {
		t.Fatalf("save_skill: %v %s", err, text(r))
	}
	code := `const m = await import("/skills/secret.ts").catch((e) => null); return m ? m.secret : "not there";`
	for cs, want := range map[*mcp.ClientSession]string{a: `"alpha's"`, b: `"not there"`} {
		_, out := execute(t, cs, map[string]any{"code": code})
		if out == nil || string(out.Result) != want {
			t.Errorf("import: %+v, want %s", out, want)
		}
	}
	res, err := b.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Resources {
		if strings.Contains(r.URI, "secret") {
			t.Errorf("B lists A's skill: %s", r.URI)
		}
	}
	if _, err := os.Stat(filepath.Join(db, "secret.ts")); err == nil {
		t.Error("A's skill was written to B's directory")
	}
}
