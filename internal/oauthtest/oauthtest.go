// Package oauthtest starts, for a test, a real OAuth 2.1 authorization server
// and a real MCP server that is a protected resource of it, both on loopback
// (httptest servers on 127.0.0.1, each on its own port). It is for testing a
// client that logs in to a remote MCP server: discovery (RFC 9728, RFC 8414),
// dynamic client registration (RFC 7591), the authorization code grant with
// PKCE (S256) and resource indicators (RFC 8707), refresh with rotation and
// reuse detection, client credentials, revocation, expiry and step-up scope.
//
// The authorization server approves every authorization at once, as the
// account set by [Fixture.SetAccount], so a test follows the redirect
// without a browser. Options turn on the attacks a client must resist: a
// wrong iss in the redirect, a resource metadata document naming another
// resource, a token endpoint that redirects elsewhere.
//
// Everything is kept in memory under one mutex and lives only as long as the
// test: New registers a cleanup that closes both servers and every MCP
// session.
package oauthtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure New. Zero values are sane defaults.
type Options struct {
	// TokenTTL is the access token lifetime; 0 means 1h.
	TokenTTL time.Duration
	// Scopes are the scopes_supported on both metadata documents, and the
	// scopes granted when an authorization asks for none; nil means
	// ["mcp:read"].
	Scopes []string
	// ToolScopes maps a tool's name to a scope that calling it needs on top
	// of a valid token. Without it the MCP server answers HTTP 403 with
	// WWW-Authenticate: Bearer error="insufficient_scope", scope="<all
	// granted + the needed>", resource_metadata="...". The scopes named here
	// may be requested even when Scopes does not list them, and a name that
	// is not one of the built-in tools (whoami, echo, leak) becomes a tool
	// that answers "<name> ok for <account>".
	ToolScopes map[string]string
	// ClientID and ClientSecret are a pre-registered confidential client,
	// also the only one allowed the client_credentials grant; "" means none.
	// With an id and no secret the client is a public one. Having no
	// registered redirect URIs, it may use any that /register would accept:
	// http://127.0.0.1:PORT/... or http://localhost:PORT/...
	ClientID, ClientSecret string
	// IssParameter advertises authorization_response_iss_parameter_supported
	// and sends iss in the authorization redirect (RFC 9207).
	IssParameter bool
	// WrongIss makes the authorization redirect carry the iss of another
	// issuer, http://evil.example (a mix-up attack), IssParameter or not.
	WrongIss bool
	// ResourceOverride, if set, is the "resource" of the protected resource
	// metadata instead of the MCP URL (an audience mismatch attack).
	ResourceOverride string
	// RedirectTokenEndpoint, if set, makes the token endpoint answer 307
	// with this URL as its Location (a redirect to another host).
	RedirectTokenEndpoint string
	// AuthDown makes every endpoint of the authorization server answer 503;
	// see also [Fixture.SetAuthDown].
	AuthDown bool
}

// Counts are how many times each thing happened since New. Requests that
// the authorization server refuses while down, or redirects away, are not
// counted.
type Counts struct {
	Authorize         int // GET /authorize requests
	CodeExchanges     int // token requests with grant_type=authorization_code
	Refreshes         int // token requests with grant_type=refresh_token
	RefreshReuse      int // of those, the ones presenting a refresh token already rotated away
	ClientCredentials int // token requests with grant_type=client_credentials
	Registrations     int // POST /register requests
	MCPRequests       int // requests to the MCP endpoint (/mcp), whatever their fate
	Unauthorized      int // of those, the ones answered 401
}

// Fixture is a running authorization server and MCP server.
type Fixture struct {
	opts      Options
	issuer    string // the authorization server's origin, no trailing slash
	mcpOrigin string // the MCP server's origin
	scopes    []string
	as, rs    *httptest.Server
	mcpServer *mcp.Server

	mu       sync.Mutex
	account  string
	ttl      time.Duration
	authDown bool
	clients  map[string]*client
	codes    map[string]*authCode
	tokens   map[string]*token
	issued   []string // every token value, in the order issued
	seen     []string // every bearer token presented to /mcp, in order
	counts   Counts
}

// New starts both servers; t.Cleanup closes them.
func New(t testing.TB, o Options) *Fixture {
	t.Helper()
	f := &Fixture{
		opts:     o,
		scopes:   slices.Clone(o.Scopes),
		account:  "alice",
		ttl:      o.TokenTTL,
		authDown: o.AuthDown,
		clients:  make(map[string]*client),
		codes:    make(map[string]*authCode),
		tokens:   make(map[string]*token),
	}
	if len(f.scopes) == 0 {
		f.scopes = []string{"mcp:read"}
	}
	if f.ttl <= 0 {
		f.ttl = time.Hour
	}
	if o.ClientID != "" {
		method := "" // either client_secret_basic or client_secret_post
		if o.ClientSecret == "" {
			method = "none"
		}
		f.clients[o.ClientID] = &client{id: o.ClientID, secret: o.ClientSecret, authMethod: method, anyLoopback: true}
	}

	// Each listener exists before its server starts, so both origins are
	// known (and stored) before any handler can run.
	f.as = httptest.NewUnstartedServer(f.authServer())
	f.rs = httptest.NewUnstartedServer(f.resourceServer())
	f.issuer = "http://" + f.as.Listener.Addr().String()
	f.mcpOrigin = "http://" + f.rs.Listener.Addr().String()
	f.as.Start()
	f.rs.Start()
	t.Cleanup(f.close)
	return f
}

// close ends every MCP session, then both servers. Closing the client
// connections first ends any stream still held open (a standalone SSE GET),
// which would otherwise keep httptest's Close waiting.
func (f *Fixture) close() {
	for ss := range f.mcpServer.Sessions() {
		_ = ss.Close()
	}
	f.rs.CloseClientConnections()
	f.rs.Close()
	f.as.CloseClientConnections()
	f.as.Close()
}

// MCPURL is the protected MCP endpoint, http://127.0.0.1:PORT/mcp.
func (f *Fixture) MCPURL() string { return f.mcpOrigin + "/mcp" }

// Issuer is the authorization server's issuer URL, http://127.0.0.1:PORT2,
// a different server and port from the MCP one.
func (f *Fixture) Issuer() string { return f.issuer }

// ResourceMetadataURL is the protected resource metadata URL that the MCP
// server names in its WWW-Authenticate challenges.
func (f *Fixture) ResourceMetadataURL() string {
	return f.mcpOrigin + "/.well-known/oauth-protected-resource/mcp"
}

// Revoke makes every access and refresh token of account stop working.
func (f *Fixture) Revoke(account string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tk := range f.tokens {
		if tk.account == account {
			tk.revoked = true
		}
	}
}

// RevokeAll makes every token issued so far stop working.
func (f *Fixture) RevokeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tk := range f.tokens {
		tk.revoked = true
	}
}

// SetAuthDown makes every endpoint of the authorization server answer 503
// (down) or work again.
func (f *Fixture) SetAuthDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authDown = down
}

// SetTokenTTL sets the lifetime of the access tokens issued from now on
// (those already issued keep theirs); 0 means 1h.
func (f *Fixture) SetTokenTTL(d time.Duration) {
	if d <= 0 {
		d = time.Hour
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ttl = d
}

// SetAccount sets the account that authorizations from now on log in as
// (the /authorize auto-approval); it is "alice" until set.
func (f *Fixture) SetAccount(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.account = name
}

// Tokens are every access token and refresh token issued so far, in the
// order issued, for tests that assert a token never leaks.
func (f *Fixture) Tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.issued)
}

// SeenTokens are the bearer tokens the MCP endpoint received, valid or not,
// in order.
func (f *Fixture) SeenTokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// Counts says how many times each thing happened so far.
func (f *Fixture) Counts() Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts
}

// IssueToken mints an access token without any flow: bound to account, to
// resource (the MCP URL, or another one to test the audience check) and to
// scopes, with the current TTL and a client id of "oauthtest". It appears
// in Tokens like any other.
func (f *Fixture) IssueToken(account, resource string, scopes ...string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.newToken(false, account, "oauthtest", resource, scopes, newFamily())
}

// writeJSON answers status with v as JSON, never cached (RFC 6749 §5.1).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
