package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/mcpserver/auth"
)

// serveLoopback serves h with lim on a loopback port until the test ends,
// and returns its address.
func serveLoopback(t *testing.T, h http.Handler, lim httpLimits) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shutdown := serveBounded(l, h, lim)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return l.Addr().String()
}

// rawConn is a client connection written and read by hand, closed when
// the test ends.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{Conn: c, br: bufio.NewReader(c)}
}

// response reads one response within wait; nil if none came.
func (c *rawConn) response(t *testing.T, wait time.Duration) *http.Response {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(c.br, nil)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("reading a response's body: %v", err)
	}
	_ = resp.Body.Close()
	return resp
}

// closedWithin reports whether the server closes c within wait, reading
// and dropping whatever it sends first.
func (c *rawConn) closedWithin(wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, c.br)
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

const getHealth = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
})

// Attack: a peer opens a connection, sends one request and then nothing,
// to hold one of the server's file descriptors for good.
func TestHTTPIdleConnectionClosed(t *testing.T) {
	addr := serveLoopback(t, okHandler, httpLimits{conns: 8, header: time.Second, read: time.Second, idle: time.Second})
	c := dialRaw(t, addr)
	if _, err := io.WriteString(c, getHealth); err != nil {
		t.Fatal(err)
	}
	if resp := c.response(t, 30*time.Second); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz: %v", resp)
	}
	if !c.closedWithin(30 * time.Second) {
		t.Error("the server held an idle connection for 30s; its idle timeout is 1s")
	}
}

// Attack: a peer sends a request's head and part of its body, then
// stalls, to hold the connection (and the handler reading it) for good.
func TestHTTPStalledBodyCut(t *testing.T) {
	addr := serveLoopback(t, okHandler, httpLimits{conns: 8, header: time.Second, read: time.Second, idle: time.Second})
	c := dialRaw(t, addr)
	if _, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":"); err != nil {
		t.Fatal(err)
	}
	if !c.closedWithin(30 * time.Second) {
		t.Error("the server waited 30s for a stalled body; its read timeout is 1s")
	}
}

// Attack: a peer opens connections until the server runs out of file
// descriptors (and jails cannot be made). Past the cap, a connection waits
// in the listen backlog, unserved, until another closes.
func TestHTTPConnectionCap(t *testing.T) {
	addr := serveLoopback(t, okHandler, httpLimits{conns: 2, header: time.Minute, read: time.Minute, idle: time.Minute})
	var held []*rawConn
	for range 2 {
		c := dialRaw(t, addr)
		if _, err := io.WriteString(c, getHealth); err != nil {
			t.Fatal(err)
		}
		if resp := c.response(t, 30*time.Second); resp == nil || resp.StatusCode != 200 {
			t.Fatalf("GET /healthz: %v", resp)
		}
		held = append(held, c)
	}
	extra := dialRaw(t, addr)
	if _, err := io.WriteString(extra, getHealth); err != nil {
		t.Fatal(err)
	}
	// Served at once if there were no cap; a slow machine only makes
	// this wait pass more easily.
	if resp := extra.response(t, 2*time.Second); resp != nil {
		t.Fatalf("a connection past the cap of 2 was served: %s", resp.Status)
	}
	_ = held[0].Close()
	if resp := extra.response(t, 30*time.Second); resp == nil || resp.StatusCode != 200 {
		t.Errorf("the waiting connection was not served once another closed: %v", resp)
	}
}

// The read timeout bounds a request's head and body, not its answer: an
// execution (a stateless request, or a session's) that runs past it is not
// cancelled, as net/http does to a request whose read deadline passes.
func TestHTTPLongCallOutlivesReadTimeout(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	s := newServer(t, func(c *config.Config) { c.Serve.Pool = 0 })
	addr := serveLoopback(t, s.Handler(auth.New([]string{tokenA}, nil)), httpLimits{conns: 16, header: time.Second, read: time.Second, idle: time.Minute})
	for _, version := range []string{"2025-11-25", ""} {
		cs := connectHTTP(t, "http://"+addr, tokenA, version)
		res, out := execute(t, cs, map[string]any{"code": `await new Promise(r => setTimeout(r, 3000)); return "late"`})
		if res.IsError || out == nil || string(out.Result) != `"late"` {
			t.Errorf("version %q: an execution of 3s, read timeout 1s: %s", version, text(res))
		}
	}
}

// Every 401 of /mcp says how to authenticate (RFC 6750 §3), and says that
// a token presented is wrong (error="invalid_token"), not one that is
// missing (§3.1).
func TestHTTPChallenge(t *testing.T) {
	s := newServer(t, func(c *config.Config) { c.Serve.Pool = 0 })
	url := serveHTTP(t, s)
	for _, tt := range []struct {
		name, method, auth string
		status             int
		challenge          string
	}{
		{"no token", "POST", "", 401, `Bearer realm="crucible"`},
		{"not bearer", "POST", "Basic " + tokenA, 401, `Bearer realm="crucible"`},
		{"bearer without a token", "POST", "Bearer", 401, `Bearer realm="crucible"`},
		{"wrong token", "POST", "Bearer " + tokenA + "x", 401, `Bearer realm="crucible", error="invalid_token"`},
		{"wrong token, lower case", "GET", "bearer " + strings.Repeat("z", len(tokenA)), 401, `Bearer realm="crucible", error="invalid_token"`},
		{"right token", "POST", "Bearer " + tokenA, 200, ""},
	} {
		req, _ := http.NewRequest(tt.method, url+"/mcp", strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if got := resp.Header.Values("WWW-Authenticate"); resp.StatusCode != tt.status || strings.Join(got, "|") != tt.challenge {
			t.Errorf("%s: %d, WWW-Authenticate %q; want %d, %q", tt.name, resp.StatusCode, got, tt.status, tt.challenge)
		}
	}
}
