package toolbridge

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pidOf is the process id of the instance that serves client's calls.
func pidOf(t *testing.T, b *Bridge, client string) string {
	t.Helper()
	s := b.NewSession()
	s.SetCaller(Caller{Client: client})
	return mustCall(t, s, "go", "pid", `{}`)
}

// Each client has its own process of a server; one client keeps its own;
// the listing of the tools costs no process of its own (the first client
// takes the lister); a shared server has one process for all.
func TestClientsApart(t *testing.T) {
	b := newBridge(t, Options{Servers: map[string]Server{"go": goServer(t)}})
	if _, err := b.Tools(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	lister := b.servers["go"].listing()
	a1, bb, a2 := pidOf(t, b, "alice"), pidOf(t, b, "bob"), pidOf(t, b, "alice")
	if a1 == bb || a1 != a2 {
		t.Errorf("pids: alice %s, bob %s, alice again %s; want alice's own, and the same twice", a1, bb, a2)
	}
	if b.servers["go"].of["alice"] != lister {
		t.Error("the first client did not take the lister's instance")
	}

	shared := goServer(t)
	shared.Shared = true
	b = newBridge(t, Options{Servers: map[string]Server{"go": shared}})
	if a, c := pidOf(t, b, "alice"), pidOf(t, b, "bob"); a != c {
		t.Errorf("a shared server: alice's pid %s, bob's %s", a, c)
	}
}

// At most MaxClients instances: a new client closes the least recently
// used idle one; with none idle, its call is refused as a limit, saying
// what to change.
func TestClientsBounded(t *testing.T) {
	srv := goServer(t)
	srv.MaxClients = 2
	srv.Policy.Timeout = time.Minute
	b := newBridge(t, Options{Servers: map[string]Server{"go": srv}})
	a := pidOf(t, b, "alice")
	pidOf(t, b, "bob")
	pidOf(t, b, "carol") // alice's instance was the least recently used
	if again := pidOf(t, b, "alice"); again == a {
		t.Errorf("alice kept pid %s past the bound", a)
	}
	if n := len(b.servers["go"].instances()); n != 2 {
		t.Errorf("%d instances, want 2", n)
	}

	// Both busy (a call that hangs until its context ends): a third
	// client is refused.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{}, 2)
	for _, c := range []string{"alice", "carol"} {
		s := b.NewSession()
		s.SetCaller(Caller{Client: c})
		go func() {
			started <- struct{}{}
			_, _ = s.Call(ctx, "go", "hang", []byte(`{}`))
		}()
	}
	<-started
	<-started
	deadline := time.Now().Add(time.Minute)
	for busy := 0; busy < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		e := b.servers["go"]
		e.mu.Lock()
		busy = 0
		for _, n := range e.busy {
			busy += n
		}
		e.mu.Unlock()
	}
	s := b.NewSession()
	s.SetCaller(Caller{Client: "dave"})
	_, err := s.Call(testCtx(t), "go", "pid", []byte(`{}`))
	wantRefusal(t, err, KindLimit, "tool server go is serving its most clients at once (servers.go.max_clients, 2), none of them idle")
}

// An instance idle past IdleTimeout is closed: the client's next call
// starts a new one.
func TestClientsIdle(t *testing.T) {
	srv := goServer(t)
	srv.IdleTimeout = 200 * time.Millisecond
	b := newBridge(t, Options{Servers: map[string]Server{"go": srv}})
	first := pidOf(t, b, "alice")
	deadline := time.Now().Add(time.Minute)
	for len(b.servers["go"].instances()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(b.servers["go"].instances()); n != 0 {
		t.Fatalf("%d instances left after the idle timeout", n)
	}
	if again := pidOf(t, b, "alice"); again == first {
		t.Errorf("the idle instance (pid %s) served again", first)
	}
}

// {client} in a server's settings: the client's key, safe in a path.
func TestPerClient(t *testing.T) {
	for in, want := range map[string]string{"token:0123abcd": "token-0123abcd", "stdio": "stdio", "": "local", "ci": "client-ci"} {
		if got := ClientKey(in); got != want {
			t.Errorf("ClientKey(%q) = %q, want %q", in, got, want)
		}
	}
	cfg := Server{Command: "srv", Args: []string{"--db", "/var/lib/{client}.db"}, Env: map[string]string{"F": "{client}.json", "K": "v"},
		Dir: "/srv/{client}", URL: "https://mcp.example.com/{client}", Headers: map[string]string{"X-Tenant": "{client}"}}
	if !namesClient(cfg) || namesClient(Server{Command: "srv", Env: map[string]string{"K": "v"}}) {
		t.Error("namesClient")
	}
	got := perClient(cfg, "token-01")
	if got.Args[1] != "/var/lib/token-01.db" || got.Env["F"] != "token-01.json" || got.Env["K"] != "v" || got.Dir != "/srv/token-01" ||
		got.URL != "https://mcp.example.com/token-01" || got.Headers["X-Tenant"] != "token-01" {
		t.Errorf("perClient: %+v", got)
	}
	if cfg.Args[1] != "/var/lib/{client}.db" || cfg.Env["F"] != "{client}.json" {
		t.Errorf("perClient changed its argument: %+v", cfg)
	}
}

// hashed is the key of a name that is not plain.
func hashed(name string) string { return fmt.Sprintf("id-%x", sha256.Sum256([]byte(name))) }

// Every client's key: the names that are plain behind a prefix of their
// own, the rest hashed whole, none of them a path's "." or "..", an
// option, or longer than a file's name may be. No two names share a key,
// not even a name written as another's key.
func TestClientKeys(t *testing.T) {
	long := strings.Repeat("a", 64)
	cases := map[string]string{
		"":                        "local",
		"stdio":                   "stdio",
		"catalog":                 "catalog",
		"local":                   "client-local",
		"ci":                      "client-ci",
		"Ci.v2_x-y":               "client-Ci.v2_x-y",
		long:                      "client-" + long,
		long + "a":                hashed(long + "a"),
		"token:0123456789abcdef":  "token-0123456789abcdef",
		"token-0123456789abcdef":  "client-token-0123456789abcdef",
		"token:":                  hashed("token:"),
		"token:../x":              hashed("token:../x"),
		"token:.x":                hashed("token:.x"),
		"oauth:alice@example.com": hashed("oauth:alice@example.com"),
		"oauth:alice-example.com": hashed("oauth:alice-example.com"),
		".":                       hashed("."),
		"..":                      hashed(".."),
		".hidden":                 hashed(".hidden"),
		"-rf":                     hashed("-rf"),
		"a/../b":                  hashed("a/../b"),
		"a\x00b":                  hashed("a\x00b"),
		"a\nb":                    hashed("a\nb"),
		"é":                       hashed("é"),
		"{client}":                hashed("{client}"),
	}
	names := map[string]string{} // by key
	for in, want := range cases {
		got := ClientKey(in)
		if got != want {
			t.Errorf("ClientKey(%q) = %q, want %q", in, got, want)
		}
		if len(got) > 71 || got == "." || got == ".." || got[0] == '-' || strings.IndexFunc(got, func(r rune) bool { return r > 0x7f || !keyByte(byte(r)) }) >= 0 {
			t.Errorf("ClientKey(%q) = %q: not a safe name", in, got)
		}
		// A client named as this one's key has a key of its own.
		for _, n := range []string{in, got} {
			k := ClientKey(n)
			if other, ok := names[k]; ok && other != n {
				t.Errorf("%q and %q share the key %q", other, n, k)
			}
			names[k] = n
		}
	}
}

// notes is a downstream server that keeps one note per tenant: remember
// writes it, recall reads it.
func notes() *mcp.Server {
	var mu sync.Mutex
	var note string
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "remember", Description: "Keeps the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			note = a.Text
			return text("kept"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "recall", Description: "Returns the text kept."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			return text("note: " + note), nil, nil
		})
	return s
}

// Attack: a client whose name differs from another's only in what a
// path cannot hold (the OAuth subjects alice@example.com and
// alice-example.com), or is another's key written as a name (the key of an
// anonymous token, of an OAuth subject, of run's ""), reads what the
// other left in a downstream server that keeps each tenant's state by the
// {client} in its URL and header. Each finds nothing of the other's, and
// the first finds its own again.
func TestAttackClientKeyCollision(t *testing.T) {
	var mu sync.Mutex
	tenants := map[string]*mcp.Server{}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		key := strings.TrimPrefix(r.URL.Path, "/mcp/")
		if r.Header.Get("X-Tenant") != key {
			return nil // the URL and the header disagree: no server
		}
		mu.Lock()
		defer mu.Unlock()
		if tenants[key] == nil {
			tenants[key] = notes()
		}
		return tenants[key]
	}, nil)
	hs := httptest.NewServer(h)
	defer hs.Close()
	b := newBridge(t, Options{Servers: map[string]Server{
		"notes": {URL: hs.URL + "/mcp/{client}", Headers: map[string]string{"X-Tenant": "{client}"}},
	}})
	for _, pair := range [][2]string{
		{"oauth:alice@example.com", "oauth:alice-example.com"},
		{"oauth:alice@example.com", ClientKey("oauth:alice@example.com")},
		{"token:0123456789abcdef", "token-0123456789abcdef"},
		{"", "local"},
		{"", ".."},
	} {
		victim, attacker := b.NewSession(), b.NewSession()
		victim.SetCaller(Caller{Client: pair[0]})
		attacker.SetCaller(Caller{Client: pair[1]})
		secret := "the secret of " + pair[0]
		mustCall(t, victim, "notes", "remember", fmt.Sprintf(`{"text": %q}`, secret))
		if got := mustCall(t, attacker, "notes", "recall", `{}`); strings.Contains(got, secret) {
			t.Errorf("%q read %q's note: %s", pair[1], pair[0], got)
		}
		if got := mustCall(t, victim, "notes", "recall", `{}`); !strings.Contains(got, secret) {
			t.Errorf("%q lost its own note: %s", pair[0], got)
		}
	}
}
