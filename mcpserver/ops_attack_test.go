package mcpserver

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/config"
)

// get sends GET path to url with Host host ("" for the URL's own) and the
// bearer token ("" for none), and returns the status and body.
func get(t *testing.T, url, path, host, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Attack: a stranger (no token, a wrong one) reads what the server runs
// and how busy it is; a page on a name that resolves to 127.0.0.1 (DNS
// rebinding) reaches a loopback server. Both are refused; /healthz alone
// answers anyone who gives a loopback name.
func TestAttackOpsEndpoints(t *testing.T) {
	url := serveHTTP(t, newServer(t, func(c *config.Config) { c.Serve.Pool = 0 }))
	for _, c := range []struct {
		path, host, token string
		want              int
	}{
		{"/metrics", "", "", 401},
		{"/metrics", "", "not-a-token-of-this-server", 401},
		{"/readyz", "", "", 401},
		{"/metrics", "", tokenA, 200},
		{"/readyz", "", tokenB, 200},
		{"/healthz", "", "", 200},
		{"/healthz", "localhost:1234", "", 200},
		{"/healthz", "evil.example.com", "", 403},
		{"/metrics", "evil.example.com", tokenA, 403},
		{"/mcp", "evil.example.com:80", tokenA, 403},
		{"/readyz", "127.0.0.1.evil.example.com", tokenA, 403},
	} {
		if got, body := get(t, url, c.path, c.host, c.token); got != c.want {
			t.Errorf("GET %s (Host %q, token %.8q): %d, want %d: %s", c.path, c.host, c.token, got, c.want, body)
		}
	}
	if _, body := get(t, url, "/metrics", "", ""); strings.Contains(body, "crucible_") {
		t.Errorf("a 401 holds metrics: %s", body)
	}

	// serve.ops_public opens /readyz and /metrics; serve.allowed_hosts
	// names the hosts the server is reached by, on every endpoint.
	url = serveHTTP(t, newServer(t, func(c *config.Config) {
		c.Serve.Pool = 0
		c.Serve.OpsPublic = true
		c.Serve.AllowedHosts = []string{"crucible.example.com"}
	}))
	for _, c := range []struct {
		path, host string
		want       int
	}{
		{"/metrics", "crucible.example.com", 200},
		{"/readyz", "crucible.example.com:8080", 200},
		{"/metrics", "127.0.0.1", 403},
		{"/healthz", "other.example.com", 403},
	} {
		if got, body := get(t, url, c.path, c.host, ""); got != c.want {
			t.Errorf("ops_public, allowed_hosts: GET %s (Host %q): %d, want %d: %s", c.path, c.host, got, c.want, body)
		}
	}
}

// Attack: a probe makes the server start its MCP servers (for whom, at
// whose cost?). /readyz starts nothing: it reports what the bridge knows,
// and a server whose start failed makes it unready, by name.
func TestAttackReadyzStartsNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	s := newServer(t, func(c *config.Config) {
		c.Serve.Pool = 0
		c.Servers = map[string]config.Server{"bad": {Command: "/bin/sh", Args: []string{"-c", "touch " + marker + "; exit 3"}}}
	})
	url := serveHTTP(t, s)
	if got, body := get(t, url, "/readyz", "", tokenA); got != 200 {
		t.Errorf("/readyz before any start: %d %s", got, body)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("/readyz started a server")
	}
	// A search lists the tools: the server starts, and fails.
	cs := connectHTTP(t, url, tokenA, "")
	_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "x"}})
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the search did not start the server: %v", err)
	}
	if got, body := get(t, url, "/readyz", "", tokenA); got != 503 || !strings.Contains(body, "not ready: servers failing to start: bad") {
		t.Errorf("/readyz after a failed start: %d %s", got, body)
	}
}

// Attack: a client opens session after session (each holds the server's
// memory until it times out). Past serve.max_sessions_per_client, each
// initialize ends one of its idle sessions: it never holds more; another
// client is not held back.
func TestAttackSessionFlood(t *testing.T) {
	s := newServer(t, func(c *config.Config) {
		c.Serve.Pool = 0
		c.Serve.MaxSessionsPerClient = 2
		c.Serve.Rate = 0
	})
	url := serveHTTP(t, s)
	for i := range 8 {
		if resp, body := initializeResponse(t, url, tokenA); resp.StatusCode != 200 {
			t.Fatalf("initialize %d: %d %s", i, resp.StatusCode, body)
		}
		if n := countSessions(s); n > 2 {
			t.Fatalf("after initialize %d, the client holds %d sessions; the most is 2", i, n)
		}
	}
	cs, err := connectHTTPErr(url, tokenB, "2025-11-25")
	if err != nil {
		t.Fatalf("another client: %v", err)
	}
	_ = cs.Close()
}

// An initialize is counted by the client's rate limit, as an execution is.
func TestInitializeRateLimited(t *testing.T) {
	url := serveHTTP(t, newServer(t, func(c *config.Config) {
		c.Serve.Pool = 0
		c.Serve.Rate, c.Serve.Burst = 0.001, 1
	}))
	for i, want := range []string{"", "Too Many Requests"} {
		cs, err := connectHTTPErr(url, tokenA, "2025-11-25")
		if err == nil {
			_ = cs.Close()
		}
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("initialize %d: %v, want %q", i, err, want)
		}
	}
}
