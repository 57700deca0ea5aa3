package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// What a downstream server asks during a call (an input request) is put to
// the human at serve's client, as approvals are, in both eras: sent during
// the execute call to a 2025-11-25 session, and in execute's answer to a
// 2026-07-28 client, whose retry brings the answer. A client that declares
// no elicitation is not asked: the server is told it was cancelled.
func TestServerAsksThroughServe(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	ms := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "greet"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "What is your name?"}}, RequestState: "asked"}, nil, nil
		}
		if res, _ := req.Params.InputResponses["name"].(*mcp.ElicitResult); res != nil && res.Action == "accept" {
			name, _ := res.Content["name"].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + name}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no name"}}}, nil, nil
	})
	down := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(down.Close)
	trail := filepath.Join(t.TempDir(), "audit.ndjson")
	aw, err := audit.Open(trail)
	if err != nil {
		t.Fatal(err)
	}
	s := newServerWith(t, Options{Audit: aw}, func(c *config.Config) {
		c.Servers = map[string]config.Server{"asker": {URL: down.URL}}
	})
	url := serveHTTP(t, s)
	const code = `return await tools.asker.greet({});`
	var cs *mcp.ClientSession
	for _, version := range []string{"2025-11-25", ""} {
		var asked []string
		c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
			},
		})
		tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token: tokenA, rt: http.DefaultTransport}}}
		cs, err = c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		_, out := execute(t, cs, map[string]any{"code": code})
		if out == nil || string(out.Result) != `"hello ada"` || len(asked) != 1 || asked[0] != "Tool server asker asks: What is your name?" {
			t.Errorf("version %q: %+v, asked %q", version, out, asked)
		}
		_ = cs.Close()
	}
	_, out := execute(t, connectHTTP(t, url, tokenA, "2025-11-25"), map[string]any{"code": code})
	if out == nil || !strings.Contains(string(out.Result), "no name") {
		t.Errorf("a client that cannot be asked: %+v", out)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(trail)
	if n := strings.Count(string(b), `"event":"elicitation"`); n != 3 || !strings.Contains(string(b), `"server":"asker","mode":"form","answer":"accept"`) || strings.Contains(string(b), "What is your name") {
		t.Errorf("%d elicitation lines in the audit trail:\n%s", n, b)
	}
}
