package oauthtest

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/internal/randomid"
)

const (
	codeTTL      = time.Minute // an authorization code's lifetime
	maxFormBytes = 64 << 10    // the largest /register or /token body read
	evilIssuer   = "http://evil.example"
)

// client is a registered (or the pre-registered) OAuth client.
type client struct {
	id, secret string
	// authMethod is how the client authenticates at the token endpoint:
	// "none", "client_secret_basic" or "client_secret_post"; "" (the
	// pre-registered confidential client) accepts either of the last two.
	authMethod   string
	redirectURIs []string // exact matches only
	anyLoopback  bool     // any loopback redirect URI will do (the pre-registered client)
}

func (c *client) confidential() bool { return c.authMethod != "none" }

// allowsRedirect reports whether the client may be sent to uri.
func (c *client) allowsRedirect(uri string) bool {
	if c.anyLoopback {
		return loopbackURI(uri)
	}
	return slices.Contains(c.redirectURIs, uri)
}

// authCode is an authorization code and everything it is bound to.
type authCode struct {
	clientID, redirectURI, challenge, resource, account string
	scopes                                              []string
	expires                                             time.Time
	used                                                bool
}

// token is an access or refresh token and everything it is bound to.
type token struct {
	refresh                     bool
	account, clientID, resource string
	scopes                      []string
	expires                     time.Time // zero for refresh tokens, which do not expire
	family                      string    // the grant it descends from, shared by its rotations
	used                        bool      // a refresh token already rotated away
	revoked                     bool
}

// oauthError is an error answer of the token endpoint (RFC 6749 §5.2).
type oauthError struct {
	status      int
	code, desc  string
	basicFailed bool // the client tried HTTP Basic: challenge it back
}

func badRequest(code, desc string) *oauthError {
	return &oauthError{status: http.StatusBadRequest, code: code, desc: desc}
}

func writeOAuthError(w http.ResponseWriter, e *oauthError) {
	if e.basicFailed {
		w.Header().Set("WWW-Authenticate", `Basic realm="oauthtest"`)
	}
	writeJSON(w, e.status, map[string]string{"error": e.code, "error_description": e.desc})
}

// authServer is the authorization server's handler: every endpoint answers
// 503 while it is down.
func (f *Fixture) authServer() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", f.serveASMetadata)
	mux.HandleFunc("POST /register", f.serveRegister)
	mux.HandleFunc("GET /authorize", f.serveAuthorize)
	mux.HandleFunc("POST /token", f.serveToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		down := f.authDown
		f.mu.Unlock()
		if down {
			http.Error(w, "authorization server is down", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// asMetadata is the authorization server metadata document (RFC 8414).
type asMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
}

func (f *Fixture) serveASMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, asMetadata{
		Issuer:                            f.issuer,
		AuthorizationEndpoint:             f.issuer + "/authorize",
		TokenEndpoint:                     f.issuer + "/token",
		RegistrationEndpoint:              f.issuer + "/register",
		ScopesSupported:                   f.scopes,
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token", "client_credentials"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_post", "client_secret_basic"},
		IssParameterSupported:             f.opts.IssParameter,
	})
}

// serveRegister is dynamic client registration (RFC 7591). The metadata is
// echoed back with the client's id (and secret, for a confidential client).
func (f *Fixture) serveRegister(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.counts.Registrations++
	f.mu.Unlock()

	fail := func(code, desc string) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFormBytes))
	if err != nil {
		fail("invalid_client_metadata", "the body is unreadable or too large")
		return
	}
	var echo map[string]any
	var md struct {
		RedirectURIs  []string `json:"redirect_uris"`
		AuthMethod    string   `json:"token_endpoint_auth_method"`
		GrantTypes    []string `json:"grant_types"`
		ResponseTypes []string `json:"response_types"`
	}
	if json.Unmarshal(body, &echo) != nil || echo == nil || json.Unmarshal(body, &md) != nil {
		fail("invalid_client_metadata", "the body is not a JSON object of client metadata")
		return
	}
	if len(md.RedirectURIs) == 0 {
		fail("invalid_redirect_uri", "redirect_uris is required")
		return
	}
	for _, u := range md.RedirectURIs {
		if !loopbackURI(u) {
			fail("invalid_redirect_uri", "a redirect URI must be http://127.0.0.1:PORT/... or http://localhost:PORT/...")
			return
		}
	}
	switch md.AuthMethod {
	case "":
		md.AuthMethod = "none"
	case "none", "client_secret_post", "client_secret_basic":
	default:
		fail("invalid_client_metadata", "unsupported token_endpoint_auth_method")
		return
	}
	if md.GrantTypes == nil {
		md.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range md.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			fail("invalid_client_metadata", "a registered client may use authorization_code and refresh_token only")
			return
		}
	}
	if md.ResponseTypes == nil {
		md.ResponseTypes = []string{"code"}
	}
	if len(md.ResponseTypes) != 1 || md.ResponseTypes[0] != "code" {
		fail("invalid_client_metadata", `response_types must be ["code"]`)
		return
	}

	c := &client{id: randomid.New("client_", 16), authMethod: md.AuthMethod, redirectURIs: md.RedirectURIs}
	echo["client_id"] = c.id
	echo["client_id_issued_at"] = time.Now().Unix()
	echo["redirect_uris"] = md.RedirectURIs
	echo["token_endpoint_auth_method"] = md.AuthMethod
	echo["grant_types"] = md.GrantTypes
	echo["response_types"] = md.ResponseTypes
	delete(echo, "client_secret") // a client does not choose its own secret
	if c.confidential() {
		c.secret = randomid.New("secret_", 32)
		echo["client_secret"] = c.secret
		echo["client_secret_expires_at"] = 0
	}
	f.mu.Lock()
	f.clients[c.id] = c
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, echo)
}

// loopbackURI reports whether s is a redirect URI this server accepts: http
// to 127.0.0.1 or localhost with an explicit port, no user info, no fragment.
func loopbackURI(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Opaque != "" || u.User != nil || strings.Contains(s, "#") {
		return false
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" {
		return false
	}
	port, err := strconv.Atoi(u.Port())
	return err == nil && port > 0 && port < 1<<16
}

// serveAuthorize is the authorization endpoint, where the user's browser
// lands. It approves at once, as the current account. A request that names
// no known client or no allowed redirect URI gets a 400; any other error is
// sent back to the client's redirect URI.
func (f *Fixture) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	clientID, redirectURI := q.Get("client_id"), q.Get("redirect_uri")

	f.mu.Lock()
	f.counts.Authorize++
	c := f.clients[clientID]
	account := f.account
	f.mu.Unlock()

	switch {
	case clientID == "":
		http.Error(w, "client_id is required", http.StatusBadRequest)
		return
	case strings.HasPrefix(clientID, "https://"):
		http.Error(w, "client ID metadata documents are not supported: register the client", http.StatusBadRequest)
		return
	case c == nil:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case !c.allowsRedirect(redirectURI):
		http.Error(w, "redirect_uri is not registered for this client", http.StatusBadRequest)
		return
	}

	// From here on the client is known and so is where to send it back.
	reply := url.Values{}
	if s := q.Get("state"); s != "" {
		reply.Set("state", s)
	}
	switch {
	case f.opts.WrongIss:
		reply.Set("iss", evilIssuer)
	case f.opts.IssParameter:
		reply.Set("iss", f.issuer)
	}
	fail := func(code, desc string) {
		reply.Set("error", code)
		reply.Set("error_description", desc)
		redirectTo(w, r, redirectURI, reply)
	}
	challenge := q.Get("code_challenge")
	scopes, ok := f.requestedScopes(q.Get("scope"), f.scopes)
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "response_type must be code")
	case q.Get("code_challenge_method") != "S256" || !pkceString(challenge):
		fail("invalid_request", "PKCE is required: a code_challenge with code_challenge_method=S256")
	case q.Get("resource") != f.MCPURL():
		fail("invalid_target", "resource must be "+f.MCPURL())
	case !ok:
		fail("invalid_scope", "unknown scope requested")
	default:
		code := randomid.New("ac_", 32)
		f.mu.Lock()
		f.codes[code] = &authCode{
			clientID: clientID, redirectURI: redirectURI, challenge: challenge,
			resource: f.MCPURL(), account: account, scopes: scopes,
			expires: time.Now().Add(codeTTL),
		}
		f.mu.Unlock()
		reply.Set("code", code)
		redirectTo(w, r, redirectURI, reply)
	}
}

// redirectTo answers 302 to uri with params added to its query.
func redirectTo(w http.ResponseWriter, r *http.Request, uri string, params url.Values) {
	u, err := url.Parse(uri)
	if err != nil { // cannot happen: the URI was checked already
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// requestedScopes parses a scope parameter: none asked means def, and every
// scope asked must be one this server knows.
func (f *Fixture) requestedScopes(param string, def []string) ([]string, bool) {
	var scopes []string
	for _, s := range strings.Fields(param) {
		if !f.knownScope(s) {
			return nil, false
		}
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	if len(scopes) == 0 {
		return slices.Clone(def), true
	}
	return scopes, true
}

// knownScope reports whether s may be granted: it is supported, or some tool
// needs it.
func (f *Fixture) knownScope(s string) bool {
	if slices.Contains(f.scopes, s) {
		return true
	}
	for _, need := range f.opts.ToolScopes {
		if need == s {
			return true
		}
	}
	return false
}

// pkceString reports whether s is a well-formed code verifier or S256 code
// challenge: 43 to 128 unreserved characters (RFC 7636 §4.1).
func pkceString(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for _, c := range s {
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)
		if !ok {
			return false
		}
	}
	return true
}

// s256 is the S256 code challenge of verifier.
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// serveToken is the token endpoint.
func (f *Fixture) serveToken(w http.ResponseWriter, r *http.Request) {
	if f.opts.RedirectTokenEndpoint != "" {
		w.Header().Set("Location", f.opts.RedirectTokenEndpoint)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, badRequest("invalid_request", "the body is not a form or is too large"))
		return
	}
	form := r.PostForm // parameters in the URL's query are ignored

	f.mu.Lock()
	defer f.mu.Unlock()
	grantType := form.Get("grant_type")
	switch grantType {
	case "authorization_code":
		f.counts.CodeExchanges++
	case "refresh_token":
		f.counts.Refreshes++
	case "client_credentials":
		f.counts.ClientCredentials++
	}
	c, e := f.authenticate(r)
	if e != nil {
		writeOAuthError(w, e)
		return
	}
	var resp map[string]any
	switch grantType {
	case "authorization_code":
		resp, e = f.exchangeCode(c, form)
	case "refresh_token":
		resp, e = f.refresh(c, form)
	case "client_credentials":
		resp, e = f.clientCredentials(c, form)
	default:
		e = badRequest("unsupported_grant_type", "grant_type must be authorization_code, refresh_token or client_credentials")
	}
	if e != nil {
		writeOAuthError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// authenticate finds the client of a token request: a public client names
// itself with client_id, a confidential one proves itself with its secret in
// HTTP Basic or in the form, whichever it registered (the pre-registered
// client may use either). f.mu is held.
func (f *Fixture) authenticate(r *http.Request) (*client, *oauthError) {
	unauthorized := func(desc string, basic bool) *oauthError {
		return &oauthError{status: http.StatusUnauthorized, code: "invalid_client", desc: desc, basicFailed: basic}
	}
	form := r.PostForm
	id, secret, basic := r.BasicAuth()
	if basic {
		// RFC 6749 §2.3.1: both are form-encoded before Basic encoding.
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return nil, unauthorized("malformed Basic credentials", true)
		}
		if form.Has("client_secret") {
			return nil, badRequest("invalid_request", "more than one client authentication method")
		}
		if formID := form.Get("client_id"); formID != "" && formID != id {
			return nil, badRequest("invalid_request", "client_id differs from the Basic credentials")
		}
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	c := f.clients[id]
	if id == "" || c == nil {
		return nil, unauthorized("unknown client", basic)
	}
	if !c.confidential() {
		return c, nil // a public client: its id is all it has
	}
	switch {
	case c.authMethod == "client_secret_basic" && !basic:
		return nil, unauthorized("this client authenticates with client_secret_basic", false)
	case c.authMethod == "client_secret_post" && basic:
		return nil, unauthorized("this client authenticates with client_secret_post", true)
	case subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) != 1:
		return nil, unauthorized("wrong client secret", basic)
	}
	return c, nil
}

// exchangeCode is the authorization_code grant. A code is spent by its
// first presentation, right or wrong. f.mu is held.
func (f *Fixture) exchangeCode(c *client, form url.Values) (map[string]any, *oauthError) {
	code := f.codes[form.Get("code")]
	if code == nil {
		return nil, badRequest("invalid_grant", "unknown authorization code")
	}
	if code.used {
		return nil, badRequest("invalid_grant", "authorization code already used")
	}
	code.used = true
	verifier := form.Get("code_verifier")
	switch {
	case time.Now().After(code.expires):
		return nil, badRequest("invalid_grant", "authorization code expired")
	case code.clientID != c.id:
		return nil, badRequest("invalid_grant", "authorization code issued to another client")
	case form.Get("redirect_uri") != code.redirectURI:
		return nil, badRequest("invalid_grant", "redirect_uri differs from the authorization request's")
	case !pkceString(verifier) || s256(verifier) != code.challenge:
		return nil, badRequest("invalid_grant", "code_verifier does not match the code_challenge")
	case form.Get("resource") != code.resource:
		return nil, badRequest("invalid_target", "resource must be "+code.resource)
	}
	return f.grant(code.account, c.id, code.resource, code.scopes, newFamily(), true), nil
}

// refresh is the refresh_token grant, with rotation: the refresh token
// presented dies and a new one comes back. Presenting one already rotated
// away means two parties hold it, so the whole grant (every token that
// descends from the same authorization) is revoked. f.mu is held.
func (f *Fixture) refresh(c *client, form url.Values) (map[string]any, *oauthError) {
	rt := f.tokens[form.Get("refresh_token")]
	switch {
	case rt == nil || !rt.refresh:
		return nil, badRequest("invalid_grant", "unknown refresh token")
	case rt.clientID != c.id:
		return nil, badRequest("invalid_grant", "refresh token issued to another client")
	case rt.used:
		f.counts.RefreshReuse++
		for _, tk := range f.tokens {
			if tk.family == rt.family {
				tk.revoked = true
			}
		}
		return nil, badRequest("invalid_grant", "refresh token already used")
	case rt.revoked:
		return nil, badRequest("invalid_grant", "refresh token revoked")
	}
	if res := form.Get("resource"); res != "" && res != rt.resource {
		return nil, badRequest("invalid_target", "resource must be "+rt.resource)
	}
	scopes, ok := f.requestedScopes(form.Get("scope"), rt.scopes)
	if !ok || slices.ContainsFunc(scopes, func(s string) bool { return !slices.Contains(rt.scopes, s) }) {
		return nil, badRequest("invalid_scope", "a refresh may only narrow the scopes granted")
	}
	rt.used = true
	return f.grant(rt.account, c.id, rt.resource, scopes, rt.family, true), nil
}

// clientCredentials is the client_credentials grant, for the pre-registered
// confidential client only; its tokens' account is the client's id and they
// come without a refresh token. f.mu is held.
func (f *Fixture) clientCredentials(c *client, form url.Values) (map[string]any, *oauthError) {
	if c.id != f.opts.ClientID || !c.confidential() {
		return nil, badRequest("unauthorized_client", "only the pre-registered confidential client may use client_credentials")
	}
	if res := form.Get("resource"); res != "" && res != f.MCPURL() {
		return nil, badRequest("invalid_target", "resource must be "+f.MCPURL())
	}
	scopes, ok := f.requestedScopes(form.Get("scope"), f.scopes)
	if !ok {
		return nil, badRequest("invalid_scope", "unknown scope requested")
	}
	return f.grant(c.id, c.id, f.MCPURL(), scopes, newFamily(), false), nil
}

// grant issues an access token (and a refresh token, if withRefresh) and
// returns the token response (RFC 6749 §5.1). f.mu is held.
func (f *Fixture) grant(account, clientID, resource string, scopes []string, family string, withRefresh bool) map[string]any {
	resp := map[string]any{
		"access_token": f.newToken(false, account, clientID, resource, scopes, family),
		"token_type":   "Bearer",
		"expires_in":   int64((f.ttl + time.Second - 1) / time.Second), // whole seconds, rounded up
		"scope":        strings.Join(scopes, " "),
	}
	if withRefresh {
		resp["refresh_token"] = f.newToken(true, account, clientID, resource, scopes, family)
	}
	return resp
}

// newToken mints and records a token: "at_" or "rt_" and 32 random bytes in
// hex. An access token expires after the current TTL. f.mu is held.
func (f *Fixture) newToken(refresh bool, account, clientID, resource string, scopes []string, family string) string {
	tk := &token{refresh: refresh, account: account, clientID: clientID, resource: resource, scopes: slices.Clone(scopes), family: family}
	prefix := "rt_"
	if !refresh {
		prefix = "at_"
		tk.expires = time.Now().Add(f.ttl)
	}
	v := randomid.New(prefix, 32)
	f.tokens[v] = tk
	f.issued = append(f.issued, v)
	return v
}

// newFamily names a new grant.
func newFamily() string { return randomid.New("grant_", 8) }
