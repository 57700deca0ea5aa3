package toolchannel

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/violation"

	"golang.org/x/sys/unix"
)

// fakeSession answers by the tool's name; "slow" waits for release (or
// the channel's end), and Count allows limit requests.
type fakeSession struct {
	started chan struct{} // closed as the slow call begins
	release chan struct{}
	mu      sync.Mutex
	counted int
	limit   int
}

func (s *fakeSession) Call(ctx context.Context, server, tool string, args []byte) ([]byte, error) {
	switch tool {
	case "ok":
		return []byte(`{"echo":` + string(args) + `}`), nil
	case "refused":
		return nil, &Refusal{Kind: violation.Tool, Reason: "tool refused is refused"}
	case "fails":
		return nil, &Error{Kind: "tool", Message: "it broke"}
	case "slow":
		close(s.started)
		select {
		case <-s.release:
			return []byte(`"late"`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, errors.New("server " + server + " cannot be reached")
}

func (s *fakeSession) Resource(_ context.Context, _, uri string) ([]byte, error) {
	return []byte(`[{"uri":"` + uri + `"}]`), nil
}

func (s *fakeSession) List(context.Context) (any, error) {
	return []map[string]string{{"server": "s", "name": "ok"}}, nil
}

func (s *fakeSession) Count(what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counted >= s.limit {
		return &Refusal{Kind: violation.Limit, Reason: what + ": no more"}
	}
	s.counted++
	return nil
}

func (s *fakeSession) CountList() error { return nil }

type fakeAPIs struct{}

func (fakeAPIs) List() any { return []string{"tracker"} }
func (fakeAPIs) Find(_ context.Context, q string) (any, error) {
	if len(q) > 10 {
		return nil, &Refusal{Kind: violation.Limit, Reason: "the query is too long"}
	}
	return []string{"tracker:" + q}, nil
}

type auditLog struct {
	mu  sync.Mutex
	evs []audit.ToolCall
}

func (l *auditLog) Log(e audit.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e.(audit.ToolCall))
	return nil
}

// harness is a channel served for exec "x" of client "c", and what it
// recorded.
type harness struct {
	*Channel
	sess    *fakeSession
	audit   *auditLog
	refused []violation.Violation
}

func newHarness(t *testing.T, o Options) *harness {
	t.Helper()
	h := &harness{sess: &fakeSession{started: make(chan struct{}), release: make(chan struct{}), limit: 1}, audit: &auditLog{}}
	o.Session, o.APIs, o.Audit = h.sess, fakeAPIs{}, h.audit
	o.Violate = func(v violation.Violation) { h.refused = append(h.refused, v) }
	o.ArgsHash = func(args []byte) string { return "hash:" + string(args) }
	if o.MaxLine == 0 {
		o.MaxLine = 1 << 16
	}
	if o.Records == 0 {
		o.Records = 8
	}
	var err error
	if h.Channel, err = New(o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	h.Serve("x", "c")
	return h
}

// client is the Go client on the channel's other end: its socket, or its
// two pipes.
func (h *harness) client(t *testing.T) *Client {
	t.Helper()
	if out := h.PeerOut(); out != nil {
		return newClient(struct {
			io.Reader
			io.Writer
		}{h.Peer(), out})
	}
	conn, err := net.FileConn(h.Peer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return newClient(conn)
}

// Each method answers through the client, whatever order the answers come
// in: a slow call listed first still comes first in Calls, and each call's
// refusal, tool error or failure is answered with its kind, recorded as a
// violation only for the refusal, and audited.
func TestChannel(t *testing.T) {
	for _, pipes := range []bool{false, true} {
		t.Run(map[bool]string{false: "socketpair", true: "pipes"}[pipes], func(t *testing.T) { channel(t, Options{Pipes: pipes}) })
	}
}

func channel(t *testing.T, o Options) {
	h := newHarness(t, o)
	c := h.client(t)
	ctx := context.Background()

	slow := make(chan error, 1)
	go func() {
		out, err := c.Do(ctx, []byte(`{"method":"call","server":"s","tool":"slow","args":{}}`))
		if err == nil && string(out) != `"late"` {
			err = errors.New("the slow call's answer: " + string(out))
		}
		slow <- err
	}()
	<-h.sess.started // listed first, answered last
	cases := []struct {
		req, out string
		err      *Error
	}{
		{req: `{"method":"call","server":"s","tool":"ok","args":{"a":1}}`, out: `{"echo":{"a":1}}`},
		{req: `{"method":"call","server":"s","tool":"refused"}`, err: &Error{Kind: "tool", Message: "tool refused is refused"}},
		{req: `{"method":"call","server":"s","tool":"fails"}`, err: &Error{Kind: "tool", Message: "it broke"}},
		{req: `{"method":"call","server":"down","tool":"any"}`, err: &Error{Kind: "error", Message: "server down cannot be reached"}},
		{req: `{"method":"resource","server":"s","uri":"file:///a"}`, out: `[{"uri":"file:///a"}]`},
		{req: `{"method":"list"}`, out: `[{"name":"ok","server":"s"}]`},
		{req: `{"method":"apis"}`, out: `["tracker"]`},
		{req: `{"method":"apis","query":"issue"}`, out: `["tracker:issue"]`},
		{req: `{"method":"apis","query":"issue"}`, err: &Error{Kind: "limit", Message: "tools.apis: no more"}},
		{req: `{"method":"nope"}`, err: &Error{Kind: "error", Message: `unknown method "nope": the methods are call, list, resource and apis`}},
	}
	for _, tc := range cases {
		out, err := c.Do(ctx, []byte(tc.req))
		var got *Error
		if tc.err != nil {
			if !errors.As(err, &got) || *got != *tc.err {
				t.Errorf("%s: error %v, want %+v", tc.req, err, tc.err)
			}
			continue
		}
		if err != nil || string(out) != tc.out {
			t.Errorf("%s: %s, %v; want %s", tc.req, out, err, tc.out)
		}
	}
	close(h.sess.release)
	if err := <-slow; err != nil {
		t.Error(err)
	}
	h.Stop()

	wantCalls := []Call{{Server: "s", Tool: "slow", OK: true}, {Server: "s", Tool: "ok", OK: true}, {Server: "s", Tool: "refused"},
		{Server: "s", Tool: "fails"}, {Server: "down", Tool: "any"}, {Server: "s", Tool: "resource", OK: true}}
	calls := h.Calls()
	for i := range calls {
		calls[i].DurationMS = 0
	}
	if !reflect.DeepEqual(calls, wantCalls) {
		t.Errorf("calls %+v,\nwant %+v", calls, wantCalls)
	}
	wantRefused := []violation.Violation{{Kind: violation.Tool, Reason: "tool refused is refused"}, {Kind: violation.Limit, Reason: "tools.apis: no more"}}
	if !reflect.DeepEqual(h.refused, wantRefused) {
		t.Errorf("violations %+v, want %+v", h.refused, wantRefused)
	}
	uri := sha256.Sum256([]byte("file:///a")) // a resource read is audited by its URI's hash
	outcomes := map[string]audit.ToolCall{}
	for _, ev := range h.audit.evs {
		if ev.Exec != "x" || ev.Client != "c" {
			t.Errorf("audited as %q for %q", ev.Exec, ev.Client)
		}
		ev.DurationMS = 0
		outcomes[ev.Server+"."+ev.Tool] = ev
	}
	for k, want := range map[string]audit.ToolCall{
		"s.ok":      {Exec: "x", Client: "c", Server: "s", Tool: "ok", ArgsHash: `hash:{"a":1}`, Outcome: "ok"},
		"s.refused": {Exec: "x", Client: "c", Server: "s", Tool: "refused", ArgsHash: "hash:", Outcome: "refused", Reason: "tool refused is refused"},
		"s.fails":   {Exec: "x", Client: "c", Server: "s", Tool: "fails", ArgsHash: "hash:", Outcome: "error"},
		"s.":        {Exec: "x", Client: "c", Server: "s", Resource: true, ArgsHash: hex.EncodeToString(uri[:]), Outcome: "ok"},
	} {
		if got := outcomes[k]; got != want {
			t.Errorf("audit %s: %+v, want %+v", k, got, want)
		}
	}
	if len(h.audit.evs) != 6 {
		t.Errorf("%d calls audited, want 6", len(h.audit.evs))
	}
}

// Past Records, calls are answered but neither listed nor audited.
func TestChannelRecords(t *testing.T) {
	h := newHarness(t, Options{Records: 2})
	c := h.client(t)
	for range 3 {
		if _, err := c.Do(context.Background(), []byte(`{"method":"call","server":"s","tool":"ok","args":{}}`)); err != nil {
			t.Fatal(err)
		}
	}
	h.Stop()
	if len(h.Calls()) != 2 || len(h.audit.evs) != 2 {
		t.Errorf("calls %+v, audited %d", h.Calls(), len(h.audit.evs))
	}
}

// With APIs and no servers, calls, lists and resource reads are answered
// that there are no tools, and are not refusals; the APIs are still
// listed.
func TestChannelNoServers(t *testing.T) {
	h := newHarness(t, Options{NoServers: true})
	c := h.client(t)
	for _, req := range []string{`{"method":"list"}`, `{"method":"call","server":"s","tool":"ok"}`, `{"method":"resource","server":"s","uri":"u"}`} {
		_, err := c.Do(context.Background(), []byte(req))
		if e := (*Error)(nil); !errors.As(err, &e) || *e != (Error{Kind: "error", Message: noTools}) {
			t.Errorf("%s: %v", req, err)
		}
	}
	if out, err := c.Do(context.Background(), []byte(`{"method":"apis"}`)); err != nil || string(out) != `["tracker"]` {
		t.Errorf("apis: %s, %v", out, err)
	}
	h.Stop()
	if len(h.refused) != 0 {
		t.Errorf("violations %v", h.refused)
	}
}

// A search the catalog refuses is a limit: the code is told the catalog's
// reason, the violation says it was tools.apis.
func TestChannelAPIsRefused(t *testing.T) {
	h := newHarness(t, Options{})
	_, err := h.client(t).Do(context.Background(), []byte(`{"method":"apis","query":"far too long a query"}`))
	if e := (*Error)(nil); !errors.As(err, &e) || *e != (Error{Kind: "limit", Message: "the query is too long"}) {
		t.Errorf("a long query: %v", err)
	}
	h.Stop()
	if want := []violation.Violation{{Kind: violation.Limit, Reason: "tools.apis: the query is too long"}}; !reflect.DeepEqual(h.refused, want) {
		t.Errorf("violations %+v", h.refused)
	}
}

// Every answer goes through the redaction: a value the server knows
// reaches the code as its placeholder.
func TestChannelRedacts(t *testing.T) {
	h := newHarness(t, Options{})
	h.SetRedact(func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), "hunter2", "PLACEHO")) })
	out, err := h.client(t).Do(context.Background(), []byte(`{"method":"call","server":"s","tool":"ok","args":{"v":"hunter2"}}`))
	if err != nil || string(out) != `{"echo":{"v":"PLACEHO"}}` {
		t.Errorf("answer %s, %v", out, err)
	}
}

// A request line past MaxLine (the code trying to make the supervisor
// buffer without end) closes the channel, which the client reads as its
// end, and is a limit violation.
func TestChannelLineTooLong(t *testing.T) {
	for _, pipes := range []bool{false, true} {
		t.Run(map[bool]string{false: "socketpair", true: "pipes"}[pipes], func(t *testing.T) {
			lineTooLong(t, Options{MaxLine: 1 << 16, Pipes: pipes}) // (the line buffer's own 64 KiB is the least)
		})
	}
}

func lineTooLong(t *testing.T, o Options) {
	h := newHarness(t, o)
	c := h.client(t)
	_, err := c.Do(context.Background(), []byte(`{"method":"call","server":"s","tool":"ok","args":"`+strings.Repeat("a", 1<<16)+`"}`))
	if err == nil { // the channel's end, or the write's (the sockets' buffers may be small)
		t.Error("a long line was answered")
	}
	if _, err := c.Do(context.Background(), []byte(`{"method":"list"}`)); err == nil {
		t.Error("the channel still answers after a long line")
	}
	h.Stop()
	if want := []violation.Violation{{Kind: violation.Limit, Reason: "a request on the tools channel was longer than 65536 bytes; the channel was closed"}}; !reflect.DeepEqual(h.refused, want) {
		t.Errorf("violations %+v", h.refused)
	}
}

// The client refuses what is not a request, and a call in flight ends with
// its context.
func TestClient(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.client(t)
	for _, req := range []string{``, `{}`, `[1]`} {
		if _, err := c.Do(context.Background(), []byte(req)); err == nil {
			t.Errorf("%q was sent", req)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, []byte(`{"method":"call","server":"s","tool":"slow"}`))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call: %v", err)
	}
}

// Open finds the channel where EnvVar says, and nothing where it says
// nothing.
func TestOpen(t *testing.T) {
	for _, v := range []string{"", "x", "2"} {
		t.Setenv(EnvVar, v)
		if c := Open(); c != nil {
			t.Errorf("%s=%q: a client", EnvVar, v)
		}
	}
	h := newHarness(t, Options{})
	fd, err := unix.Dup(int(h.Peer().Fd())) // Open closes what it is given
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvVar, strconv.Itoa(fd))
	c := Open()
	if c == nil {
		t.Fatalf("%s=%d: no client", EnvVar, fd)
	}
	defer c.conn.(net.Conn).Close()
	if out, err := c.Do(context.Background(), []byte(`{"method":"apis"}`)); err != nil || string(out) != `["tracker"]` {
		t.Errorf("apis: %s, %v", out, err)
	}
}

// FuzzToolChannel sends the channel whatever the code may: every line gets
// one answer, a JSON object with the request's id (or null), and nothing
// panics.
func FuzzToolChannel(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"list"}`,
		`{"id":2,"method":"call","server":"x","tool":"y","args":{"a":1}}`,
		`{"id":"s","method":"resource","server":"x","uri":"u"}`,
		`{"id":3,"method":"call","args":[1]}`,
		`{"id":4,"method":"apis","query":"x"}`,
		`{"id":{},"method":7}`,
		`not json`, `{}`, `null`, `[1,2]`, "\x00\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) >= 1<<16 || strings.Contains(line, "\n") {
			return
		}
		h := newHarness(t, Options{})
		close(h.sess.release)
		code, err := net.FileConn(h.Peer())
		if err != nil {
			t.Fatal(err)
		}
		defer code.Close()
		go func() { _, _ = io.WriteString(code, line+"\n") }()
		answer, err := bufio.NewReader(code).ReadBytes('\n')
		h.Stop()
		if err != nil {
			t.Fatalf("%q: no answer: %v", line, err)
		}
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct{ Kind, Message string }
		}
		if err := json.Unmarshal(answer, &a); err != nil || a.ID == nil || (a.Result == nil) == (a.Error == nil) {
			t.Fatalf("%q: answer %q (%v)", line, answer, err)
		}
	})
}
