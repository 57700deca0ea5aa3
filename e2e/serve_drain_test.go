package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// bearerRT adds serveToken to each request.
type bearerRT struct{}

func (bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+serveToken)
	return http.DefaultTransport.RoundTrip(r)
}

// opsGet gets path of url with serveToken: its status and body.
func opsGet(t *testing.T, url, path string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Transport: bearerRT{}}).Get(url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// On SIGTERM, serve --http drains, as a pod's preStop expects: /readyz
// says so (the load balancer sends new work elsewhere), a new execution is
// refused saying so, the execution running finishes and its client gets
// its result, and then serve exits 0.
func TestServeDrain(t *testing.T) {
	requireRoot(t)
	// The running execution waits for the test to let it end, by a file in
	// a directory the jail sees read-only: it must still be running when
	// the drain begins and a new execution is refused, however slow the
	// machine. (Python: the embedded engine's fs sees only /workspace and
	// /tmp.) The timeouts are far past anything the test waits for.
	release := testenv.PublicDir(t)
	cfg := filepath.Join(t.TempDir(), "crucible.yaml")
	if err := os.WriteFile(cfg, []byte("serve:\n  drain_timeout: 5m\nsandbox:\n  timeout: 5m\n  ro: ["+release+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	let := func() {
		if err := os.WriteFile(filepath.Join(release, "go"), nil, 0o644); err != nil {
			t.Error(err)
		}
	}
	p := startHTTPServe(t, crucibleCmd("serve", "--http", "127.0.0.1:0", "--config", cfg), crucibleEnv("CRUCIBLE_TOKEN="+serveToken))
	// Should the test fail first, the execution ends before serve is
	// stopped (cleanups run last first).
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(release, "go")); err != nil {
			let()
		}
	})
	connect := func() *mcp.ClientSession {
		tr := &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerRT{}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "drain"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := connect().CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{
			"language": "py", "code": "import crucible, os, time\n" +
				"while not os.path.exists(" + strconv.Quote(filepath.Join(release, "go")) + "):\n    time.sleep(0.02)\n" +
				"crucible.result = 'finished'\n"}})
		done <- answer{res, err}
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, m := opsGet(t, p.url, "/metrics"); strings.Contains(m, "crucible_executions_running 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the execution did not start within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		status, body := opsGet(t, p.url, "/readyz")
		if status == 503 && strings.Contains(body, "draining") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz while draining: %d %q", status, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err := connect().CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": `return 1`}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "draining") {
		t.Errorf("a new execution while draining: %v %+v", err, res)
	}
	select {
	case a := <-done:
		t.Fatalf("the running execution ended before it was let: %v %+v", a.err, a.res)
	default:
	}
	let()
	a := <-done
	if a.err != nil || a.res.IsError {
		t.Fatalf("the running execution: %v %+v", a.err, a.res)
	}
	b, _ := json.Marshal(a.res.StructuredContent)
	if !strings.Contains(string(b), `"result":"finished"`) {
		t.Errorf("the running execution's result: %s", b)
	}
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Fatal("serve did not exit after draining")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(p.log(), "crucible serve: draining") {
		t.Errorf("exit %d\n%s", code, p.log())
	}
}
