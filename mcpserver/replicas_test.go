package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/mcpserver/auth"
)

var replicaKey = bytes.Repeat([]byte("r"), 32)

// replicaSet is three replicas of serve on one port of 127.0.0.1, .2 and
// .3, each named by its address: the peer URL http://{name}:PORT reaches
// each as a headless Service's names would.
type replicaSet struct {
	servers []*Server
	https   []*httptest.Server
	port    string
}

func newReplicaSet(t *testing.T) *replicaSet {
	t.Helper()
	var ls []net.Listener
	var port string
	for try := 0; try < 20 && len(ls) < 3; try++ {
		for _, l := range ls {
			l.Close()
		}
		ls = nil
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		_, port, _ = net.SplitHostPort(l.Addr().String())
		for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
			if l, err := net.Listen("tcp", ip+":"+port); err == nil {
				ls = append(ls, l)
			}
		}
	}
	if len(ls) < 3 {
		t.Fatal("no port free on 127.0.0.1 to .3")
	}
	rs := &replicaSet{port: port}
	for i, l := range ls {
		name := fmt.Sprintf("127.0.0.%d", i+1)
		s := newServerWith(t, Options{ReplicaKey: replicaKey}, func(c *config.Config) {
			c.Serve.Pool = 0
			c.Serve.Rate = 0
			c.Serve.Replicas = config.Replicas{Name: name, Peer: "http://{name}:" + port, Key: config.SecretSource{From: "env:UNUSED"}}
		})
		hs := httptest.NewUnstartedServer(s.Handler(auth.New([]string{tokenA, tokenB}, nil)))
		hs.Listener.Close()
		hs.Listener = l
		hs.Start()
		t.Cleanup(hs.Close)
		rs.servers, rs.https = append(rs.servers, s), append(rs.https, hs)
	}
	return rs
}

// url is replica i's address.
func (rs *replicaSet) url(i int) string { return fmt.Sprintf("http://127.0.0.%d:%s", i+1, rs.port) }

// balancer sends each request to the next replica in turn, as a Service
// without affinity may.
type balancer struct {
	rs   *replicaSet
	next atomic.Int64
	rt   http.RoundTripper
}

func (b *balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host = fmt.Sprintf("127.0.0.%d:%s", b.next.Add(1)%3+1, b.rs.port)
	r.Host = ""
	return b.rt.RoundTrip(r)
}

func (rs *replicaSet) connect(t *testing.T, token, version string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: rs.url(0) + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: token, rt: &balancer{rs: rs, rt: http.DefaultTransport}}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (rs *replicaSet) forwards() (n int64) {
	for _, s := range rs.servers {
		n += s.forwardsTo.total()
	}
	return n
}

// Replicas serve each other's clients: a 2025-11-25 session and a
// workspace handle made on one replica work through the others, every
// request landing on the next replica; a forged or altered id is no
// replica's and gets the answer for an unknown one.
func TestReplicas(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	rs := newReplicaSet(t)

	// A session: its workspace persists across calls that land anywhere.
	cs := rs.connect(t, tokenA, "2025-11-25")
	if !strings.HasPrefix(cs.ID(), "se_127.0.0.") {
		t.Fatalf("session id %q does not name its replica", cs.ID())
	}
	for i := range 4 {
		_, out := execute(t, cs, map[string]any{"language": "py", "code": fmt.Sprintf("f = open('/workspace/log', 'a+'); f.write('%d'); f.seek(0); print(f.read())", i)})
		if want := "0123"[:i+1] + "\n"; out == nil || out.Stdout != want {
			t.Fatalf("call %d: %+v, want %q", i, out, want)
		}
	}
	if n := rs.forwards(); n < 2 {
		t.Errorf("%d requests forwarded: the balancer did not spread them", n)
	}
	// The console names each replica forwarded to, and this one.
	for _, srv := range rs.servers {
		st := srv.consoleStatusOf()
		for _, f := range st["replicas"].([]forwardCount) {
			if f.Name == st["replica"] || !strings.HasPrefix(f.Name, "127.0.0.") || f.Forwarded == 0 {
				t.Errorf("replica %v's console lists %+v", st["replica"], f)
			}
		}
	}

	// Stateless: the handle names its replica, and is good anywhere.
	before := rs.forwards()
	sl := rs.connect(t, tokenA, "")
	_, out := execute(t, sl, map[string]any{"language": "py", "code": "open('/workspace/f', 'w').write('x')"})
	if out == nil || !strings.HasPrefix(out.Workspace, "ws_127.0.0.") {
		t.Fatalf("handle %+v", out)
	}
	handle := out.Workspace
	for range 3 {
		_, out := execute(t, sl, map[string]any{"language": "py", "workspace": handle, "code": "f = open('/workspace/f', 'a+'); f.write('x'); f.seek(0); print(f.read())"})
		if out == nil || out.ExitCode != 0 || out.Workspace != handle {
			t.Fatalf("with the handle: %+v", out)
		}
	}
	_, out = execute(t, sl, map[string]any{"language": "py", "workspace": handle, "code": "print(open('/workspace/f').read())"})
	if out == nil || out.Stdout != "xxxx\n" {
		t.Errorf("the workspace holds %+v", out)
	}
	if rs.forwards() == before {
		t.Error("no stateless call was forwarded")
	}

	// Another client may not use the handle, wherever it lands.
	other := rs.connect(t, tokenB, "")
	for range 3 {
		if r, _ := execute(t, other, map[string]any{"code": "return 1", "workspace": handle}); !r.IsError || !strings.Contains(text(r), "unknown or expired workspace handle") {
			t.Errorf("another client's use of the handle: %s", text(r))
		}
	}
	// Forged: changed in its MAC, or its replica changed.
	for _, forged := range []string{handle[:len(handle)-1] + "0", strings.Replace(handle, "127.0.0.", "127.0.0.9", 1), "ws_evil.example.00.00"} {
		if forged == handle {
			continue
		}
		if r, _ := execute(t, sl, map[string]any{"code": "return 1", "workspace": forged}); !r.IsError || !strings.Contains(text(r), "unknown or expired workspace handle") {
			t.Errorf("forged handle %q: %s", forged, text(r))
		}
	}
	// A forged session id: the answer for an unknown session, from
	// whichever replica it reached.
	for r := range 3 {
		resp, _ := post(t, rs.url(r), tokenA, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": cs.ID()[:len(cs.ID())-1] + "x"})
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("a forged session id at replica %d: %d", r, resp.StatusCode)
		}
	}
}

// A replica that ends while a forwarded execution runs there: the client
// gets a clear error within seconds, not a hang or a cut stream. Once
// with nothing sent yet; once mid-stream, after a progress notification
// (an agent that asks for progress has its answer's stream open).
func TestReplicaOwnerGone(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	for _, progress := range []bool{false, true} {
		t.Run(fmt.Sprintf("progress=%v", progress), func(t *testing.T) {
			rs := newReplicaSet(t)
			_, out := execute(t, connectHTTP(t, rs.url(0), tokenA, ""), map[string]any{"code": "return 1"})
			if out == nil || !strings.HasPrefix(out.Workspace, "ws_127.0.0.1.") {
				t.Fatalf("%+v", out)
			}
			notified := make(chan struct{}, 100)
			c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { notified <- struct{}{} },
			})
			via, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: rs.url(1) + "/mcp", MaxRetries: -1,
				HTTPClient: &http.Client{Transport: bearer{token: tokenA, rt: http.DefaultTransport}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = via.Close() }()
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				p := &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{
					"workspace": out.Workspace, "code": "await new Promise((r) => setTimeout(r, 60000)); return 1"}}
				if progress {
					p.SetProgressToken("p")
				}
				r, err := via.CallTool(context.Background(), p)
				if err != nil {
					r = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}
				}
				done <- r
			}()
			deadline := time.Now().Add(30 * time.Second)
			for rs.servers[0].gate.running() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the execution never began on its replica")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if progress {
				select {
				case <-notified:
				case <-time.After(30 * time.Second):
					t.Fatal("no progress came through the forwarding replica")
				}
			}
			// The owner ends: its connections cut, as when its pod is killed.
			rs.https[0].CloseClientConnections()
			_ = rs.https[0].Listener.Close()
			select {
			case r := <-done:
				if !r.IsError || !strings.Contains(text(r), "this workspace was on a replica of crucible serve that has ended") {
					t.Errorf("the client got %s", text(r))
				}
			case <-time.After(45 * time.Second):
				t.Fatal("no answer once the owner was gone")
			}
			// Now unreachable: the same answer at once, for the next call too.
			if r, _ := execute(t, via, map[string]any{"workspace": out.Workspace, "code": "return 1"}); !r.IsError || !strings.Contains(text(r), "has ended") {
				t.Errorf("after: %s", text(r))
			}
		})
	}
}

// A body past serve.max_body is refused where it lands, before any
// routing: it goes to no replica.
func TestReplicaBodyTooLarge(t *testing.T) {
	s := newServerWith(t, Options{ReplicaKey: replicaKey}, func(c *config.Config) {
		c.Serve.Pool = 0
		c.Serve.MaxBody = config.KiB
		c.Serve.Replicas = config.Replicas{Name: "crucible-0", Peer: "http://{name}.peers:8080", Key: config.SecretSource{From: "env:UNUSED"}}
	})
	url := serveHTTP(t, s)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute","arguments":{"code":"` + strings.Repeat("x", 2*1024) + `"}}}`
	resp, _ := post(t, url, tokenA, body, map[string]string{"MCP-Protocol-Version": statelessVersion})
	if resp.StatusCode != http.StatusRequestEntityTooLarge || s.forwardsTo.total() != 0 {
		t.Errorf("status %d, %d forwarded", resp.StatusCode, s.forwardsTo.total())
	}
}

// A request forwarded to the replica that owns its session keeps its
// trace: the execution's span, wherever the request landed first, is a
// child of the client's span in its _meta.
func TestReplicaKeepsTrace(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()); _ = tp.Shutdown(context.Background()) })
	rs := newReplicaSet(t)
	cs := rs.connect(t, tokenA, "2025-11-25")
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	before := rs.forwards()
	for range 3 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"language": "py", "code": "print(1)"},
			Meta: mcp.Meta{"traceparent": "00-" + trace + "-" + parent + "-01"}})
		if err != nil || res.IsError {
			t.Fatalf("execute: %v %v", err, res)
		}
	}
	if rs.forwards() == before {
		t.Fatal("no call was forwarded")
	}
	n := 0
	for _, s := range spans.GetSpans() {
		// Another test's spans, if one runs beside, are of other traces.
		if s.Name != "execute" || s.SpanContext.TraceID().String() != trace {
			continue
		}
		n++
		if s.Parent.SpanID().String() != parent {
			t.Errorf("an execute span's parent is %s; want the client's, %s", s.Parent.SpanID(), parent)
		}
	}
	if n != 3 {
		t.Errorf("%d execute spans; want 3", n)
	}
}
