package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/lang/deno"
	"github.com/cruciblehq/crucible/sandbox"
)

// nobody is the unprivileged user the rootless tests run crucible as.
const nobody = 65534

// publicCrucible returns the crucible command where an unprivileged user
// can run it: a copy of this test binary, which is crucible when
// CRUCIBLE_TEST_CLI=1 is in its environment (see TestMain), so that no test
// compiles the command again (from a fresh clone, that build alone took
// minutes beside the tests).
func publicCrucible(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(testenv.PublicDir(t), "crucible")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// cliEnv is what a copy of this test binary needs in its environment to
// be crucible.
const cliEnv = "CRUCIBLE_TEST_CLI=1"

// runAs runs the crucible binary as uid/gid with an empty environment.
func runAs(t *testing.T, bin string, uid uint32, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", cliEnv, quickExit}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// The rootless tests' users: one without a range of subordinate ids, one
// with.
const (
	loneUID  = 54320
	rangeUID = 54321
)

// Rootless, without a range in /etc/subuid: crucible is root of a user
// namespace of its own that maps the user's id alone. The jail is the same
// (the command is uid 1000 with no capabilities, seccomp and Landlock on),
// without a delegated cgroup it refuses to run unless told it may, and the
// network and the README's first command work.
func TestRootless(t *testing.T) {
	bin := publicCrucible(t)
	u := newTestUser(t, loneUID, false)

	code, _, errs := u.run(t, bin, nil, nil, "exec", "--", "true")
	if code != 125 || !strings.Contains(errs, "cgroup") || !strings.Contains(errs, "--allow-degraded cgroup") {
		t.Fatalf("without a cgroup: exit %d, stderr %q; want 125 naming the cgroup layer and the fix", code, errs)
	}
	// With --json, the refusal is one object on stdout, as docs/exec.md gives
	// it: {"error": {name, message, layer, fix}}.
	code, out, _ := u.run(t, bin, nil, nil, "exec", "--json", "--", "true")
	var refused struct {
		Error struct{ Name, Message, Layer, Fix string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &refused); err != nil || code != 125 || refused.Error.Name != "SetupError" ||
		refused.Error.Layer != "cgroup" || !strings.Contains(refused.Error.Fix, "--allow-degraded cgroup") {
		t.Errorf("without a cgroup, --json: exit %d, %q", code, out)
	}

	code, out, errs = u.run(t, bin, nil, nil, "exec", "--json", "--allow-degraded", "cgroup", "--",
		"sh", "-c", `id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; cat /proc/self/uid_map; echo "slack $(cat /proc/self/timerslack_ns)"; touch /workspace/ok && echo wrote; touch /usr/x 2>/dev/null || echo ro`)
	var r sandbox.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	// The command keeps the caller's timer slack, not the jail's own
	// processes' (the exec stage sets it back).
	slack, err := os.ReadFile("/proc/self/timerslack_ns")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1000\n", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "wrote", "ro", "slack " + string(slack)} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("missing %q in %q (stderr %q)", want, r.Stdout, r.Stderr)
		}
	}
	if len(r.Degraded) != 1 || r.Degraded[0] != "cgroup" {
		t.Errorf("degraded = %q, want [cgroup]", r.Degraded)
	}

	// A denied syscall is still refused and recorded.
	code, out, _ = u.run(t, bin, nil, nil, "exec", "--json", "--allow-degraded", "cgroup", "--",
		"python3", "-c", "import ctypes; print(ctypes.CDLL(None, use_errno=True).unshare(0x10000000))")
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Stdout != "-1\n" || !violated(&r, "unshare") {
		t.Errorf("unshare(CLONE_NEWUSER) as the user: exit %d, %+v", code, r)
	}

	// The command and the jail's init are the same host uid, so only
	// Landlock's signal scope (ABI 6) keeps the command from signalling
	// init; were it missing, init would die of the SIGTERM and the marker
	// would never print.
	_, out, _ = u.run(t, bin, nil, nil, "exec", "--json", "--allow-degraded", "cgroup", "--",
		"sh", "-c", `kill -TERM 1 2>&1; sleep 0.2; echo alive`)
	if err := json.Unmarshal([]byte(out), &r); err != nil || !strings.Contains(r.Stdout, "Operation not permitted") || !strings.Contains(r.Stdout, "alive") {
		t.Errorf("kill -TERM 1 from the command: %+v", r)
	}

	// The README's first command, as the user.
	code, out, errs = u.run(t, bin, strings.NewReader(`console.log("hi"); return 6 * 7`), nil, "run", "--json", "--allow-degraded", "cgroup", "-")
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Stdout != "hi\n" || string(r.Result) != "42" {
		t.Errorf("the README's command: exit %d, %v\n%s\n%s", code, err, out, errs)
	}

	rootlessDenoTools(t, u, bin, "--allow-degraded", "cgroup")

	// The network: with the host's /dev/net/tun as it is (0600 on some
	// machines of this kind), it works, or is refused with the fix.
	f := newNetFix(t)
	cfg := publicConfig(t, f.policy(""))
	curl := fmt.Sprintf("curl -sS http://%s:%d/rootless; getent hosts denied.crucible.test || echo denied", svcName, f.http)
	net := func(u *testUser) (int, sandbox.Result, string) {
		code, out, errs := u.run(t, bin, nil, nil, "exec", "--json", "--allow-degraded", "cgroup", "--config", cfg, "--", "sh", "-c", curl)
		var r sandbox.Result
		_ = json.Unmarshal([]byte(out), &r)
		return code, r, out + errs
	}
	code, r, all := net(u)
	if fi, err := os.Stat("/dev/net/tun"); err == nil && fi.Mode().Perm()&0o006 != 0o006 {
		if code != 125 || !strings.Contains(all, "chmod 0666 /dev/net/tun") {
			t.Errorf("with /dev/net/tun %04o: exit %d, want 125 and the fix\n%s", fi.Mode().Perm(), code, all)
		}
	} else {
		checkRootlessNet(t, f, code, &r, all)
	}
	u.withTun(t)
	code, r, all = net(u)
	checkRootlessNet(t, f, code, &r, all)

	// doctor works as the user, and says how it runs.
	code, out, _ = u.run(t, bin, nil, nil, "doctor")
	if code != 1 || !strings.Contains(out, "user namespace of its own that maps your id alone") || !strings.Contains(out, "--allow-degraded cgroup") {
		t.Errorf("doctor as the user: exit %d\n%s", code, out)
	}
}

// rootlessDenoTools runs, as u, a Deno program that calls a tool: its
// tools channel, two pipes (lang.Program.ToolPipes), is the jail's user's
// to open by /dev/fd/N as the result pipe is, whichever host id that is.
func rootlessDenoTools(t *testing.T, u *testUser, bin string, flags ...string) {
	t.Helper()
	t.Run("deno tools", func(t *testing.T) { // what this machine lacks skips the subtest alone
		denoBin, err := deno.Find("")
		if err != nil {
			testenv.Missing(t, "no deno: run npm install at the repository's root")
		}
		node := testenv.NeedTool(t, "node")
		// The user reaches neither the checkout (a clone may be private)
		// nor its node_modules: deno and the server go where it may.
		dir := testenv.PublicDir(t)
		pubDeno, server := filepath.Join(dir, "deno"), filepath.Join(dir, "echo.js")
		if err := os.Link(denoBin, pubDeno); err != nil {
			b, err := os.ReadFile(denoBin)
			if err != nil || os.WriteFile(pubDeno, b, 0o755) != nil {
				t.Fatalf("deno for the user: %v", err)
			}
		}
		if err := os.WriteFile(server, []byte(echoServer), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := publicConfig(t, fmt.Sprintf("runtimes:\n  deno: %s\nservers:\n  ev:\n    command: %s\n    args: [%s]\n", pubDeno, node, server))
		args := append([]string{"run", "--json", "--config", cfg, "--lang", "deno"}, flags...)
		code, out, errs := u.run(t, bin, strings.NewReader(`export default await tools.ev.echo({ message: "as a user" });`), nil, append(args, "-")...)
		var r sandbox.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || string(r.Result) != `"Echo: as a user"` || len(r.ToolCalls) != 1 {
			t.Errorf("a Deno program's tool call as the user: exit %d, %v\n%s\n%s", code, err, out, errs)
		}
	})
}

// echoServer is a stdio MCP server with one tool, echo, that needs no
// package: node runs it as it is.
const echoServer = `let buf = "";
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
process.stdin.on("data", (d) => {
  buf += d;
  for (let i; (i = buf.indexOf("\n")) >= 0; buf = buf.slice(i + 1)) {
    const m = JSON.parse(buf.slice(0, i));
    if (m.id === undefined) continue;
    if (m.method === "initialize") {
      send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "echo", version: "1" } } });
    } else if (m.method === "tools/list") {
      send({ jsonrpc: "2.0", id: m.id, result: { tools: [{ name: "echo", inputSchema: { type: "object", properties: { message: { type: "string" } } } }] } });
    } else if (m.method === "tools/call") {
      send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "Echo: " + m.params.arguments.message }] } });
    } else {
      send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
    }
  }
});
`

// checkRootlessNet checks what the network test of the rootless tests
// printed: the allowed host reached, the other name refused and recorded.
func checkRootlessNet(t *testing.T, f *netFix, code int, r *sandbox.Result, all string) {
	t.Helper()
	want := fmt.Sprintf("hello from %s:%d /rootless\ndenied\n", svcName, f.http)
	if code != 0 || r.Stdout != want || netViolation(r, "dns", "denied.crucible.test") == nil {
		t.Errorf("the network as the user: exit %d, want %q and a violation\n%s", code, want, all)
	}
}

// publicConfig writes yaml to a crucible.yaml that every user may read,
// and returns its path.
func publicConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(testenv.PublicDir(t), "crucible.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Rootless, with a range in /etc/subuid and a cgroup delegated as systemd
// would: the jail runs as host ids of the range, not the user's own, with
// its memory and pids limits enforced, and the network on.
func TestRootlessSubIDs(t *testing.T) {
	bin := publicCrucible(t)
	u := newTestUser(t, rangeUID, true)
	u.withTun(t)
	if !u.delegateCgroup(t) {
		testenv.Missing(t, "needs cgroup v2 with memory, pids and cpu, or each as cgroup v1")
	}

	// What the command writes to a host directory belongs to a host id of
	// the range.
	dir := testenv.PublicDir(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, rangeUID, rangeUID); err != nil {
		t.Fatal(err)
	}
	code, out, errs := u.run(t, bin, nil, nil, "exec", "--json", "--workspace", dir, "--", "sh", "-c", "id -u; touch /workspace/mine")
	var r sandbox.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Stdout != "1000\n" || len(r.Degraded) != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	fi, err := os.Stat(filepath.Join(dir, "mine"))
	if err != nil {
		t.Fatal(err)
	}
	owner := fi.Sys().(*syscall.Stat_t).Uid
	lo := uint32(3_000_000_000 + rangeUID%1000*100_000)
	if owner < lo || owner >= lo+65536 {
		t.Errorf("the command's file belongs to host uid %d, not one of the range %d-%d", owner, lo, lo+65535)
	}

	// The limits, enforced in the delegated cgroup.
	code, out, _ = u.run(t, bin, nil, nil, "exec", "--json", "--memory", "64MiB", "--", "python3", "-c", "a = bytearray(256 << 20); print(len(a))")
	if err := json.Unmarshal([]byte(out), &r); err != nil || !slices.Contains(r.LimitsHit, "memory") || r.Stdout != "" {
		t.Errorf("256 MiB under a 64 MiB limit: exit %d\n%s", code, out)
	}
	code, out, _ = u.run(t, bin, nil, nil, "exec", "--json", "--pids", "32", "--", "sh", "-c", "for i in $(seq 64); do sleep 5 & done; wait")
	if err := json.Unmarshal([]byte(out), &r); err != nil || !slices.Contains(r.LimitsHit, "pids") {
		t.Errorf("64 processes under a limit of 32: exit %d\n%s", code, out)
	}

	rootlessDenoTools(t, u, bin)

	f := newNetFix(t)
	cfg := publicConfig(t, f.policy(""))
	code, out, errs = u.run(t, bin, nil, nil, "exec", "--json", "--config", cfg, "--", "sh", "-c",
		fmt.Sprintf("curl -sS http://%s:%d/rootless; getent hosts denied.crucible.test || echo denied", svcName, f.http))
	_ = json.Unmarshal([]byte(out), &r)
	checkRootlessNet(t, f, code, &r, out+errs)

	code, out, _ = u.run(t, bin, nil, nil, "doctor")
	if code != 0 || !strings.Contains(out, "from /etc/subuid") {
		t.Errorf("doctor as the user: exit %d\n%s", code, out)
	}
}

// An agent that starts crucible serve as the user, as Claude Desktop does:
// the official TypeScript SDK's client over stdio. A program reaches an
// allowed host with a secret the jail never holds, and its workspace
// persists to the next call, which imports a skill the agent saved.
func TestRootlessServe(t *testing.T) {
	needCurlPython(t)
	mcpNode(t)
	bin := publicCrucible(t)
	u := newTestUser(t, rangeUID, true)
	u.withTun(t)
	degraded := ""
	if !u.delegateCgroup(t) {
		degraded = "sandbox:\n  allow_degraded: [cgroup]\n"
	}
	f := newSecretFix(t)
	pub, skills, saved := testenv.PublicDir(t), testenv.PublicDir(t), testenv.PublicDir(t)
	if err := os.Chown(saved, rangeUID, rangeUID); err != nil { // serve, as the user, writes there
		t.Fatal(err)
	}
	ca, err := os.ReadFile(f.upstreamCA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pub, "upstream-ca.pem"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := publicConfig(t, f.echoConfig(filepath.Join(pub, "upstream-ca.pem"))+
		fmt.Sprintf("serve:\n  skills: %s\n  skills_writable: true\n  saved_skills: %s\n%s", skills, saved, degraded))
	code1 := fmt.Sprintf(`import os, urllib.request
req = urllib.request.Request("https://%s:%d/rootless", headers={"Authorization": "Bearer " + os.environ["TOKEN"]})
print(urllib.request.urlopen(req, timeout=10).status)
open("/workspace/note", "w").write("kept")`, svcName, f.echo)
	code2 := "import keep\nprint(open('/workspace/note').read() + keep.SUFFIX)"

	node, _ := mcpNode(t)
	cmd := u.command(nil, bin, "serve", "--config", cfg)
	args := append([]string{"testdata/mcpclient.mjs", "--lang", "py", "--save", "keep.py", `SUFFIX = "!"`, "--code", code1, "--code2", code2, "--stdio"}, cmd.Args...)
	client := exec.Command(node, args...)
	client.Env = []string{"PATH=/usr/bin:/bin", cliEnv, quickExit, "CRUCIBLE_TEST_TOKEN=" + tokenValue}
	var stderr strings.Builder
	client.Stderr = &stderr
	out, err := client.Output()
	if err != nil {
		t.Fatalf("mcpclient: %v\n%s\n%s", err, out, stderr.String())
	}
	if strings.Contains(string(out)+stderr.String(), tokenValue) {
		t.Errorf("the secret's value reached the client:\n%s", out)
	}
	steps := map[string]clientStep{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var s clientStep
		if err := json.Unmarshal([]byte(line), &s); err != nil || s.Error != "" {
			t.Fatalf("mcpclient: %v %s\n%s", err, s.Error, stderr.String())
		}
		steps[s.Step] = s
	}
	for _, c := range []struct{ step, stdout string }{{"execute", "200\n"}, {"execute2", "kept!\n"}} {
		sc := steps[c.step].Result.StructuredContent
		if sc == nil || sc.ExitCode == nil || *sc.ExitCode != 0 || sc.Stdout != c.stdout {
			t.Errorf("%s: %+v", c.step, steps[c.step].Result)
		}
	}
	if got := f.received("/rootless"); !strings.Contains(got, "Authorization: Bearer "+tokenValue) {
		t.Errorf("the host received:\n%s", got)
	}
}

func TestDoctorAsRoot(t *testing.T) {
	requireRoot(t)
	code, out, _ := run(t, "", "doctor")
	if code != 0 || !strings.Contains(out, "jail") || strings.Contains(out, "missing") ||
		!strings.Contains(out, "built a jail with a network; its DNS answered") {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}
}

// A serve whose jails cannot be built says why on /readyz, not that its
// pool is filling: here, as a user with no cgroup of its own.
func TestRootlessServeNotReady(t *testing.T) {
	bin := publicCrucible(t)
	u := newTestUser(t, loneUID, false)
	cmd := u.command([]string{"CRUCIBLE_TOKEN=" + serveToken}, bin, "serve", "--http", "127.0.0.1:0")
	url := httpServeArgv(t, cmd.Args, cmd.Env)
	var body string
	for range 600 {
		req, _ := http.NewRequest("GET", url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+serveToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		body = string(b)
		if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, "cannot be set up") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(body, "not ready: the sandbox cannot be set up: jail: cgroup:") || !strings.Contains(body, "--allow-degraded cgroup") {
		t.Errorf("/readyz: %q, want the cgroup layer and its fix", body)
	}
}

// Attacks from a jail that a user's crucible built, with the network on:
// raw addresses and the host's loopback under every spelling stay refused
// and recorded, as for root; and, with a range, the command is not the
// user, so the user's private files bound into the jail stay closed to it.
func TestAttackRootless(t *testing.T) {
	testenv.NeedTool(t, "curl")
	bin := publicCrucible(t)
	u := newTestUser(t, rangeUID, true)
	u.withTun(t)
	if !u.delegateCgroup(t) {
		testenv.Missing(t, "needs cgroup v2 with memory, pids and cpu, or each as cgroup v1")
	}
	f := newNetFix(t)
	cfg := publicConfig(t, f.policy(""))
	private := testenv.PublicDir(t)
	if err := os.WriteFile(filepath.Join(private, "secret"), []byte("the user's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{private, filepath.Join(private, "secret")} {
		if err := os.Chown(p, rangeUID, rangeUID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, h := range []string{"2130706433", "0x7f.1", "[::ffff:127.0.0.1]", "0.0.0.0", "localhost"} {
		urls = append(urls, fmt.Sprintf("http://%s:%d/", h, f.http))
	}
	script := `python3 -c 'import socket
for host in ("1.1.1.1", "2606:4700:4700::1111"):
    try:
        socket.create_connection((host, 443), timeout=5); print(host, "connected")
    except OSError as e:
        print(host, e.strerror)'
for u in "$@"; do curl -sS --max-time 5 "$u" >/dev/null 2>&1; echo "$u $?"; done
cat ` + private + `/secret 2>&1 || true
echo procs $(ls /proc | grep -c '^[0-9]')`
	code, out, errs := u.run(t, bin, nil, nil, append([]string{"exec", "--json", "--config", cfg, "--ro", private, "--", "sh", "-c", script, "sh"}, urls...)...)
	var r sandbox.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	for _, host := range []string{"1.1.1.1", "2606:4700:4700::1111"} {
		if !strings.Contains(r.Stdout, host+" Connection refused") || netViolation(&r, "connect", host) == nil {
			t.Errorf("%s: not refused and recorded:\n%s", host, dump(&r))
		}
	}
	for _, u := range urls {
		if !strings.Contains(r.Stdout, u+" 7\n") {
			t.Errorf("%s: want connection refused:\n%s", u, dump(&r))
		}
	}
	if f.hits.Load() != 0 {
		t.Errorf("the host's server got %d requests", f.hits.Load())
	}
	if !strings.Contains(r.Stdout, "Permission denied") || strings.Contains(r.Stdout, "the user's own") {
		t.Errorf("the command read the user's private file:\n%s", r.Stdout)
	}
	// Init, sh, and what the last line ran: nothing of the user's.
	var procs int
	if i := strings.LastIndex(r.Stdout, "procs "); i < 0 {
		t.Errorf("no process count:\n%s", r.Stdout)
	} else if _, err := fmt.Sscanf(r.Stdout[i:], "procs %d", &procs); err != nil || procs < 2 || procs > 5 {
		t.Errorf("the jail sees %d processes (%v), want its own few:\n%s", procs, err, r.Stdout)
	}
}
