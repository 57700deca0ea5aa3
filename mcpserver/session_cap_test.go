package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// sessionCapServer serves a Server whose clients hold at most most
// sessions each, logging to log.
func sessionCapServer(t *testing.T, most int, log *testenv.Buffer) (*Server, string) {
	t.Helper()
	s := newServerWith(t, Options{Logger: slog.New(slog.NewTextHandler(log, nil))}, func(c *config.Config) {
		c.Serve.Pool = 0
		c.Serve.Rate = 0
		c.Serve.MaxSessionsPerClient = most
	})
	return s, serveHTTP(t, s)
}

// pingStatus is the status of a ping in the HTTP session id, with token.
func pingStatus(t *testing.T, url, token, id string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// openSessions opens n sessions with token, none of which the test ends:
// a client that exits, or crashes, without DELETE leaves them so.
func openSessions(t *testing.T, url, token string, n int) []*mcp.ClientSession {
	t.Helper()
	var held []*mcp.ClientSession
	for i := range n {
		cs, err := connectHTTPErr(url, token, "2025-11-25")
		if err != nil {
			t.Fatalf("session %d of %d: %v", i, n, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		held = append(held, cs)
	}
	return held
}

// Attack (on oneself, by leaving): a client whose earlier runs left their
// sessions behind is not locked out. Past serve.max_sessions_per_client,
// an initialize ends the client's least recently used idle session (an
// open GET stream does not hold it), which gets 404; the others go on.
func TestSessionCapEndsLeastRecentlyUsed(t *testing.T) {
	var log testenv.Buffer
	s, url := sessionCapServer(t, 3, &log)
	held := openSessions(t, url, tokenA, 3)
	// Used in the order 1, 2, 0: 1 is the least recently used.
	if err := held[0].Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	cs, err := connectHTTPErr(url, tokenA, "2025-11-25")
	if err != nil {
		t.Fatalf("an initialize past the cap, every session idle: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := pingStatus(t, url, tokenA, held[1].ID()); got != http.StatusNotFound {
		t.Errorf("the least recently used session: %d, want 404", got)
	}
	for i, c := range []*mcp.ClientSession{held[0], held[2], cs} {
		if err := c.Ping(context.Background(), nil); err != nil {
			t.Errorf("session %d, not the least recently used: %v", i, err)
		}
	}
	if n := countSessions(s); n != 3 {
		t.Errorf("the server holds %d sessions of the client, want 3", n)
	}
	if l := log.String(); !strings.Contains(l, "ended a client's least recently used idle session") || !strings.Contains(l, held[1].ID()) {
		t.Errorf("the session ended is not in the log:\n%s", l)
	}
}

// A client whose sessions all have a request in flight is refused a new
// one (429), saying so; once one is answered, that one is ended for the
// new one, and the busy one is not.
func TestSessionCapAllBusy(t *testing.T) {
	var log testenv.Buffer
	s, url := sessionCapServer(t, 2, &log)
	held := openSessions(t, url, tokenA, 2)
	release := []func() int{holdPOST(t, s, url, tokenA, held[0].ID()), holdPOST(t, s, url, tokenA, held[1].ID())}
	resp, body := initializeResponse(t, url, tokenA)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "this client holds 2 sessions, the most it may (serve.max_sessions_per_client), and each has a request in flight") {
		t.Errorf("an initialize past the cap, every session busy: %d %s", resp.StatusCode, body)
	}
	if got := release[0](); got != http.StatusOK {
		t.Fatalf("the held request of session 0: %d", got)
	}
	waitInFlight(t, s, tokenA, 1)
	if resp, body := initializeResponse(t, url, tokenA); resp.StatusCode != http.StatusOK {
		t.Errorf("an initialize past the cap, session 0 idle: %d %s", resp.StatusCode, body)
	}
	if got := pingStatus(t, url, tokenA, held[0].ID()); got != http.StatusNotFound {
		t.Errorf("the idle session: %d, want 404", got)
	}
	if got := release[1](); got != http.StatusOK {
		t.Errorf("the busy session's request: %d", got)
	}
	if err := held[1].Ping(context.Background(), nil); err != nil {
		t.Errorf("the busy session after the initialize: %v", err)
	}
}

// holdPOST sends a ping in the HTTP session id, with token, all but the
// end of its body: the request is in flight (as a long tool call's is)
// until release sends the rest and returns the status.
func holdPOST(t *testing.T, s *Server, url, token, id string) (release func() int) {
	t.Helper()
	addr := strings.TrimPrefix(url, "http://")
	before := inFlight(s, token)
	body := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	c := dialRaw(t, addr)
	if _, err := fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n"+
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", addr, token, id, len(body), body[:10]); err != nil {
		t.Fatal(err)
	}
	waitInFlight(t, s, token, before+1)
	return func() int {
		if _, err := io.WriteString(c, body[10:]); err != nil {
			t.Fatal(err)
		}
		resp := c.response(t, 30*time.Second)
		if resp == nil {
			t.Fatal("no answer to the released request in 30s")
		}
		return resp.StatusCode
	}
}

// inFlight counts the POSTs of token's sessions being served.
func inFlight(s *Server, token string) int {
	d := sha256.Sum256([]byte(token))
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	n := 0
	for _, se := range s.sessions.byClient["token:"+hex.EncodeToString(d[:8])] {
		n += se.inFlight
	}
	return n
}

// waitInFlight waits until n POSTs of token's sessions are being served.
func waitInFlight(t *testing.T, s *Server, token string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); inFlight(s, token) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, not %d, after 30s", inFlight(s, token), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countSessions counts the sessions the server's SDK holds.
func countSessions(s *Server) int {
	n := 0
	for _, srv := range s.sessionful() {
		for range srv.Sessions() {
			n++
		}
	}
	return n
}
