package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// readServer is a minimal MCP server in JavaScript, for node: its tool read
// returns the text of a file, or the error of reading it; whereami, the
// path of this script; fetch, the body
// at an http URL, or the error of getting it. It speaks the protocol
// itself, so that it needs nothing but node and this file.
const readServer = `const fs = require("fs");
// GROW: use more memory than any limit a test sets, before serving.
if (process.env.GROW) globalThis.grown = Buffer.alloc(256 << 20, 1);
function handle(m, answer) {
  if (m.method === "initialize") {
    return {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: "read", version: "1"}};
  } else if (m.method === "tools/list") {
    return {tools: [{name: "read", inputSchema: {type: "object", properties: {path: {type: "string"}}}},
      {name: "whereami", inputSchema: {type: "object"}}, {name: "fetch", inputSchema: {type: "object", properties: {url: {type: "string"}}}}]};
  } else if (m.method === "tools/call" && m.params.name === "whereami") {
    return {content: [{type: "text", text: __filename}]};
  } else if (m.method === "tools/call" && m.params.name === "fetch") {
    const text = (t) => answer({content: [{type: "text", text: t}]});
    require("http").get(m.params.arguments.url, (res) => {
      let body = "";
      res.on("data", (d) => body += d);
      res.on("end", () => text(body));
    }).on("error", (e) => text("cannot fetch: " + e.code));
    return undefined;
  } else if (m.method === "tools/call") {
    let text;
    try { text = fs.readFileSync(m.params.arguments.path, "utf8"); } catch (e) { text = "cannot read: " + e.code; }
    return {content: [{type: "text", text}]};
  }
  return null;
}
` + jsonRPCLoop

// jsonRPCLoop is the stdio loop of the tests' hand-written MCP servers: it
// calls handle(m, answer) for each request m, whose return is the result,
// null for a method it does not have, or undefined when it answers later
// through answer(result).
const jsonRPCLoop = `let buf = "";
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
process.stdin.on("data", (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    if (m.id === undefined) continue;
    const result = handle(m, (r) => send({jsonrpc: "2.0", id: m.id, result: r}));
    if (result === null) {
      send({jsonrpc: "2.0", id: m.id, error: {code: -32601, message: "no such method"}});
    } else if (result !== undefined) {
      send({jsonrpc: "2.0", id: m.id, result});
    }
  }
});
`

func jailedTools(t *testing.T, yaml string) *Tools {
	t.Helper()
	return jailedToolsAudited(t, yaml, nil)
}

// jailedToolsAudited is jailedTools whose servers' network decisions go to
// w.
func jailedToolsAudited(t *testing.T, yaml string, w *audit.Writer) *Tools {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckConfig(cfg); err != nil {
		t.Fatal(err)
	}
	tools, err := NewTools(cfg, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tools.Close)
	return tools
}

func toolCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// server-everything and server-memory, as they are, in jails: they
// answer, and the environment of each is its env and nothing else (not the
// host's, not even the jail's defaults).
func TestJailedServerEverything(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	nm, _ := filepath.Abs("../node_modules")
	node, main := testenv.NeedEverything(t, nm)
	const hostCanary = "host-canary-31c9e2"
	t.Setenv("CRUCIBLE_HOST_CANARY", hostCanary)
	tools := jailedTools(t, fmt.Sprintf(`
servers:
  ev:
    command: %s
    args: [%s]
    env: {SERVER_ONLY: server-value}
    jail: true
    ro: [%s]
    limits: {memory: 256MiB, pids: 64}
  memory:
    command: %[1]s
    args: [%[4]s]
    env: {MEMORY_FILE_PATH: /tmp/memory.jsonl}
    jail: true
    ro: [%[3]s]
`, node, main, nm, filepath.Join(nm, "@modelcontextprotocol/server-memory/dist/index.js")))
	s := tools.bridge.NewSession()
	out, err := s.Call(toolCtx(t), "ev", "echo", []byte(`{"message": "hi"}`))
	if err != nil || string(out) != `"Echo: hi"` {
		t.Fatalf("echo = %s, %v", out, err)
	}
	out, err = s.Call(toolCtx(t), "ev", "get-env", nil)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	if err := json.Unmarshal(out, &env); err != nil {
		t.Fatalf("get-env: %v: %s", err, out)
	}
	// Values of 6 bytes or more are redacted on their way to the code.
	if _, ok := env["SERVER_ONLY"]; !ok || len(env) != 1 {
		t.Errorf("the jailed server's environment is %v; want its env only", env)
	}
	if strings.Contains(string(out), hostCanary) {
		t.Errorf("the host's environment reached the server: %s", out)
	}

	// server-memory writes its file in the jail's own /tmp.
	if out, err := s.Call(toolCtx(t), "memory", "create_entities",
		[]byte(`{"entities": [{"name": "crucible", "entityType": "project", "observations": ["jailed"]}]}`)); err != nil {
		t.Fatalf("create_entities = %s, %v", out, err)
	}
	out, err = s.Call(toolCtx(t), "memory", "read_graph", nil)
	if err != nil || !strings.Contains(string(out), `"jailed"`) {
		t.Fatalf("read_graph = %s, %v", out, err)
	}
}

// hostPids returns the host's processes whose command line mentions tok.
func hostPids(tok string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), tok) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitFor polls cond for up to a minute, as the kernel tears a jail down
// asynchronously.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not the case after a minute: %s", what)
		}
	}
}

// leftCgroups lists the jail cgroups this process made that still exist.
func leftCgroups() []string {
	var found []string
	for depth := 0; depth <= 5; depth++ {
		m, _ := filepath.Glob("/sys/fs/cgroup" + strings.Repeat("/*", depth) + fmt.Sprintf("/crucible-%d-*", os.Getpid()))
		found = append(found, m...)
	}
	return found
}

// A jailed server reads what it names and nothing else of the host; killed,
// it is started again for the next call; the bridge closed, nothing of its
// jail is left.
func TestJailedServerLife(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	node := testenv.NeedTool(t, "node")
	dir := testenv.PublicDir(t)
	script := filepath.Join(dir, "read.js")
	if err := os.WriteFile(script, []byte(readServer), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("its own"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(testenv.PublicDir(t), "secret.txt")
	if err := os.WriteFile(secret, []byte("file-canary-8d02"), 0o644); err != nil {
		t.Fatal(err)
	}
	tok := fmt.Sprintf("tok-%d", os.Getpid())
	tools := jailedTools(t, fmt.Sprintf("servers:\n  rd:\n    command: %s\n    args: [%s, %s]\n    jail: true\n    ro: [%s]\n", node, script, tok, dir))
	s := tools.bridge.NewSession()
	read := func(path string) (string, error) {
		out, err := s.Call(toolCtx(t), "rd", "read", fmt.Appendf(nil, `{"path": %q}`, path))
		return string(out), err
	}
	if out, err := read(filepath.Join(dir, "mine.txt")); out != `"its own"` {
		t.Fatalf("reading its own file: %s, %v", out, err)
	}
	if out, err := read(secret); err != nil || out != `"cannot read: ENOENT"` {
		t.Errorf("reading a host file it does not name: %s, %v; want ENOENT", out, err)
	}

	// Its paths are the host's: they are redacted.
	if out, err := s.Call(toolCtx(t), "rd", "whereami", nil); err != nil || string(out) != fmt.Sprintf("%q", filepath.Base(dir)+"/read.js") {
		t.Errorf("whereami = %s, %v; want the path redacted", out, err)
	}

	// Killed: its jail ends, and the next call starts it again.
	first := hostPids(tok)
	if len(first) == 0 {
		t.Fatal("no process of the server on the host")
	}
	for _, pid := range first {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitFor(t, "the killed server is gone", func() bool { return len(hostPids(tok)) == 0 })
	var out string
	var err error
	for i := 0; i < 20; i++ {
		// A call may still meet the dying session, which it then drops.
		if out, err = read(filepath.Join(dir, "mine.txt")); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out != `"its own"` {
		t.Fatalf("after the kill: %s, %v", out, err)
	}
	if again := hostPids(tok); len(again) == 0 || slices.Equal(again, first) {
		t.Errorf("not restarted: %v, then %v", first, again)
	}

	// Closed: no process and no cgroup of its jail remain.
	tools.Close()
	if ps := hostPids(tok); len(ps) > 0 {
		t.Errorf("processes of the server remain once the bridge is closed: %v", ps)
	}
	if cg := leftCgroups(); len(cg) > 0 {
		t.Errorf("cgroups remain once the bridge is closed: %v", cg)
	}
}

// A jail that cannot be set up fails the call at once, saying so.
func TestJailedServerSetupError(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	node := testenv.NeedTool(t, "node")
	gone := testenv.PublicDir(t)
	tools := jailedTools(t, fmt.Sprintf("servers:\n  rd:\n    command: %s\n    args: [/nowhere.js]\n    jail: true\n    ro: [%s]\n", node, gone))
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	_, err := tools.bridge.NewSession().Call(toolCtx(t), "rd", "read", nil)
	if err == nil || !strings.Contains(err.Error(), "tool server rd is not available: jail: ") {
		t.Fatalf("err = %v; want the jail's setup error", err)
	}
	t.Log(err)
	if strings.Contains(err.Error(), gone) {
		t.Errorf("the error names a host path: %v", err)
	}
}

// A jailed server's jail: its command and args, its env alone, its ro
// paths and its command, its limits, no timeout.
func TestServerSpec(t *testing.T) {
	cmd := filepath.Join(testenv.PublicDir(t), "srv")
	if err := os.WriteFile(cmd, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
sandbox: {allow_degraded: [landlock]}
servers:
  a:
    command: %s
    args: [x]
    env: {K: v}
    jail: true
    ro: [/opt]
    limits: {pids: 20}
`, cmd), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := serverSpec(cfg.Servers["a"], cfg.Sandbox.AllowDegraded)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Args, []string{cmd, "x"}) || !slices.Equal(spec.Env, []string{"K=v"}) ||
		!slices.Equal(spec.ReadOnly, []string{"/opt", cmd}) || !slices.Equal(spec.AllowDegraded, []string{"landlock"}) {
		t.Errorf("spec: %+v", spec)
	}
	if spec.Timeout != 0 || spec.Pids != 20 || spec.Memory != 512<<20 || spec.CPUs != 1 {
		t.Errorf("limits: %+v", spec)
	}
	spec, err = serverSpec(config.Server{Command: "sh", Jail: true}, nil)
	if err != nil || !strings.HasPrefix(spec.Args[0], "/usr/") || len(spec.ReadOnly) != 0 {
		t.Errorf("a command under /usr: %+v, %v", spec, err)
	}
}

func TestCheckConfigJailedServer(t *testing.T) {
	for yaml, want := range map[string]string{
		"servers:\n  a:\n    command: x\n    jail: true\n    ro: [/nowhere-at-all]\n":             `c.yaml:5: servers["a"].ro[0]: stat /nowhere-at-all: no such file or directory`,
		"servers:\n  a:\n    command: x\n    jail: true\n    network:\n      allow: [\"a..b\"]\n": `c.yaml:6: servers["a"].network.allow[0]: "a..b": `,
	} {
		cfg, err := config.Parse([]byte(yaml), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckConfig(cfg); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("CheckConfig = %v; want %s...", err, want)
		}
	}
}

// A jailed server reaches what its own network section allows, and the
// host's loopback never: its 127.0.0.1 is its jail's.
func TestJailedServerNetwork(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails with a network")
	node := testenv.NeedTool(t, "node")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer hs.Close()
	port := hs.Listener.Addr().(*net.TCPAddr).Port
	dir := testenv.PublicDir(t)
	script := filepath.Join(dir, "read.js")
	if err := os.WriteFile(script, []byte(readServer), 0o644); err != nil {
		t.Fatal(err)
	}
	var trail testenv.Buffer
	w := audit.New(&trail)
	tools := jailedToolsAudited(t, fmt.Sprintf(`
servers:
  net:
    command: %[1]s
    args: [%[2]s]
    jail: true
    ro: [%[3]s]
    network:
      allow: ["svc.test:%[4]d"]
      hosts: {svc.test: 127.0.0.1}
      allow_private: [127.0.0.0/8]
  nonet:
    command: %[1]s
    args: [%[2]s]
    jail: true
    ro: [%[3]s]
`, node, script, dir, port), w)
	s := tools.bridge.NewSession()
	fetch := func(server, url string) string {
		out, err := s.Call(toolCtx(t), server, "fetch", fmt.Appendf(nil, `{"url": %q}`, url))
		if err != nil {
			t.Fatalf("%s fetch %s: %v", server, url, err)
		}
		return string(out)
	}
	svc := fmt.Sprintf("http://svc.test:%d/", port)
	if got, want := fetch("net", svc), fmt.Sprintf(`"hello from svc.test:%d"`, port); got != want {
		t.Errorf("the allowed name: %s; want %s", got, want)
	}
	loop := fmt.Sprintf("http://127.0.0.1:%d/", port)
	for _, server := range []string{"net", "nonet"} {
		if got := fetch(server, loop); got != `"cannot fetch: ECONNREFUSED"` {
			t.Errorf("%s reached the host's loopback: %s", server, got)
		}
	}
	// Its decisions are in the audit trail, under its name.
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := `"exec":"server:net","type":"connect","name":"svc.test"`; !strings.Contains(trail.String(), want) {
		t.Errorf("the audit trail lacks %s:\n%s", want, trail.String())
	}
}

// A jailed server's limits are its jail's: a node that takes 256MiB as it
// starts cannot start in 16MiB, and the call says which limit ended it.
// (node alone may fit: the page cache of its binary is charged to whichever
// cgroup read it first.)
func TestJailedServerLimits(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	node := testenv.NeedTool(t, "node")
	dir := testenv.PublicDir(t)
	script := filepath.Join(dir, "read.js")
	if err := os.WriteFile(script, []byte(readServer), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := jailedTools(t, fmt.Sprintf("servers:\n  rd:\n    command: %s\n    args: [%s]\n    jail: true\n    ro: [%s]\n    env: {GROW: \"1\"}\n    limits: {memory: 16MiB}\n", node, script, dir))
	_, err := tools.bridge.NewSession().Call(toolCtx(t), "rd", "read", nil)
	if err == nil || !strings.Contains(err.Error(), "tool server rd is not available: its jail exited with code 137, at its memory limit") {
		t.Errorf("err = %v; want the memory limit named", err)
	}
}
