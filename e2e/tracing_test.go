package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/internal/otlptest"
)

// serve's traces, end to end: the standard OTEL_* environment points it at
// a receiver of the test's; an MCP client's execute and search_tools carry
// its span in _meta.traceparent. The execute span continues the client's
// trace (its parent the client's span), a tool call is its child, and the
// downstream server gets a traceparent whose trace is the client's and
// whose parent is that call's span. No span holds a secret's value, the
// program's source or a tool's arguments.
func TestServeTraces(t *testing.T) {
	requireRoot(t)
	const canary, secret = "tracing-canary-7f3e2d1c", "tracing-secret-value-0123456789"
	var mu sync.Mutex
	var downstream []string // the traceparents the downstream server got
	ms := mcp.NewServer(&mcp.Implementation{Name: "down", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(ms, &mcp.Tool{Name: "echo"}, func(_ context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		tp, _ := req.Params.Meta["traceparent"].(string)
		downstream = append(downstream, tp)
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	down := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil))
	t.Cleanup(down.Close)
	recv := otlptest.New(t)

	cfg := filepath.Join(t.TempDir(), "crucible.yaml")
	yaml := embeddedYAML + "servers:\n  down: {url: \"" + down.URL + "\"}\n" +
		"secrets:\n  TOKEN: {from: env:TRACING_SECRET, hosts: [api.example.com]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	url := httpServeArgv(t, crucibleCmd("serve", "--http", "127.0.0.1:0", "--config", cfg), crucibleEnv("CRUCIBLE_TOKEN="+serveToken,
		"TRACING_SECRET="+secret, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_SERVICE_NAME=crucible-test", "OTEL_BSP_SCHEDULE_DELAY=100"))

	// The jail span says warm: the pool has its jail first.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if code, _, _ := opsGetErr(url, "/readyz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve was not ready within a minute")
		}
	}
	cs, err := sessionOf(url, serveToken, "tracer")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	meta := mcp.Meta{"traceparent": "00-" + trace + "-" + parent + "-01"}
	code := `const r = await tools.down.echo({text: "` + canary + `"});
try { await fetch("https://evil.example/x"); } catch (e) {}
return r.length;`
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": code}, Meta: meta})
	if err != nil || res.IsError {
		t.Fatalf("execute: %v %+v", err, res)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "echo"}, Meta: meta}); err != nil {
		t.Fatal(err)
	}

	var spans []otlptest.Span
	find := func(name string) *otlptest.Span {
		for i := range spans {
			if spans[i].Name == name && spans[i].TraceID == trace {
				return &spans[i]
			}
		}
		return nil
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if spans = recv.Spans(); find("execute") != nil && find("tools/call") != nil && find("search_tools") != nil && find("egress dns") != nil {
			break
		}
	}
	exec, call, search := find("execute"), find("tools/call"), find("search_tools")
	if exec == nil || call == nil || search == nil {
		t.Fatalf("spans of the client's trace: %+v", spans)
	}
	if exec.Parent != parent || search.Parent != parent || call.Parent != exec.SpanID {
		t.Errorf("parents: execute %s, search_tools %s (want %s); tools/call %s (want %s)", exec.Parent, search.Parent, parent, call.Parent, exec.SpanID)
	}
	if exec.Service != "crucible-test" || exec.Attributes["crucible.language"] != "ts" || exec.Attributes["crucible.exit_code"] != "0" ||
		exec.Attributes["crucible.tool_calls"] != "1" || exec.Attributes["mcp.client.name"] != "tracer" || call.Attributes["crucible.server"] != "down" ||
		call.Attributes["crucible.tool"] != "echo" || call.Attributes["crucible.outcome"] != "ok" {
		t.Errorf("attributes: execute %+v (%s), tools/call %+v", exec.Attributes, exec.Service, call.Attributes)
	}
	// The jail, the program and the refused lookup, each the execution's.
	dns, jail, program := find("egress dns"), find("jail"), find("program")
	if dns == nil || jail == nil || program == nil {
		t.Fatalf("no egress, jail or program span: %+v", spans)
	}
	if dns.Parent != exec.SpanID || jail.Parent != exec.SpanID || program.Parent != exec.SpanID {
		t.Errorf("parents: egress %s, jail %s, program %s; want %s", dns.Parent, jail.Parent, program.Parent, exec.SpanID)
	}
	if dns.Attributes["server.address"] != "evil.example" || dns.Attributes["crucible.egress.verdict"] != "deny" || dns.Attributes["crucible.egress.reason"] == "" ||
		!strings.HasPrefix(dns.Status, "error") || jail.Attributes["crucible.warm"] != "true" {
		t.Errorf("egress %+v (%s), jail %+v", dns.Attributes, dns.Status, jail.Attributes)
	}
	mu.Lock()
	got := downstream
	mu.Unlock()
	if len(got) != 1 || !strings.HasPrefix(got[0], "00-"+trace+"-"+call.SpanID+"-") {
		t.Errorf("the downstream server got traceparent %q; want the trace %s, parent %s", got, trace, call.SpanID)
	}
	for _, s := range spans {
		for k, v := range s.Attributes {
			if strings.Contains(v, canary) || strings.Contains(v, secret) || strings.Contains(v, "r.length") {
				t.Errorf("span %s: %s = %q holds what no span may", s.Name, k, v)
			}
		}
	}
}

// sessionOf is a 2025-11-25 session of the serve at url, with token, its
// client named name.
func sessionOf(url, token, name string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport(token)}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// bearerTransport adds a bearer token to each request.
func bearerTransport(token string) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultTransport.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apis.NAME.propagate_trace: a request to such an API's host carries a
// traceparent of serve's, the client's trace and an egress span of the
// execution's as its parent, in place of the one the program wrote; a
// request to another API's host goes with the program's headers as they
// were.
func TestServeTracePropagation(t *testing.T) {
	requireRoot(t)
	var mu sync.Mutex
	got := map[string]string{} // the traceparent each host received
	port := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[strings.Split(r.Host, ":")[0]] = r.Header.Get("Traceparent") + "|" + r.Header.Get("Tracestate")
		mu.Unlock()
	}), nil)
	recv := otlptest.New(t)
	cfg := filepath.Join(t.TempDir(), "crucible.yaml")
	yaml := fmt.Sprintf(embeddedYAML+`network:
  hosts: {traced.crucible.test: 127.0.0.1, plain.crucible.test: 127.0.0.1}
  allow_private: [127.0.0.0/8]
apis:
  traced: {description: Traced., hosts: ["traced.crucible.test:%[1]d"], propagate_trace: true}
  plain: {description: Plain., hosts: ["plain.crucible.test:%[1]d"]}
`, port)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	url := httpServeArgv(t, crucibleCmd("serve", "--http", "127.0.0.1:0", "--config", cfg), crucibleEnv("CRUCIBLE_TOKEN="+serveToken,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_BSP_SCHEDULE_DELAY=100"))
	cs, err := sessionOf(url, serveToken, "tracer")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	const trace, parent, forged = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "00-11111111111111111111111111111111-2222222222222222-01"
	code := fmt.Sprintf(`const h = {traceparent: %q, tracestate: "mine=1"};
for (const host of ["traced", "plain"]) await fetch("http://" + host + ".crucible.test:%d/", {headers: h});
return 1`, forged, port)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": code},
		Meta: mcp.Meta{"traceparent": "00-" + trace + "-" + parent + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("execute: %v %+v", err, res)
	}
	var req, exec *otlptest.Span
	for deadline := time.Now().Add(30 * time.Second); (req == nil || exec == nil) && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, s := range recv.Spans() {
			switch {
			case s.Name == "egress request" && s.TraceID == trace:
				req = &s
			case s.Name == "execute" && s.TraceID == trace:
				exec = &s
			}
		}
	}
	if req == nil || exec == nil || req.Parent != exec.SpanID || req.Attributes["server.address"] != "traced.crucible.test" || req.Attributes["http.request.method"] != "GET" {
		t.Fatalf("the traced request's span: %+v, the execution's %+v", req, exec)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "00-" + trace + "-" + req.SpanID + "-01|"; got["traced.crucible.test"] != want {
		t.Errorf("the traced API got %q, want %q", got["traced.crucible.test"], want)
	}
	if want := forged + "|mine=1"; got["plain.crucible.test"] != want {
		t.Errorf("the other API got %q, want the program's %q", got["plain.crucible.test"], want)
	}
}
