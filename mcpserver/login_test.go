package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/oauthtest"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// browse is the person at a client: it opens the login's URL and follows
// every redirect (serve's /oauth/start, the authorization server's
// approval, serve's /oauth/callback), and returns the last page's status.
func browse(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Errorf("the browser: %v", err)
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// connectAsking is a session over HTTP with token, speaking version (as
// connectHTTP), whose client
// declares URL elicitation, and opens each URL it is asked to, as a person
// would; it keeps the URLs.
func connectAsking(t *testing.T, url, token, version string, opened *[]string) *mcp.ClientSession {
	t.Helper()
	var mu sync.Mutex
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			mu.Lock()
			*opened = append(*opened, req.Params.URL)
			mu.Unlock()
			if code := browse(t, req.Params.URL); code != http.StatusOK {
				t.Errorf("the login's last page: %d", code)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: token, rt: http.DefaultTransport}}}
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

const whoami = `try { return await tools.tracker.whoami({}); } catch (e) { return "refused: " + e.message; }`

// Two clients of serve, each logging in to the remote server with an
// account of its own, when a call of theirs needs it: each is asked (a URL
// elicitation pointing at serve's /oauth/start, during execute for a
// 2025-11-25 session, in its answer for a 2026-07-28 client), and from then on each
// call carries its own client's token. One client's login serves no other:
// a third, anonymous client is told the operator's crucible login is
// missing; a login link works once; a client that cannot be asked gets the
// URL in execute's -32042 error.
func TestClientsLogIn(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	f := oauthtest.New(t, oauthtest.Options{IssParameter: true})
	state := t.TempDir()
	t.Setenv("CRUCIBLE_STATE_DIR", state)
	tokens := map[string]string{"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab", "carol": "carol-token-0123456789"}
	s := newServer(t, func(c *config.Config) {
		c.Servers = map[string]config.Server{"tracker": {URL: f.MCPURL(), OAuth: &config.ServerOAuth{}}}
		c.Clients = map[string]config.Client{}
		for name := range tokens {
			c.Clients[name] = config.Client{Token: config.SecretSource{From: "env:UNUSED"}}
		}
	})
	url := serveHTTPClients(t, s, tokens)

	var aliceOpened, bobOpened []string
	alice := connectAsking(t, url, tokens["alice"], "2025-11-25", &aliceOpened)
	f.SetAccount("alice-at-tracker")
	_, out := execute(t, alice, map[string]any{"code": whoami})
	if out == nil || !strings.Contains(string(out.Result), "server tracker needs a login of this client's own") || !strings.Contains(string(out.Result), "asked to log in") {
		t.Fatalf("alice's first call: %+v", out)
	}
	if len(aliceOpened) != 1 || !strings.HasPrefix(aliceOpened[0], url+"/oauth/start?login=") || strings.Contains(string(out.Result), aliceOpened[0]) {
		t.Fatalf("alice was asked to open %q; the program must not see it", aliceOpened)
	}
	if _, out = execute(t, alice, map[string]any{"code": whoami}); out == nil || string(out.Result) != `"alice-at-tracker"` {
		t.Fatalf("alice after her login: %+v", out)
	}
	// search_tools lists the server's tools through alice's own login; an
	// anonymous client's (the operator's, which there is none of) cannot.
	if found := searchTools(t, alice, "whoami", ""); !strings.Contains(found, "tools.tracker.whoami") {
		t.Errorf("alice's search_tools: %s", found)
	}
	if found := searchTools(t, connectHTTP(t, url, tokenA, "2025-11-25"), "whoami", ""); strings.Contains(found, "tools.tracker.whoami") {
		t.Errorf("an anonymous client's search_tools lists tracker's tools: %s", found)
	}

	bob := connectAsking(t, url, tokens["bob"], "", &bobOpened) // 2026-07-28: asked by an input request
	f.SetAccount("bob-at-tracker")
	if _, out = execute(t, bob, map[string]any{"code": whoami}); out == nil || !strings.Contains(string(out.Result), "asked to log in, and went to") || len(bobOpened) != 1 {
		t.Fatalf("bob's first call: %+v (opened %q)", out, bobOpened)
	}
	if _, out = execute(t, bob, map[string]any{"code": whoami}); out == nil || string(out.Result) != `"bob-at-tracker"` {
		t.Fatalf("bob after his login: %+v", out)
	}
	if _, out = execute(t, alice, map[string]any{"code": whoami}); out == nil || string(out.Result) != `"alice-at-tracker"` {
		t.Fatalf("alice after bob's login: %+v", out)
	}
	for _, name := range []string{"client-alice", "client-bob"} {
		if fi, err := os.Stat(filepath.Join(state, "tracker", "clients", name+".json")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s's login file: %v", name, err)
		}
	}

	// Neither login is anyone else's: an anonymous client has the
	// operator's, which there is none of; a used link is dead.
	if _, out = execute(t, connectHTTP(t, url, tokenA, "2025-11-25"), map[string]any{"code": whoami}); out == nil || !strings.Contains(string(out.Result), "run crucible login tracker") {
		t.Errorf("an anonymous client: %+v", out)
	}
	if code := browse(t, aliceOpened[0]); code != http.StatusGone {
		t.Errorf("alice's used link: %d; want 410", code)
	}
	if code := browse(t, url+"/oauth/callback?state=forged&code=forged"); code != http.StatusBadRequest {
		t.Errorf("a forged callback: %d; want 400", code)
	}

	// A client that declares no URL elicitation: execute answers -32042,
	// the URL in its data.
	carol := connectHTTP(t, url, tokens["carol"], "2025-11-25")
	f.SetAccount("carol-at-tracker")
	_, err := carol.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": whoami}})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("carol's first execute: %v; want -32042", err)
	}
	var data struct{ Elicitations []mcp.ElicitParams }
	if err := json.Unmarshal(rpc.Data, &data); err != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" {
		t.Fatalf("-32042's data: %s, %v", rpc.Data, err)
	}
	if code := browse(t, data.Elicitations[0].URL); code != http.StatusOK {
		t.Fatalf("carol's login: %d", code)
	}
	if _, out = execute(t, carol, map[string]any{"code": whoami}); out == nil || string(out.Result) != `"carol-at-tracker"` {
		t.Fatalf("carol after her login: %+v", out)
	}

	// Each call went out with its own client's token.
	seen := map[string]bool{}
	for _, tok := range f.SeenTokens() {
		seen[tok] = true
	}
	if len(seen) < 3 {
		t.Errorf("the server saw %d tokens; want one per client at least", len(seen))
	}
}
