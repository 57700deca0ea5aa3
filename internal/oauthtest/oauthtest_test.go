package oauthtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// redirectURI is where the tests' clients say they listen. Nothing does:
// the redirect is read from the 302, never followed.
const redirectURI = "http://127.0.0.1:9/callback"

// noRedirect is an HTTP client that hands back a redirect instead of
// following it.
var noRedirect = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// getJSON GETs u and decodes its JSON body into v; it returns the status.
func getJSON(t *testing.T, u string, v any) int {
	t.Helper()
	resp, err := noRedirect.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
	}
	return resp.StatusCode
}

// register registers a client with metadata md and returns the answer's
// status and body.
func register(t *testing.T, f *Fixture, md map[string]any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := noRedirect.Post(f.Issuer()+"/register", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// registerPublic registers a public client redirecting to redirectURI and
// returns its id.
func registerPublic(t *testing.T, f *Fixture) string {
	t.Helper()
	status, out := register(t, f, map[string]any{"redirect_uris": []string{redirectURI}, "client_name": "test"})
	if status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, out)
	}
	return out["client_id"].(string)
}

// config is the OAuth configuration of clientID against f.
func config(f *Fixture, clientID, secret string, style oauth2.AuthStyle, scopes ...string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     clientID,
		ClientSecret: secret,
		RedirectURL:  redirectURI,
		Scopes:       scopes,
		Endpoint: oauth2.Endpoint{
			AuthURL:   f.Issuer() + "/authorize",
			TokenURL:  f.Issuer() + "/token",
			AuthStyle: style,
		},
	}
}

// resource is the RFC 8707 resource parameter naming f's MCP server.
func resource(f *Fixture) oauth2.AuthCodeOption {
	return oauth2.SetAuthURLParam("resource", f.MCPURL())
}

// authorize GETs the authorization URL u, expects a 302 and returns the
// query of its Location.
func authorize(t *testing.T, u string) url.Values {
	t.Helper()
	resp, err := noRedirect.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: status %d, want 302", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirectURI {
		t.Fatalf("authorize redirected to %s, want %s", got, redirectURI)
	}
	return loc.Query()
}

// code runs the authorization request and returns the code and PKCE verifier.
func code(t *testing.T, f *Fixture, conf *oauth2.Config) (code, verifier string) {
	t.Helper()
	verifier = oauth2.GenerateVerifier()
	q := authorize(t, conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier), resource(f)))
	if q.Get("state") != "st4te" || q.Get("code") == "" {
		t.Fatalf("authorize: redirect query %v", q)
	}
	return q.Get("code"), verifier
}

// login runs the whole authorization code flow with PKCE.
func login(t *testing.T, f *Fixture, conf *oauth2.Config) *oauth2.Token {
	t.Helper()
	c, verifier := code(t, f, conf)
	tok, err := conf.Exchange(t.Context(), c, oauth2.VerifierOption(verifier), resource(f))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok
}

// oauthErrorCode is the RFC 6749 error code in err, or "".
func oauthErrorCode(err error) string {
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
		return re.ErrorCode
	}
	return ""
}

// postToken POSTs form to the token endpoint (with HTTP Basic credentials
// if user is set) and returns the status and decoded body.
func postToken(t *testing.T, f *Fixture, form url.Values, user, pass string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.Issuer()+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out) // 307 and 503 have no JSON
	return resp.StatusCode, out
}

// connect opens an MCP session with f's server that sends accessToken on
// every request.
func connect(t *testing.T, f *Fixture, accessToken string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: &oauth2.Transport{
		Source: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: accessToken}),
		Base:   &http.Transport{},
	}}
	t.Cleanup(hc.CloseIdleConnections)
	c := mcp.NewClient(&mcp.Implementation{Name: "oauthtest-test", Version: "v0.0.1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: f.MCPURL(), HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls the tool and returns its text.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("tools/call %s: %+v", name, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// postMCP POSTs a JSON-RPC message to the MCP endpoint with token (if any).
func postMCP(t *testing.T, f *Fixture, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.MCPURL(), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp
}

const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// wantUnauthorized checks an answer of the MCP endpoint is 401 with the
// resource metadata challenge, and error="invalid_token" if a token was sent.
func wantUnauthorized(t *testing.T, f *Fixture, resp *http.Response, presented bool) {
	t.Helper()
	want := `Bearer resource_metadata="` + f.ResourceMetadataURL() + `"`
	if presented {
		want = `Bearer error="invalid_token", resource_metadata="` + f.ResourceMetadataURL() + `"`
	}
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("got %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
}

func TestMetadata(t *testing.T) {
	f := New(t, Options{IssParameter: true, Scopes: []string{"mcp:read", "mcp:write"}})
	if !strings.HasPrefix(f.MCPURL(), "http://127.0.0.1:") || !strings.HasSuffix(f.MCPURL(), "/mcp") {
		t.Errorf("MCPURL %s", f.MCPURL())
	}
	if !strings.HasPrefix(f.Issuer(), "http://127.0.0.1:") || strings.HasPrefix(f.MCPURL(), f.Issuer()+"/") {
		t.Errorf("Issuer %s, MCPURL %s: want two servers", f.Issuer(), f.MCPURL())
	}

	var as map[string]any
	if s := getJSON(t, f.Issuer()+"/.well-known/oauth-authorization-server", &as); s != http.StatusOK {
		t.Fatalf("AS metadata: %d", s)
	}
	for k, want := range map[string]any{
		"issuer":                 f.Issuer(),
		"authorization_endpoint": f.Issuer() + "/authorize",
		"token_endpoint":         f.Issuer() + "/token",
		"registration_endpoint":  f.Issuer() + "/register",
		"authorization_response_iss_parameter_supported": true,
	} {
		if as[k] != want {
			t.Errorf("AS metadata %s = %v, want %v", k, as[k], want)
		}
	}
	if got := as["code_challenge_methods_supported"].([]any); len(got) != 1 || got[0] != "S256" {
		t.Errorf("code_challenge_methods_supported %v", got)
	}
	if got := as["scopes_supported"].([]any); len(got) != 2 || got[1] != "mcp:write" {
		t.Errorf("scopes_supported %v", got)
	}

	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		var prm resourceMetadata
		if s := getJSON(t, strings.TrimSuffix(f.MCPURL(), "/mcp")+p, &prm); s != http.StatusOK {
			t.Fatalf("%s: %d", p, s)
		}
		if prm.Resource != f.MCPURL() || !slices.Equal(prm.AuthorizationServers, []string{f.Issuer()}) ||
			!slices.Equal(prm.BearerMethodsSupported, []string{"header"}) || len(prm.ScopesSupported) != 2 {
			t.Errorf("%s: %+v", p, prm)
		}
	}
}

func TestRegistration(t *testing.T) {
	f := New(t, Options{})

	status, out := register(t, f, map[string]any{"redirect_uris": []string{redirectURI}, "client_name": "test"})
	if status != http.StatusCreated || out["client_id"] == "" || out["token_endpoint_auth_method"] != "none" ||
		out["client_name"] != "test" || out["client_secret"] != nil {
		t.Errorf("public client: %d %v", status, out)
	}

	status, out = register(t, f, map[string]any{"redirect_uris": []string{"http://localhost:8080/cb"}, "token_endpoint_auth_method": "client_secret_post"})
	if status != http.StatusCreated || out["token_endpoint_auth_method"] != "client_secret_post" {
		t.Errorf("confidential client: %d %v", status, out)
	}
	if s, _ := out["client_secret"].(string); len(s) < 32 {
		t.Errorf("confidential client: secret %q", s)
	}

	for _, bad := range []string{"https://example.com/cb", "http://127.0.0.1/cb", "http://evil.example:80/cb", "http://127.0.0.1:80/cb#x", "http://u@127.0.0.1:80/cb"} {
		status, out := register(t, f, map[string]any{"redirect_uris": []string{bad}})
		if status != http.StatusBadRequest || out["error"] != "invalid_redirect_uri" {
			t.Errorf("redirect %s: %d %v", bad, status, out)
		}
	}
	if got := f.Counts().Registrations; got != 7 {
		t.Errorf("Registrations %d, want 7", got)
	}
}

func TestAuthorizeRejects(t *testing.T) {
	f := New(t, Options{})
	id := registerPublic(t, f)
	challenge := s256(oauth2.GenerateVerifier())
	authURL := func(change func(url.Values)) string {
		q := url.Values{
			"response_type": {"code"}, "client_id": {id}, "redirect_uri": {redirectURI}, "state": {"s"},
			"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {f.MCPURL()},
		}
		change(q)
		return f.Issuer() + "/authorize?" + q.Encode()
	}

	// Without a known client and redirect there is nowhere to send an error.
	for name, change := range map[string]func(url.Values){
		"no client":       func(q url.Values) { q.Del("client_id") },
		"unknown client":  func(q url.Values) { q.Set("client_id", "nobody") },
		"CIMD client":     func(q url.Values) { q.Set("client_id", "https://client.example/meta.json") },
		"other redirect":  func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:10/callback") },
		"no redirect uri": func(q url.Values) { q.Del("redirect_uri") },
	} {
		resp, err := noRedirect.Get(authURL(change))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Errorf("%s: %d %q, want 400 and no redirect", name, resp.StatusCode, resp.Header.Get("Location"))
		}
	}

	// Other errors go back to the client.
	for want, change := range map[string]func(url.Values){
		"unsupported_response_type": func(q url.Values) { q.Set("response_type", "token") },
		"invalid_request":           func(q url.Values) { q.Set("code_challenge_method", "plain") },
		"invalid_target":            func(q url.Values) { q.Set("resource", "http://127.0.0.1:1/other") },
		"invalid_scope":             func(q url.Values) { q.Set("scope", "admin") },
	} {
		q := authorize(t, authURL(change))
		if q.Get("error") != want || q.Get("state") != "s" || q.Get("code") != "" {
			t.Errorf("want %s: redirect query %v", want, q)
		}
	}
	q := authorize(t, authURL(func(q url.Values) { q.Del("code_challenge") }))
	if q.Get("error") != "invalid_request" {
		t.Errorf("no code_challenge: redirect query %v", q)
	}
	if got := f.Counts().Authorize; got != 10 {
		t.Errorf("Authorize %d, want 10", got)
	}
}

func TestLoginAndCall(t *testing.T) {
	f := New(t, Options{IssParameter: true})
	conf := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams)

	c, verifier := code(t, f, conf)
	tok, err := conf.Exchange(t.Context(), c, oauth2.VerifierOption(verifier), resource(f))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.AccessToken, "at_") || len(tok.AccessToken) < 32 ||
		!strings.HasPrefix(tok.RefreshToken, "rt_") || len(tok.RefreshToken) < 32 {
		t.Errorf("tokens %q %q", tok.AccessToken, tok.RefreshToken)
	}
	if tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 || tok.Extra("scope") != "mcp:read" {
		t.Errorf("token response %+v scope %v", tok, tok.Extra("scope"))
	}
	if got := f.Tokens(); !slices.Equal(got, []string{tok.AccessToken, tok.RefreshToken}) {
		t.Errorf("Tokens %v", got)
	}

	cs := connect(t, f, tok.AccessToken)
	if got := call(t, cs, "whoami", nil); got != "alice" {
		t.Errorf("whoami %q", got)
	}
	if got := call(t, cs, "echo", map[string]any{"text": "a b\nc"}); got != "a b\nc" {
		t.Errorf("echo %q", got)
	}
	if got := call(t, cs, "leak", nil); !strings.Contains(got, tok.AccessToken) {
		t.Errorf("leak %q", got)
	}
	seen := f.SeenTokens()
	if len(seen) == 0 || slices.ContainsFunc(seen, func(s string) bool { return s != tok.AccessToken }) {
		t.Errorf("SeenTokens %v", seen)
	}
	n := f.Counts()
	if n.Authorize != 1 || n.CodeExchanges != 1 || n.Registrations != 1 || n.MCPRequests < 4 || n.Unauthorized != 0 {
		t.Errorf("Counts %+v", n)
	}
}

func TestIssuerInRedirect(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, ""},
		{Options{IssParameter: true}, "issuer"},
		{Options{IssParameter: true, WrongIss: true}, evilIssuer},
	} {
		f := New(t, tc.opts)
		conf := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams)
		q := authorize(t, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), resource(f)))
		want := tc.want
		if want == "issuer" {
			want = f.Issuer()
		}
		if q.Get("iss") != want {
			t.Errorf("%+v: iss %q, want %q", tc.opts, q.Get("iss"), want)
		}
	}
}

func TestCodeExchangeRejects(t *testing.T) {
	f := New(t, Options{})
	conf := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams)
	other := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams)

	c, verifier := code(t, f, conf)
	if _, err := conf.Exchange(t.Context(), c, oauth2.VerifierOption(oauth2.GenerateVerifier()), resource(f)); oauthErrorCode(err) != "invalid_grant" {
		t.Errorf("wrong verifier: %v", err)
	}
	if _, err := conf.Exchange(t.Context(), c, oauth2.VerifierOption(verifier), resource(f)); oauthErrorCode(err) != "invalid_grant" {
		t.Errorf("spent code: %v", err)
	}

	c, verifier = code(t, f, conf)
	if _, err := conf.Exchange(t.Context(), c, oauth2.VerifierOption(verifier)); oauthErrorCode(err) != "invalid_target" {
		t.Errorf("no resource: %v", err)
	}

	c, verifier = code(t, f, conf)
	if _, err := other.Exchange(t.Context(), c, oauth2.VerifierOption(verifier), resource(f)); oauthErrorCode(err) != "invalid_grant" {
		t.Errorf("another client: %v", err)
	}

	c, verifier = code(t, f, conf)
	moved := *conf
	moved.RedirectURL = "http://127.0.0.1:10/callback"
	if _, err := moved.Exchange(t.Context(), c, oauth2.VerifierOption(verifier), resource(f)); oauthErrorCode(err) != "invalid_grant" {
		t.Errorf("other redirect_uri: %v", err)
	}

	if _, err := conf.Exchange(t.Context(), "ac_nope", oauth2.VerifierOption(verifier), resource(f)); oauthErrorCode(err) != "invalid_grant" {
		t.Errorf("unknown code: %v", err)
	}
	if got := f.Counts().CodeExchanges; got != 6 {
		t.Errorf("CodeExchanges %d, want 6", got)
	}
	if got := f.Tokens(); len(got) != 0 {
		t.Errorf("Tokens %v, want none", got)
	}
}

func TestRefreshRotation(t *testing.T) {
	f := New(t, Options{})
	conf := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams)
	first := login(t, f, conf)

	// An expired token in the source makes it refresh.
	refresh := func(rt string) (*oauth2.Token, error) {
		return conf.TokenSource(t.Context(), &oauth2.Token{RefreshToken: rt}).Token()
	}
	second, err := refresh(first.RefreshToken)
	if err != nil {
		t.Fatal(err)
	}
	if second.RefreshToken == first.RefreshToken || second.AccessToken == first.AccessToken {
		t.Fatalf("refresh did not rotate: %+v", second)
	}
	if got := call(t, connect(t, f, second.AccessToken), "whoami", nil); got != "alice" {
		t.Errorf("whoami %q", got)
	}

	// The first refresh token is dead; presenting it again kills the grant.
	if _, err := refresh(first.RefreshToken); oauthErrorCode(err) != "invalid_grant" {
		t.Fatalf("reused refresh token: %v", err)
	}
	if n := f.Counts(); n.Refreshes != 2 || n.RefreshReuse != 1 {
		t.Errorf("Counts %+v", n)
	}
	if _, err := refresh(second.RefreshToken); oauthErrorCode(err) != "invalid_grant" {
		t.Errorf("the rotated refresh token outlived the reuse: %v", err)
	}
	wantUnauthorized(t, f, postMCP(t, f, second.AccessToken, pingBody), true)
}

func TestRefreshScope(t *testing.T) {
	f := New(t, Options{Scopes: []string{"mcp:read", "mcp:write"}})
	conf := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams, "mcp:read", "mcp:write")
	tok := login(t, f, conf)

	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {conf.ClientID}, "scope": {"mcp:read"}}
	status, out := postToken(t, f, form, "", "")
	if status != http.StatusOK || out["scope"] != "mcp:read" {
		t.Fatalf("narrowing refresh: %d %v", status, out)
	}
	form.Set("refresh_token", out["refresh_token"].(string))
	form.Set("scope", "mcp:read mcp:write")
	if status, out := postToken(t, f, form, "", ""); status != http.StatusBadRequest || out["error"] != "invalid_scope" {
		t.Errorf("widening refresh: %d %v", status, out)
	}
}

func TestRevoke(t *testing.T) {
	f := New(t, Options{})
	conf := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams)
	alice := login(t, f, conf)
	f.SetAccount("bob")
	bob := login(t, f, conf)
	if got := call(t, connect(t, f, bob.AccessToken), "whoami", nil); got != "bob" {
		t.Errorf("whoami %q, want bob", got)
	}

	f.Revoke("alice")
	wantUnauthorized(t, f, postMCP(t, f, alice.AccessToken, pingBody), true)
	if _, err := conf.TokenSource(t.Context(), &oauth2.Token{RefreshToken: alice.RefreshToken}).Token(); oauthErrorCode(err) != "invalid_grant" {
		t.Errorf("revoked refresh token: %v", err)
	}
	if resp := postMCP(t, f, bob.AccessToken, pingBody); resp.StatusCode == http.StatusUnauthorized {
		t.Errorf("bob's token died with alice's")
	}

	f.RevokeAll()
	wantUnauthorized(t, f, postMCP(t, f, bob.AccessToken, pingBody), true)
}

func TestExpiry(t *testing.T) {
	f := New(t, Options{})
	conf := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams)
	f.SetTokenTTL(time.Second)
	tok := login(t, f, conf)
	if tok.ExpiresIn != 1 {
		t.Errorf("expires_in %d, want 1", tok.ExpiresIn)
	}
	if resp := postMCP(t, f, tok.AccessToken, pingBody); resp.StatusCode == http.StatusUnauthorized {
		t.Fatal("a fresh token was refused")
	}
	time.Sleep(2 * time.Second)
	wantUnauthorized(t, f, postMCP(t, f, tok.AccessToken, pingBody), true)

	// The refresh token outlives the access token.
	f.SetTokenTTL(time.Hour)
	fresh, err := conf.TokenSource(t.Context(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, connect(t, f, fresh.AccessToken), "whoami", nil); got != "alice" {
		t.Errorf("whoami %q", got)
	}
}

func TestClientCredentials(t *testing.T) {
	f := New(t, Options{ClientID: "svc", ClientSecret: "s3cret"})
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		cc := &clientcredentials.Config{
			ClientID: "svc", ClientSecret: "s3cret", TokenURL: f.Issuer() + "/token", AuthStyle: style,
			EndpointParams: url.Values{"resource": {f.MCPURL()}},
		}
		tok, err := cc.Token(t.Context())
		if err != nil {
			t.Fatalf("style %d: %v", style, err)
		}
		if tok.RefreshToken != "" {
			t.Errorf("client_credentials came with a refresh token")
		}
		if got := call(t, connect(t, f, tok.AccessToken), "whoami", nil); got != "svc" {
			t.Errorf("whoami %q, want svc", got)
		}
	}

	wrong := &clientcredentials.Config{ClientID: "svc", ClientSecret: "nope", TokenURL: f.Issuer() + "/token", AuthStyle: oauth2.AuthStyleInHeader}
	if _, err := wrong.Token(t.Context()); oauthErrorCode(err) != "invalid_client" {
		t.Errorf("wrong secret: %v", err)
	}
	public := registerPublic(t, f)
	status, out := postToken(t, f, url.Values{"grant_type": {"client_credentials"}, "client_id": {public}}, "", "")
	if status != http.StatusBadRequest || out["error"] != "unauthorized_client" {
		t.Errorf("public client: %d %v", status, out)
	}
	if got := f.Counts().ClientCredentials; got != 4 {
		t.Errorf("ClientCredentials %d, want 4", got)
	}
}

func TestPreRegisteredClient(t *testing.T) {
	f := New(t, Options{ClientID: "app", ClientSecret: "s3cret"})
	conf := config(f, "app", "s3cret", oauth2.AuthStyleInHeader)
	tok := login(t, f, conf)
	if got := call(t, connect(t, f, tok.AccessToken), "whoami", nil); got != "alice" {
		t.Errorf("whoami %q", got)
	}
	bad := config(f, "app", "wrong", oauth2.AuthStyleInParams)
	c, verifier := code(t, f, bad)
	if _, err := bad.Exchange(t.Context(), c, oauth2.VerifierOption(verifier), resource(f)); oauthErrorCode(err) != "invalid_client" {
		t.Errorf("wrong secret: %v", err)
	}
}

func TestRegisteredConfidentialClient(t *testing.T) {
	f := New(t, Options{})
	status, out := register(t, f, map[string]any{"redirect_uris": []string{redirectURI}, "token_endpoint_auth_method": "client_secret_basic"})
	if status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, out)
	}
	id, secret := out["client_id"].(string), out["client_secret"].(string)

	login(t, f, config(f, id, secret, oauth2.AuthStyleInHeader))

	post := config(f, id, secret, oauth2.AuthStyleInParams)
	c, verifier := code(t, f, post)
	if _, err := post.Exchange(t.Context(), c, oauth2.VerifierOption(verifier), resource(f)); oauthErrorCode(err) != "invalid_client" {
		t.Errorf("client_secret_post by a client_secret_basic client: %v", err)
	}
}

func TestInsufficientScope(t *testing.T) {
	f := New(t, Options{Scopes: []string{"mcp:read"}, ToolScopes: map[string]string{"write": "mcp:write"}})
	conf := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams)
	read := login(t, f, conf)

	resp := postMCP(t, f, read.AccessToken, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{}}}`)
	want := `Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="` + f.ResourceMetadataURL() + `"`
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("got %d %q, want 403 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
	batch := `[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write"}}]`
	if resp := postMCP(t, f, read.AccessToken, batch); resp.StatusCode != http.StatusForbidden {
		t.Errorf("batch: %d, want 403", resp.StatusCode)
	}

	cs := connect(t, f, read.AccessToken)
	if got := call(t, cs, "whoami", nil); got != "alice" {
		t.Errorf("whoami %q", got)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "write"}); err == nil {
		t.Errorf("write without mcp:write succeeded")
	}

	// Step up: authorize again with the scope asked for.
	conf.Scopes = []string{"mcp:read", "mcp:write"}
	both := login(t, f, conf)
	if got := call(t, connect(t, f, both.AccessToken), "write", nil); got != "write ok for alice" {
		t.Errorf("write %q", got)
	}
}

func TestUnauthorized(t *testing.T) {
	f := New(t, Options{})
	wantUnauthorized(t, f, postMCP(t, f, "", pingBody), false)
	wantUnauthorized(t, f, postMCP(t, f, "at_unknown", pingBody), true)
	wantUnauthorized(t, f, postMCP(t, f, f.IssueToken("alice", "http://127.0.0.1:1/other"), pingBody), true)

	conf := config(f, registerPublic(t, f), "", oauth2.AuthStyleInParams)
	tok := login(t, f, conf)
	wantUnauthorized(t, f, postMCP(t, f, tok.RefreshToken, pingBody), true)

	if n := f.Counts(); n.Unauthorized != 4 || n.MCPRequests != 4 {
		t.Errorf("Counts %+v", n)
	}
	if got := f.SeenTokens(); len(got) != 3 || got[0] != "at_unknown" || got[2] != tok.RefreshToken {
		t.Errorf("SeenTokens %v", got)
	}
}

func TestAttacks(t *testing.T) {
	t.Run("ResourceOverride", func(t *testing.T) {
		f := New(t, Options{ResourceOverride: "http://127.0.0.1:1/elsewhere"})
		var prm resourceMetadata
		getJSON(t, strings.TrimSuffix(f.MCPURL(), "/mcp")+"/.well-known/oauth-protected-resource/mcp", &prm)
		if prm.Resource != "http://127.0.0.1:1/elsewhere" {
			t.Errorf("resource %q", prm.Resource)
		}
	})
	t.Run("RedirectTokenEndpoint", func(t *testing.T) {
		f := New(t, Options{RedirectTokenEndpoint: "http://127.0.0.1:1/steal"})
		req, _ := http.NewRequest(http.MethodPost, f.Issuer()+"/token", strings.NewReader("grant_type=client_credentials"))
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "http://127.0.0.1:1/steal" {
			t.Errorf("got %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("AuthDown", func(t *testing.T) {
		f := New(t, Options{AuthDown: true})
		for _, p := range []string{"/.well-known/oauth-authorization-server", "/authorize", "/register", "/token"} {
			if s := getJSON(t, f.Issuer()+p, nil); s != http.StatusServiceUnavailable {
				t.Errorf("%s: %d, want 503", p, s)
			}
		}
		f.SetAuthDown(false)
		if s := getJSON(t, f.Issuer()+"/.well-known/oauth-authorization-server", nil); s != http.StatusOK {
			t.Errorf("back up: %d", s)
		}
		f.SetAuthDown(true)
		if s, _ := postToken(t, f, url.Values{"grant_type": {"client_credentials"}}, "", ""); s != http.StatusServiceUnavailable {
			t.Errorf("down again: %d", s)
		}
	})
}

// TestCloseLeavesNoGoroutines checks that a fixture's cleanup ends whatever
// it started, a session its client left open included.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	var abandoned *mcp.ClientSession
	t.Run("fixture", func(t *testing.T) {
		f := New(t, Options{})
		hc := &http.Client{Transport: &oauth2.Transport{
			Source: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: f.IssueToken("alice", f.MCPURL())}),
			Base:   &http.Transport{},
		}}
		c := mcp.NewClient(&mcp.Implementation{Name: "oauthtest-test", Version: "v0.0.1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: f.MCPURL(), HTTPClient: hc, MaxRetries: -1}
		cs, err := c.Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		abandoned = cs // not closed before the fixture is
		call(t, cs, "whoami", nil)
	})
	if abandoned != nil {
		defer func() { _ = abandoned.Close() }()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for runtime.NumGoroutine() > before {
		select {
		case <-ctx.Done():
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		case <-time.After(50 * time.Millisecond):
		}
	}
}
