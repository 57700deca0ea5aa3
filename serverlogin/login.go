package serverlogin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Login logs account in to s's server afresh, whatever login it had, and
// saves the login; it returns how many tools the server lists. say gets
// the lines meant for the person logging in (the URL to open); browse, if
// not nil, opens the URL (runs $BROWSER). With the client credentials
// grant no one is asked: the login is checked, and nothing is saved.
//
// A server that lets Crucible in without a token on initialize (the 401
// may come only on tools/list) still gets one: its protected resource
// metadata is looked up as a 401 would have it.
func Login(ctx context.Context, s *Settings, account string, say func(string), browse func(string) error) (int, error) {
	if s.ClientCredentials {
		h, err := NewHandler(s, account)
		if err != nil {
			return 0, err
		}
		return listTools(ctx, s, h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("listening for the login's redirect on 127.0.0.1: %w", err)
	}
	got := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(s.Server, got), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()

	return authorize(ctx, s, account, "http://"+ln.Addr().String()+"/callback",
		func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			say(fmt.Sprintf("To log in to server %s, open this URL in a browser:\n\n  %s\n", s.Server, a.URL))
			if browse != nil {
				if err := browse(a.URL); err != nil {
					say(fmt.Sprintf("($BROWSER did not open it: %v)", err))
				}
			}
			return awaitCallback(ctx, got)
		})
}

// awaitCallback waits for the redirect that ends an authorization.
func awaitCallback(ctx context.Context, got <-chan callback) (*auth.AuthorizationResult, error) {
	select {
	case cb := <-got:
		if cb.err != "" {
			return nil, fmt.Errorf("the authorization server refused the login: %s", describe(cb.err, cb.desc))
		}
		return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no login came back from the browser in time: %w", ctx.Err())
	}
}

// authorize logs account in to s's server with the authorization code
// grant, its redirect to redirect, fetch getting the code; it saves the
// login and returns how many tools the server lists.
func authorize(ctx context.Context, s *Settings, account, redirect string, fetch auth.AuthorizationCodeFetcher) (int, error) {
	var saved *Record
	ac, err := auth.NewAuthorizationCodeHandler(s.codeConfig(account, redirect, fetch, func(r *Record) { saved = r }))
	if err != nil {
		return 0, fmt.Errorf("server %s: %w", s.Server, err)
	}
	h := &loginHandler{s: s, inner: ac}
	n, err := listTools(ctx, s, h)
	if err != nil {
		return 0, err
	}
	if saved == nil {
		if !s.publishesMetadata(ctx) {
			return 0, fmt.Errorf("server %s asks for no login: it answered without one, and publishes no protected resource metadata", s.Server)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, http.NoBody)
		if err != nil {
			return 0, err
		}
		if err := ac.Authorize(ctx, req, &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody, Request: req}); err != nil {
			return 0, fmt.Errorf("server %s: %w", s.Server, err)
		}
	}
	return n, nil
}

// maxAuthorizations bounds the authorizations of one login: the first,
// and steps up to more scope.
const maxAuthorizations = 3

// loginHandler is the SDK's authorization code handler, checked: the
// server's protected resource metadata must be for its own URL, and an
// authorization that failed is not tried again in the same login.
type loginHandler struct {
	s     *Settings
	inner *auth.AuthorizationCodeHandler
	mu    sync.Mutex
	tries int
	err   error // of the first failure
}

func (h *loginHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return h.inner.TokenSource(ctx)
}

func (h *loginHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		_ = resp.Body.Close()
		return h.err
	}
	h.tries++
	if h.tries > maxAuthorizations {
		_ = resp.Body.Close()
		h.err = fmt.Errorf("server %s still refuses after %d authorizations", h.s.Server, maxAuthorizations)
		return h.err
	}
	err := h.s.checkResource(ctx, resp)
	if err == nil {
		err = h.inner.Authorize(ctx, req, resp)
	} else {
		_ = resp.Body.Close()
	}
	h.err = err
	return err
}

// checkResource refuses a server whose protected resource metadata (at
// the URL its challenge names) is for another resource than its URL: a
// token got for that would be for another audience (RFC 8707, RFC 9728
// 3.3). The SDK skips such metadata and goes on to guess; a login stops.
func (s *Settings) checkResource(ctx context.Context, resp *http.Response) error {
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	meta := ""
	for _, c := range cs {
		if u := c.Params["resource_metadata"]; u != "" && meta == "" {
			meta = u
		}
	}
	if meta == "" {
		return nil // the well-known places, which the SDK checks
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, meta, http.NoBody)
	if err != nil {
		return fmt.Errorf("server %s: its resource_metadata URL does not parse", s.Server)
	}
	r, err := s.httpClient().Do(req)
	if err != nil {
		return nil // the SDK's own fetch reports it
	}
	defer func() { _ = r.Body.Close() }()
	var prm struct {
		Resource string `json:"resource"`
	}
	if r.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&prm) != nil || prm.Resource == "" {
		return nil
	}
	if strings.TrimRight(prm.Resource, "/") != strings.TrimRight(s.URL, "/") {
		return fmt.Errorf("server %s: its protected resource metadata is for another resource (%s), not its URL: a token for it would be for another audience", s.Server, prm.Resource)
	}
	return nil
}

// codeConfig is the SDK's authorization code handler's configuration:
// the client as s names it, redirect, fetch to get the code, and saved
// told of each login saved.
func (s *Settings) codeConfig(account, redirect string, fetch auth.AuthorizationCodeFetcher, saved func(*Record)) *auth.AuthorizationCodeHandlerConfig {
	var stepUp []string
	if prev, err := s.Store.Load(s.Server, account); err == nil && prev != nil && prev.URL == s.URL {
		stepUp = prev.StepUp
	}
	c := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: fetch,
		Client:                   s.httpClient(),
		RequestRefreshToken:      true,
		ScopeFilter: func(found []string) []string {
			want := found
			if len(s.Scopes) > 0 {
				want = slices.Clone(s.Scopes)
			}
			for _, x := range stepUp {
				if !slices.Contains(want, x) {
					want = append(want, x)
				}
			}
			return want
		},
		NewTokenSource: func(_ context.Context, oc *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			r := &Record{URL: s.URL, ClientID: oc.ClientID, TokenURL: oc.Endpoint.TokenURL, AuthStyle: oc.Endpoint.AuthStyle, Scopes: oc.Scopes}
			if oc.ClientSecret != s.ClientSecret {
				r.ClientSecret = oc.ClientSecret // a registered client's: the config has none
			}
			r.setToken(t)
			if err := s.Store.Save(s.Server, account, r); err != nil {
				return nil, err
			}
			saved(r)
			return oauth2.StaticTokenSource(t), nil
		},
	}
	dynamic := &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect}, ClientName: "Crucible", TokenEndpointAuthMethod: "none",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}}}
	switch {
	case s.ClientID == "":
		c.DynamicClientRegistrationConfig = dynamic
	case s.isMetadataDocument():
		c.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: s.ClientID}
		c.DynamicClientRegistrationConfig = dynamic // where the server takes no such document
	default:
		c.PreregisteredClient = &oauthex.ClientCredentials{ClientID: s.ClientID}
		if s.ClientSecret != "" {
			c.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: s.ClientSecret}
		}
	}
	return c
}

// publishesMetadata says whether the server publishes protected resource
// metadata (RFC 9728) where a client looks without a 401 to point at it.
func (s *Settings) publishesMetadata(ctx context.Context) bool {
	u, err := url.Parse(s.URL)
	if err != nil {
		return false
	}
	origin := u.Scheme + "://" + u.Host
	for _, w := range []struct{ path, resource string }{
		{"/.well-known/oauth-protected-resource" + strings.TrimRight(u.Path, "/"), s.URL},
		{"/.well-known/oauth-protected-resource", origin},
	} {
		if prm, err := oauthex.GetProtectedResourceMetadata(ctx, origin+w.path, w.resource, s.httpClient()); err == nil && prm != nil {
			return true
		}
	}
	return false
}

func (s *Settings) isMetadataDocument() bool { return strings.HasPrefix(s.ClientID, "https://") }

// listTools connects to the server with h and counts its tools.
func listTools(ctx context.Context, s *Settings, h auth.OAuthHandler) (int, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "crucible", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, OAuthHandler: h,
		MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return 0, fmt.Errorf("server %s: %w", s.Server, cause(err))
	}
	defer func() { _ = sess.Close() }()
	n := 0
	for _, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return 0, fmt.Errorf("server %s: listing its tools: %w", s.Server, cause(err))
		}
		n++
	}
	return n, nil
}

// cause is the login's own error inside the SDK's wrapping, where there
// is one.
func cause(err error) error {
	var n *NeedsLogin
	if errors.As(err, &n) {
		return n
	}
	return err
}

// describe is a refusal the authorization server redirected with: its
// code, and its description cut short and without control characters.
func describe(code, desc string) string {
	desc = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, desc)
	if len(desc) > 200 {
		desc = desc[:200] + "..."
	}
	if desc == "" {
		return word(code)
	}
	return word(code) + " (" + desc + ")"
}

// Logout forgets account's login to s's server, and says whether there was
// one.
func Logout(s *Settings, account string) (bool, error) { return s.Store.Remove(s.Server, account) }

// callback is what the authorization server's redirect brought back.
type callback struct{ code, state, iss, err, desc string }

// callbackHandler sends each redirect to /callback on got, unless one is
// there already, not yet taken; the SDK checks its state and issuer.
func callbackHandler(server string, got chan<- callback) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		cb := callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss"), err: q.Get("error"), desc: q.Get("error_description")}
		first := false
		select {
		case got <- cb: // one waits at a time: the SDK checks its state
			first = true
		default:
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case !first:
			http.Error(w, "This login has already been answered.", http.StatusConflict)
		case cb.err != "":
			fmt.Fprintf(w, "The login to server %s was refused. You can close this tab.\n", server)
		default:
			fmt.Fprintf(w, "Crucible got the login to server %s. You can close this tab.\n", server)
		}
	})
}
