package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// rereads is a Reread that hands out the configurations a test sets, or
// its error.
type rereads struct {
	mu  sync.Mutex
	cfg *config.Config
	err error
}

func (r *rereads) set(cfg *config.Config, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg, r.err = cfg, err
}

func (r *rereads) reread() (*config.Config, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg, nil, r.err
}

// reloadConfig is testConfig's configuration alone.
func reloadConfig(t *testing.T, edit func(*config.Config)) *config.Config {
	t.Helper()
	cfg, tools := testConfig(t, edit)
	tools.Close()
	return cfg
}

// A reload: the next execution of a session runs under the new
// configuration, in the same workspace; the execution running as it comes
// finishes under the old one; a tool server whose settings did not change
// keeps its process, one that changed is restarted, one gone is stopped
// once the old configuration's last execution ends; a configuration that
// does not load, or that changes what only a restart can, is refused whole
// and the old one keeps serving. Each is counted and audited.
func TestReload(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	node := testenv.NeedTool(t, "node")
	script := filepath.Join(testenv.PublicDir(t), "pid.js")
	if err := os.WriteFile(script, []byte(pidServer), 0o644); err != nil {
		t.Fatal(err)
	}
	pid := func(env ...string) config.Server {
		s := config.Server{Command: node, Args: []string{script}, Env: map[string]string{}}
		for i := 0; i+1 < len(env); i += 2 {
			s.Env[env[i]] = env[i+1]
		}
		return s
	}
	before := func(c *config.Config) {
		c.Serve.Rate = 0
		c.Servers = map[string]config.Server{"keep": pid(), "change": pid(), "gone": pid()}
		denied := pid()
		denied.Tools.Deny = []string{"pid"}
		c.Servers["ruled"] = denied
	}
	after := func(c *config.Config) {
		c.Serve.Rate = 0
		c.Servers = map[string]config.Server{"keep": pid(), "change": pid("MORE", "1"), "ruled": pid(), "added": pid()}
	}
	var rr rereads
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	aw, err := audit.Open(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	s := newServerWith(t, Options{Reread: rr.reread, Audit: aw}, before)
	t.Cleanup(func() { _ = aw.Close() })
	cs := connect(t, s)

	_, first := execute(t, cs, map[string]any{"code": `fs.writeTextFile("note.txt", "kept");
		const r = await tools.ruled.pid({}).then(() => "called", (e) => "refused");
		return [await tools.keep.pid({}), await tools.change.pid({}), await tools.gone.pid({}), r]`})
	pids := strs(first)
	if first == nil || first.ExitCode != 0 || len(pids) != 4 || pids[3] != "refused" {
		t.Fatalf("before the reload: %+v", first)
	}
	keepPID, changePID, gonePID := pids[0], pids[1], pids[2]

	// An execution that runs across the reload, waiting for the test.
	waiting := make(chan *executeOut, 1)
	go func() {
		_, out := execute(t, connect(t, s), map[string]any{"workspace": first.Workspace, "code": `
			for (;;) { try { fs.readTextFile("go"); break } catch { await new Promise((r) => setTimeout(r, 20)) } }
			return await tools.gone.pid({})`})
		waiting <- out
	}()
	waitRunning(t, s)

	rr.set(reloadConfig(t, after), nil)
	restarted, stopped, err := s.Reload()
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if !slices.Equal(restarted, []string{"change", "ruled"}) || !slices.Equal(stopped, []string{"gone"}) {
		t.Errorf("restarted %v, stopped %v; want [change ruled] and [gone]", restarted, stopped)
	}
	if err := os.WriteFile(filepath.Join(s.spaces.Dir(first.Workspace), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := <-waiting; out == nil || out.ExitCode != 0 || string(out.Result) != gonePID {
		t.Errorf("the execution running across the reload: %+v, want the old configuration's server gone (%s)", out, gonePID)
	}

	_, next := execute(t, cs, map[string]any{"workspace": first.Workspace, "code": `
		const gone = await tools.call("gone", "pid", {}).then(() => "called", (e) => "refused");
		return [fs.readTextFile("note.txt"), await tools.keep.pid({}), await tools.change.pid({}), await tools.ruled.pid({}), await tools.added.pid({}), gone]`})
	got := strs(next)
	if next == nil || next.ExitCode != 0 || len(got) != 6 {
		t.Fatalf("after the reload: %+v", next)
	}
	if got[0] != "kept" || got[1] != keepPID || got[2] == changePID || got[5] != "refused" {
		t.Errorf("after the reload: %v; want the workspace kept, keep's process %s kept, change's %s replaced, gone refused", got, keepPID, changePID)
	}
	if !strings.Contains(searchTools(t, cs, "", ""), "added") {
		t.Error("search_tools does not list the server added")
	}
	for _, p := range []string{gonePID, changePID} {
		n, _ := strconv.Atoi(p)
		waitExited(t, n)
	}

	// Refused whole: a file that does not load, and a setting only a
	// restart takes. The configuration before keeps serving.
	rr.set(nil, errors.New("crucible.yaml:3: servers.added.command: want a string"))
	if _, _, err := s.Reload(); err == nil || !strings.Contains(err.Error(), "crucible.yaml:3") {
		t.Errorf("a file that does not load: %v", err)
	}
	rr.set(reloadConfig(t, func(c *config.Config) { after(c); c.Serve.MaxConcurrent = 3 }), nil)
	if _, _, err := s.Reload(); err == nil || !strings.Contains(err.Error(), "serve.max_concurrent changed: only a restart") {
		t.Errorf("a restart-only setting changed: %v", err)
	}
	if _, out := execute(t, cs, map[string]any{"code": `return await tools.added.pid({})`}); out == nil || out.ExitCode != 0 {
		t.Errorf("after refused reloads, the configuration before: %+v", out)
	}

	fams, _ := scrape(t, s.stats.handler())
	if ok, failed := value(fams, "crucible_config_reloads_total", "result", "ok"), value(fams, "crucible_config_reloads_total", "result", "error"); ok != 1 || failed != 2 {
		t.Errorf("crucible_config_reloads_total: ok %v, error %v; want 1 and 2", ok, failed)
	}
	if err := aw.Flush(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"event":"reload"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 || !strings.Contains(lines[0], `"result":"ok"`) || !strings.Contains(lines[0], `"restarted":["change","ruled"]`) ||
		!strings.Contains(lines[0], `"stopped":["gone"]`) || !strings.Contains(lines[1], `"result":"error"`) || !strings.Contains(lines[2], "serve.max_concurrent") {
		t.Errorf("the audit trail's reload lines:\n%s", strings.Join(lines, "\n"))
	}
}

// strs is an execution's result, an array, as strings (JSON numbers as
// written); nil if it is none.
func strs(out *executeOut) []string {
	var vs []json.RawMessage
	if out == nil || json.Unmarshal(out.Result, &vs) != nil {
		return nil
	}
	var ss []string
	for _, v := range vs {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		ss = append(ss, s)
	}
	return ss
}

// waitExited waits up to a minute for process pid to be gone.
func waitExited(t *testing.T, pid int) {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return
		}
	}
	t.Errorf("tool server process %d still runs", pid)
}

// A client's profile is the current configuration's at each call: a
// reload that moves a client to another profile gives its next execution,
// in the session it holds, that profile's tools alone.
func TestReloadMovesClient(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	node := testenv.NeedTool(t, "node")
	script := filepath.Join(testenv.PublicDir(t), "pid.js")
	if err := os.WriteFile(script, []byte(pidServer), 0o644); err != nil {
		t.Fatal(err)
	}
	const annTok = "ann-token-0123456789abcdef"
	profile := func(p string) func(*config.Config) {
		return func(c *config.Config) {
			c.Serve.Rate, c.Serve.Pool = 0, 0
			c.Servers = map[string]config.Server{"a": {Command: node, Args: []string{script}}, "b": {Command: node, Args: []string{script}}}
			c.Profiles = map[string]config.Profile{"pa": {Servers: []string{"a"}}, "pb": {Servers: []string{"b"}}}
			c.Clients = map[string]config.Client{"ann": {Token: config.SecretSource{From: "env:UNUSED"}, Profile: p}}
		}
	}
	var rr rereads
	s := newServerWith(t, Options{Reread: rr.reread}, profile("pa"))
	url := serveHTTPClients(t, s, map[string]string{"ann": annTok})
	cs := connectHTTP(t, url, annTok, "2025-11-25")
	code := `const has = (s) => tools.call(s, "pid", {}).then(() => "yes", () => "no");
		return [await has("a"), await has("b")]`
	if _, out := execute(t, cs, map[string]any{"code": code}); out == nil || string(out.Result) != `["yes","no"]` {
		t.Fatalf("in profile pa: %+v", out)
	}
	rr.set(reloadConfig(t, profile("pb")), nil)
	if _, _, err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, out := execute(t, cs, map[string]any{"code": code}); out == nil || string(out.Result) != `["no","yes"]` {
		t.Errorf("moved to profile pb, the same session: %+v", out)
	}
	if text := searchTools(t, cs, "", ""); strings.Contains(text, "a:") || !strings.Contains(text, "b") {
		t.Errorf("search_tools after the move:\n%s", text)
	}
	// Attack: the client is removed while its token still lets it in (a
	// reload takes the tokens last): it gets nothing of the new
	// configuration, least of all the whole configuration's view.
	rr.set(reloadConfig(t, func(c *config.Config) { profile("pb")(c); c.Clients = nil }), nil)
	if _, _, err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	for tool, args := range map[string]map[string]any{"execute": {"code": code}, "search_tools": {"query": ""}} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err == nil && (!res.IsError || !strings.Contains(text(res), "not in the server's configuration any more")) {
			t.Errorf("%s of a client the reload removed: %q", tool, text(res))
		}
	}
}
