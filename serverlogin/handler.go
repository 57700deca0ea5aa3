package serverlogin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// earlyRefresh is how long before its expiry a token is refreshed, so
// that it does not expire on the way.
const earlyRefresh = 10 * time.Second

// maxSeen bounds the tokens a handler remembers to redact.
const maxSeen = 16

// Handler is the tool bridge's OAuth handler (the SDK's auth.OAuthHandler)
// for one account of one server: it sends the account's stored token,
// refreshes it when it expires or the server refuses it, and writes the
// new one back at once. It never opens a browser: a login it lacks, or one
// that cannot be refreshed, is a NeedsLogin.
type Handler struct {
	s       *Settings
	account string
	cc      *extauth.ClientCredentialsHandler // with s.ClientCredentials

	mu   sync.Mutex
	rec  *Record  // the login in use; nil: none found yet
	seen []string // the tokens handed out, to redact
}

var _ auth.OAuthHandler = (*Handler)(nil)

// NewHandler is the handler of account's login to s's server.
func NewHandler(s *Settings, account string) (*Handler, error) {
	h := &Handler{s: s, account: account}
	if s.ClientCredentials {
		cc, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: s.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: s.ClientSecret}},
			HTTPClient:  s.httpClient(),
		})
		if err != nil {
			return nil, fmt.Errorf("server %s: %w", s.Server, err)
		}
		h.cc = cc
	}
	return h, nil
}

// TokenSource is the login's token source; nil when there is no login
// yet, so that the request goes without one and its 401 comes to
// Authorize.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	if h.cc != nil {
		ts, err := h.cc.TokenSource(ctx)
		if ts == nil || err != nil {
			return ts, err
		}
		return seenSource{h, ts}, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rec == nil {
		h.reload() // a login made since
	}
	if h.rec == nil {
		return nil, nil
	}
	return seenSource{h, tokenSource{h}}, nil
}

// reload reads the stored login: nil if there is none (a logout), or it
// is for another URL. h.mu is held.
func (h *Handler) reload() {
	r, err := h.s.Store.Load(h.s.Server, h.account)
	if err != nil {
		slog.Warn("server login", "server", h.s.Server, "err", err)
	}
	if r != nil && r.URL != h.s.URL {
		r = nil
	}
	h.rec = r
}

type tokenSource struct{ h *Handler }

func (t tokenSource) Token() (*oauth2.Token, error) { return t.h.token("") }

// seenSource remembers each token it hands out.
type seenSource struct {
	h    *Handler
	next oauth2.TokenSource
}

func (s seenSource) Token() (*oauth2.Token, error) {
	t, err := s.next.Token()
	if err == nil && t != nil {
		s.h.remember(t.AccessToken, t.RefreshToken)
	}
	return t, err
}

func (h *Handler) remember(vs ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, v := range vs {
		if v != "" && !slices.Contains(h.seen, v) {
			h.seen = append(h.seen, v)
		}
	}
	if len(h.seen) > maxSeen {
		h.seen = slices.Clone(h.seen[len(h.seen)-maxSeen:])
	}
}

// Secrets are what the handler holds that a server's answers must not
// carry to the code: the tokens it has handed out, and the client's
// secrets.
func (h *Handler) Secrets() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.seen)
	if h.rec != nil {
		out = append(out, h.rec.AccessToken, h.rec.RefreshToken, h.rec.ClientSecret)
	}
	return slices.DeleteFunc(append(out, h.s.ClientSecret), func(v string) bool { return v == "" })
}

func valid(t *oauth2.Token) bool {
	return t.AccessToken != "" && (t.Expiry.IsZero() || time.Until(t.Expiry) > earlyRefresh)
}

// token is the login's access token, refreshed first if it expires soon
// or is refused, the one the server just refused.
func (h *Handler) token(refused string) (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rec == nil {
		h.reload()
		if h.rec == nil {
			return nil, &NeedsLogin{Server: h.s.Server, Account: h.account}
		}
	}
	if t := h.rec.token(); valid(t) && t.AccessToken != refused {
		return t, nil
	}
	return h.refresh(refused)
}

// refresh gets a new access token with the refresh token, under the
// login's lock, and saves it at once. h.mu is held.
func (h *Handler) refresh(refused string) (*oauth2.Token, error) {
	unlock, err := h.s.Store.lock(h.s.Server, h.account)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another process (or a login) may have refreshed it meanwhile.
	h.reload()
	if h.rec == nil {
		return nil, &NeedsLogin{Server: h.s.Server, Account: h.account}
	}
	if t := h.rec.token(); valid(t) && t.AccessToken != refused {
		return t, nil
	}
	why := "its token expired"
	if refused != "" {
		why = "the server refused its token"
	}
	if h.rec.RefreshToken == "" {
		return nil, &NeedsLogin{Server: h.s.Server, Account: h.account, Why: why + ", and there is no refresh token"}
	}
	cfg := oauth2.Config{ClientID: h.rec.ClientID, ClientSecret: cmpOr(h.rec.ClientSecret, h.s.ClientSecret),
		Endpoint: oauth2.Endpoint{TokenURL: h.rec.TokenURL, AuthStyle: h.rec.AuthStyle}, Scopes: h.rec.Scopes}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, h.s.httpClient())
	t, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: h.rec.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			return nil, &NeedsLogin{Server: h.s.Server, Account: h.account, Why: why + ", and the authorization server refused to refresh it"}
		}
		return nil, fmt.Errorf("server %s: refreshing the login: %s", h.s.Server, retrieveError(err))
	}
	h.rec.setToken(t)
	if err := h.s.Store.Save(h.s.Server, h.account, h.rec); err != nil {
		// The new token works for this process; the next may need a login.
		slog.Warn("server login", "server", h.s.Server, "err", err)
	}
	return h.rec.token(), nil
}

// retrieveError says why a token request failed, without the body of the
// answer, which the authorization server wrote.
func retrieveError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return "the authorization server answered " + word(re.ErrorCode)
		}
		if re.Response != nil {
			return "the authorization server answered " + re.Response.Status
		}
	}
	return err.Error()
}

// word is an error code as the authorization server wrote it, if it is
// one (RFC 6749's are printable ASCII, short), else a stand-in.
func word(s string) string {
	if len(s) > 64 || strings.IndexFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return "an error code that is not one"
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Authorize answers a 401 or 403 from the server: a refused token is
// refreshed (the request is then sent again); no login, a login that
// cannot be refreshed, and a 403 asking for more scope are a NeedsLogin
// (the scope asked for is kept for the next login).
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if h.cc != nil {
		// Its token source keeps the context for its refreshes, which must
		// outlive this request; its requests are bounded by the client's
		// timeout.
		return h.cc.Authorize(context.WithoutCancel(ctx), req, resp)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden {
		scope, ok := insufficientScope(challenges)
		if !ok {
			return nil // not ours to mend: sent again, it fails as it is
		}
		h.stepUp(strings.Fields(scope))
		return &NeedsLogin{Server: h.s.Server, Account: h.account, Why: "it asks for more scope: " + scope}
	}
	sent, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if sent == "" {
		h.mu.Lock()
		h.reload()
		found := h.rec != nil
		h.mu.Unlock()
		if found {
			return nil // a login made since: sent again with it
		}
		return &NeedsLogin{Server: h.s.Server, Account: h.account}
	}
	_, err := h.token(sent)
	return err
}

func insufficientScope(cs []oauthex.Challenge) (scope string, ok bool) {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
			return c.Params["scope"], true
		}
	}
	return "", false
}

// stepUp keeps the scopes a server asked for, for the next login.
func (h *Handler) stepUp(scopes []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rec == nil || len(scopes) == 0 {
		return
	}
	unlock, err := h.s.Store.lock(h.s.Server, h.account)
	if err != nil {
		return
	}
	defer unlock()
	if h.reload(); h.rec == nil {
		return
	}
	for _, s := range scopes {
		if !slices.Contains(h.rec.StepUp, s) && !slices.Contains(h.rec.Scopes, s) {
			h.rec.StepUp = append(h.rec.StepUp, s)
		}
	}
	if err := h.s.Store.Save(h.s.Server, h.account, h.rec); err != nil {
		slog.Warn("server login", "server", h.s.Server, "err", err)
	}
}
