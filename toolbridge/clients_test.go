package toolbridge

import (
	"context"
	"testing"
	"time"
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
	for in, want := range map[string]string{"token:0123abcd": "token-0123abcd", "stdio": "stdio", "": "local", "..": "local", "a/../b": "a-..-b", "é": "--"} {
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
