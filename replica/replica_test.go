package replica

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var key = bytes.Repeat([]byte("k"), MinKey)

func mustNew(t *testing.T, self, peer string, key []byte) *Replicas {
	t.Helper()
	r, err := New(self, peer, key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An id names its owner to every replica with the key; changed in any
// byte, made with another key, or of another kind, it names no one.
func TestIDs(t *testing.T) {
	r0 := mustNew(t, "crucible-0.crucible-peers", "http://{name}:8080", key)
	r1 := mustNew(t, "crucible-1", "http://{name}:8080", key)
	id := r0.ID("ws_")
	if !strings.HasPrefix(id, "ws_crucible-0.crucible-peers.") {
		t.Fatalf("id %q", id)
	}
	for _, r := range []*Replicas{r0, r1} {
		if name, ok := r.Owner("ws_", id); !ok || name != "crucible-0.crucible-peers" {
			t.Errorf("Owner = %q, %v", name, ok)
		}
	}
	for i := range id {
		for _, c := range []byte{'0', 'a', '.', 'z'} {
			if id[i] == c {
				continue
			}
			forged := id[:i] + string(c) + id[i+1:]
			if name, ok := r1.Owner("ws_", forged); ok {
				t.Errorf("%q (byte %d changed) is owned by %q", forged, i, name)
			}
		}
	}
	other := mustNew(t, "crucible-0.crucible-peers", "http://{name}:8080", bytes.Repeat([]byte("x"), MinKey))
	for _, bad := range []struct{ kind, id string }{
		{"ws_", other.ID("ws_")}, // another set's key
		{"se_", id},              // another kind
		{"ws_", "ws_0123456789abcdef0123456789abcdef"}, // a single replica's handle
		{"ws_", ""}, {"ws_", "ws_."}, {"ws_", "ws_a.b"}, {"ws_", "ws_" + strings.Repeat(".", 40)},
	} {
		if name, ok := r1.Owner(bad.kind, bad.id); ok {
			t.Errorf("Owner(%q, %q) = %q", bad.kind, bad.id, name)
		}
	}
	// A forger with the key could name any host; without it, none: a
	// name that is no DNS name is refused even with a valid MAC.
	evil := &Replicas{self: "evil.example/x?", key: key}
	if _, ok := r1.Owner("ws_", evil.ID("ws_")); ok {
		t.Error("an id naming no DNS name was taken")
	}
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		self, peer string
		key        []byte
	}{
		{"Crucible-0", "http://{name}:80", key},
		{"", "http://{name}:80", key},
		{"c0", "http://peers:80", key},
		{"c0", "ftp://{name}", key},
		{"c0", "http://{name}:80", key[:MinKey-1]},
	} {
		if _, err := New(c.self, c.peer, c.key); err == nil {
			t.Errorf("New(%q, %q, %d bytes) took it", c.self, c.peer, len(c.key))
		}
	}
}

// Forward takes the request to the owner with the client's Host and
// credentials and the hop mark, and brings the answer back as it comes.
func TestForward(t *testing.T) {
	var got *http.Request
	var body string
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		w.Header().Set("Mcp-Session-Id", "s1")
		fmt.Fprint(w, "from the owner")
	}))
	defer owner.Close()
	_, port, _ := net.SplitHostPort(owner.Listener.Addr().String())
	r := mustNew(t, "127.0.0.2", "http://{name}:"+port, key)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Forward(w, req, "127.0.0.1", Lost{Status: 404, Body: []byte(`{"lost":true}`)})
	}))
	defer front.Close()
	req, _ := http.NewRequest("POST", front.URL+"/mcp?x=1", strings.NewReader("the call"))
	req.Host = "crucible.example.com"
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(b) != "from the owner" || resp.Header.Get("Mcp-Session-Id") != "s1" {
		t.Errorf("answer %q %v", b, resp.Header)
	}
	if got == nil || got.Host != "crucible.example.com" || got.URL.Path != "/mcp" || got.URL.RawQuery != "x=1" ||
		got.Header.Get("Authorization") != "Bearer t" || got.Header.Get(Hop) != "127.0.0.2" || body != "the call" {
		t.Errorf("the owner got %+v, body %q", got, body)
	}
}

// An owner that is gone: the client gets the lost answer, within
// seconds.
func TestForwardOwnerGone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close() // nothing listens there now
	r := mustNew(t, "127.0.0.2", "http://{name}:"+port, key)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader("x"))
	start := time.Now()
	r.Forward(rec, req, "127.0.0.1", Lost{Status: 404, Body: []byte(`{"lost":true}`)})
	if rec.Code != 404 || rec.Body.String() != `{"lost":true}` || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("answer %d %q", rec.Code, rec.Body.String())
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
}

// An owner that ends mid-stream: the event stream ends with the lost
// message as its last event, not with a cut connection.
func TestForwardOwnerLostMidStream(t *testing.T) {
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: {\"progress\":1}\n\ndata: {\"cut")
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack() // the owner ends
		conn.Close()
	}))
	defer owner.Close()
	_, port, _ := net.SplitHostPort(owner.Listener.Addr().String())
	r := mustNew(t, "127.0.0.2", "http://{name}:"+port, key)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Forward(w, req, "127.0.0.1", Lost{Status: 200, Body: []byte(`{"lost":true}`)})
	}))
	defer front.Close()
	resp, err := http.Post(front.URL+"/mcp", "application/json", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	if err := sc.Err(); err != nil {
		t.Errorf("the stream broke: %v", err)
	}
	if len(events) != 3 || events[0] != `{"progress":1}` || events[2] != `{"lost":true}` {
		t.Errorf("events %q", events)
	}
}
