package toolbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askingServer is a remote server that speaks only the stateless
// 2026-07-28 revision (an initialize is refused) and whose tool greet asks
// the human for a name with an input request.
func askingServer(t *testing.T) string {
	t.Helper()
	ms := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "greet"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Mode: "form", Message: "What is your name?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}},
				RequestState: "asked",
			}, nil, nil
		}
		res, _ := req.Params.InputResponses["name"].(*mcp.ElicitResult)
		if res == nil || res.Action != "accept" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no name"}}}, nil, nil
		}
		name, _ := res.Content["name"].(string)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + name}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			http.Error(w, "this server speaks 2026-07-28 only", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// A 2026-07-28 server works downstream, and what it asks in an input
// request reaches the caller's human, named as the server's, whose answer
// goes back to it; with no one to ask, the server is told it was
// cancelled.
func TestServerAsksHuman(t *testing.T) {
	b := newBridge(t, Options{Servers: map[string]Server{"asker": {URL: askingServer(t)}}})
	var mu sync.Mutex
	var asked []string
	s := b.NewSession()
	s.SetCaller(Caller{Client: "alice", Elicit: func(_ context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, server+": "+p.Message)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
	}})
	if got := mustCall(t, s, "asker", "greet", `{}`); got != `"hello ada"` {
		t.Errorf("greet = %s", got)
	}
	if len(asked) != 1 || asked[0] != "asker: Tool server asker asks: What is your name?" {
		t.Errorf("asked %q", asked)
	}
	nobody := b.NewSession()
	nobody.SetCaller(Caller{Client: "bob"})
	if got := mustCall(t, nobody, "asker", "greet", `{}`); !strings.Contains(got, "no name") {
		t.Errorf("greet with no one to ask = %s", got)
	}
}
