package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// roundRobin sends each request to the next of urls, as a Service without
// session affinity may, with serveToken.
type roundRobin struct {
	hosts []string
	next  atomic.Int64
}

func (b *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host = b.hosts[int(b.next.Add(1))%len(b.hosts)]
	r.Host = ""
	r.Header.Set("Authorization", "Bearer "+serveToken)
	return http.DefaultTransport.RoundTrip(r)
}

// Three replicas of serve, each in a container of the offline image under
// the pod profile, named as a headless Service's DNS would name them (here
// 127.0.0.1 to .3, one port, the host's network): a session and a handle
// made on one work through the others; a forged handle is refused; a
// replica killed mid-execution leaves its client a clear error within
// seconds; a replica told to stop (docker stop: SIGTERM) finishes what it
// runs, refuses new work meanwhile, and exits.
func TestContainerReplicas(t *testing.T) {
	requireRoot(t)
	// Mostly waits: see parallel, in main_test.go. Its daemon is its own;
	// the other tests that start one are not parallel.
	t.Parallel()
	d := startDockerd(t)
	image := d.image(t, publicCrucible(t))
	pub := testenv.PublicDir(t)
	tun := tunNode(t, pub)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if err := os.WriteFile(filepath.Join(pub, "key"), []byte(hex.EncodeToString(key)), 0o644); err != nil {
		t.Fatal(err)
	}
	port := commonPort(t, "127.0.0.1", "127.0.0.2", "127.0.0.3")
	var hosts []string
	for i := range 3 {
		ip := fmt.Sprintf("127.0.0.%d", i+1)
		hosts = append(hosts, ip+":"+port)
		cfg := filepath.Join(pub, ip+".yaml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`serve:
  rate: 0
  drain_timeout: 60s
  replicas:
    name: %s
    peer: http://{name}:%s
    key: {from: file:%s}
sandbox:
  allow_degraded: [cgroup]
`, ip, port, filepath.Join(pub, "key"))), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"run", "-d", "--name", fmt.Sprintf("crucible-%d-%d", i, os.Getpid()), "--network", "host",
			"-e", cliEnv, "-e", "CRUCIBLE_TOKEN=" + serveToken, "-v", pub + ":" + pub + ":ro"}, podProfile(t, tun)...)
		if out, err := d.run(append(args, image, "crucible", "serve", "--config", cfg, "--http", hosts[i])...); err != nil {
			t.Fatalf("docker run: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		for i := range 3 {
			name := fmt.Sprintf("crucible-%d-%d", i, os.Getpid())
			if t.Failed() {
				cmd := exec.Command(d.cli, "logs", name)
				cmd.Env = d.env
				out, _ := cmd.CombinedOutput()
				t.Logf("%s's log:\n%s", name, out)
			}
			_, _ = d.run("rm", "-f", name)
		}
	})
	for _, h := range hosts {
		waitReady(t, d, "http://"+h)
	}

	connect := func(rt http.RoundTripper, version string) *mcp.ClientSession {
		tr := &mcp.StreamableClientTransport{Endpoint: "http://" + hosts[0] + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: rt}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "replicas"}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, args map[string]any) (string, string) {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: args})
		if err != nil {
			return "", "error: " + err.Error()
		}
		sc, _ := r.StructuredContent.(map[string]any)
		ws, _ := sc["workspace"].(string)
		if r.IsError {
			return ws, "tool error: " + textOf(r)
		}
		return ws, ""
	}

	// A session, every request on the next replica: one workspace.
	lb := &roundRobin{hosts: hosts}
	cs := connect(lb, "2025-11-25")
	first, failed := call(cs, map[string]any{"code": "return 1"})
	for i := 0; i < 4 && failed == ""; i++ {
		var ws string
		if ws, failed = call(cs, map[string]any{"code": "return 1"}); ws != first {
			t.Errorf("the session's workspace changed: %s, then %s", first, ws)
		}
	}
	if failed != "" {
		t.Fatalf("the session through the balancer: %s", failed)
	}
	// Stateless: a handle made on one replica works through each.
	sl := connect(lb, "")
	handle, failed := call(sl, map[string]any{"code": "return 1"})
	for i := 0; i < 3 && failed == ""; i++ {
		_, failed = call(sl, map[string]any{"code": "return 1", "workspace": handle})
	}
	if failed != "" || !strings.HasPrefix(handle, "ws_127.0.0.") {
		t.Fatalf("the handle %q through the balancer: %s", handle, failed)
	}
	if _, got := call(sl, map[string]any{"code": "return 1", "workspace": handle[:len(handle)-1] + "x"}); !strings.Contains(got, "unknown or expired workspace handle") {
		t.Errorf("a forged handle: %q", got)
	}

	// Replica 1 (127.0.0.1) killed while it runs a call that came
	// through replica 2.
	own := connect(&roundRobin{hosts: hosts[:1]}, "")
	owned, _ := call(own, map[string]any{"code": "return 1"})
	via := connect(&roundRobin{hosts: hosts[1:2]}, "")
	answered := make(chan string, 1)
	start := time.Now()
	go func() {
		_, got := call(via, map[string]any{"workspace": owned, "code": "await new Promise((r) => setTimeout(r, 60000)); return 1"})
		answered <- got
	}()
	waitFor(t, "http://"+hosts[0], "/metrics", "crucible_executions_running 1")
	if out, err := d.run("kill", fmt.Sprintf("crucible-0-%d", os.Getpid())); err != nil {
		t.Fatalf("docker kill: %v\n%s", err, out)
	}
	select {
	case got := <-answered:
		if !strings.Contains(got, "this workspace was on a replica of crucible serve that has ended") {
			t.Errorf("the client of the killed replica got %q", got)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("no answer within 45s of the owner's end")
	}
	t.Logf("the answer came %v after the call began", time.Since(start).Round(time.Millisecond))

	// Replica 3 told to stop while it runs a call: it finishes, new work
	// is refused meanwhile, and the replica exits. The call lasts 20 s
	// (under the sandbox's 30): long past the docker commands and the
	// calls that must come while it runs, however slow the machine.
	third := connect(&roundRobin{hosts: hosts[2:]}, "")
	go func() {
		_, got := call(third, map[string]any{"code": "await new Promise((r) => setTimeout(r, 20000)); return 1"})
		answered <- got
	}()
	waitFor(t, "http://"+hosts[2], "/metrics", "crucible_executions_running 1")
	stopped := make(chan error, 1)
	go func() {
		_, err := d.run("stop", "-t", "60", fmt.Sprintf("crucible-2-%d", os.Getpid()))
		stopped <- err
	}()
	waitFor(t, "http://"+hosts[2], "/readyz", "draining")
	if _, got := call(third, map[string]any{"code": "return 1"}); !strings.Contains(got, "draining") {
		t.Errorf("a new call to the draining replica: %q", got)
	}
	if got := <-answered; got != "" {
		t.Errorf("the call running as the replica stopped: %q", got)
	}
	if err := <-stopped; err != nil {
		t.Errorf("docker stop: %v", err)
	}
	if out, _ := d.run("inspect", "-f", "{{.State.ExitCode}}", fmt.Sprintf("crucible-2-%d", os.Getpid())); strings.TrimSpace(out) != "0" {
		t.Errorf("the stopped replica exited %q", out)
	}
}

// commonPort is a port free on every address of ips.
func commonPort(t *testing.T, ips ...string) string {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", ips[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(l.Addr().String())
		ok := true
		for _, ip := range ips[1:] {
			l2, err := net.Listen("tcp", ip+":"+port)
			if err != nil {
				ok = false
				break
			}
			l2.Close()
		}
		l.Close()
		if ok {
			return port
		}
	}
	t.Fatal("no port free on every address")
	return ""
}

// waitReady waits, 60s at most, for base's /readyz to answer 200.
func waitReady(t *testing.T, d *dockerd, base string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if code, _, _ := opsGetErr(base, "/readyz"); code == http.StatusOK {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _ := d.run("ps", "-a")
	t.Fatalf("%s did not become ready within 60s:\n%s", base, out)
}

// opsGetErr gets path of base with serveToken: its status and body, or
// an error.
func opsGetErr(base, path string) (int, string, error) {
	resp, err := (&http.Client{Transport: bearerRT{}, Timeout: 5 * time.Second}).Get(base + path)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// waitFor waits, 60s at most, until path of base says want.
func waitFor(t *testing.T, base, path, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, body, err := opsGetErr(base, path); err == nil && strings.Contains(body, want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s%s never said %q", base, path, want)
}

// textOf is the text of a tool's result.
func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
