package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/cruciblehq/crucible/config"
)

// With serve.oauth the HTTP server is an OAuth 2.1 resource server, as the
// MCP authorization spec (2025-11-25) has it: it publishes its Protected
// Resource Metadata (RFC 9728), answers a request without a valid token
// with 401 and a challenge that points to it, and takes the access tokens
// (JWTs) of one issuer whose signature, issuer, audience (its own resource
// URL, RFC 8707) and times hold. The JOSE work is lestrrat-go/jwx (v3): a
// maintained library that verifies with the keys of a JWKS and never by
// the token's own word (no "none", no HMAC with a public key), whose
// parsing we do not write ourselves.

// Bounds of the issuer's keys.
const (
	keysMaxAge   = 15 * time.Minute // fetched again once older
	keysMinGap   = 30 * time.Second // from the end of one fetch to the start of the next
	fetchTimeout = 10 * time.Second // a whole fetch: metadata and JWKS
	oauthSkew    = time.Minute      // for exp, nbf and iat
	maxFetched   = 1 << 20          // a metadata or JWKS document
)

// oauthVerifier checks the access tokens of one issuer.
//
// Its keys are fetched when it is made, and again when they are old or a
// token names a kid not among them (a rotation). A fetch is the
// verifier's, not a request's: it runs on the verifier's context with a
// timeout of its own, one at a time, and a request that needs it waits
// for it only as long as its own context lets it; so a client that hangs
// up cancels nothing, and the gap after a fetch, which bounds what tokens
// of made-up kids can make the issuer do, follows only a fetch that ended
// by itself. Until keys are had every token of the issuer is refused.
type oauthVerifier struct {
	cfg     config.OAuth
	clients map[string]map[string]string // the clients known by claims, by name
	http    *http.Client
	log     *slog.Logger    // the operator's: why the keys could not be had
	ctx     context.Context // the fetches'; ends with the server

	mu       sync.Mutex
	now      func() time.Time // time.Now; a test's to change
	keys     jwk.Set
	fetched  time.Time     // when keys were fetched
	ended    time.Time     // when the last fetch ended, well or not
	fetching chan struct{} // closed when the fetch under way ends; nil when none

	jwksURL string // found once; only the one fetch under way uses it
}

// newOAuthVerifier makes the verifier of cfg's serve.oauth and starts
// fetching its issuer's keys; ctx bounds its fetches.
func newOAuthVerifier(ctx context.Context, cfg *config.Config, log *slog.Logger) *oauthVerifier {
	v := &oauthVerifier{cfg: cfg.Serve.OAuth, clients: map[string]map[string]string{}, log: log, ctx: ctx, now: time.Now}
	// No redirect is followed: the URLs are the operator's, or the
	// issuer's metadata's, and a redirect would take the keys from
	// wherever the answer says. Refusing them all is simpler than
	// telling a same-host https redirect from another, and an issuer
	// serves these documents where it says they are.
	v.http = &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("redirected to %s: redirects are refused (set serve.oauth.jwks_url to where the keys are)", req.URL.Redacted())
	}}
	for name, c := range cfg.Clients {
		if c.OAuth != nil {
			v.clients[name] = c.OAuth
		}
	}
	v.mu.Lock()
	v.startFetch()
	v.mu.Unlock()
	return v
}

// errNotClient is a valid token of no configured client.
var errNotClient = errors.New("the token's holder is not a client of this server")

// verify checks token and returns its holder's TokenInfo: UserID the
// client its claims match, or, when no client is known by claims,
// "oauth:" and its subject. Extra["oauth"] marks it as a token of the
// issuer, whose scopes then matter.
func (v *oauthVerifier) verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	kid := ""
	if msg, err := jws.Parse([]byte(token)); err == nil && len(msg.Signatures()) == 1 {
		kid, _ = msg.Signatures()[0].ProtectedHeaders().KeyID()
	}
	keys, err := v.keySet(ctx, kid)
	if err != nil {
		return nil, fmt.Errorf("%w: the issuer's keys cannot be had now", auth.ErrInvalidToken)
	}
	tok, err := jwt.Parse([]byte(token),
		jwt.WithKeySet(keys, jws.WithInferAlgorithmFromKey(true)),
		jwt.WithValidate(true),
		jwt.WithIssuer(v.cfg.Issuer),
		jwt.WithAudience(v.cfg.Audience),
		jwt.WithAcceptableSkew(oauthSkew),
		jwt.WithRequiredClaim("exp"),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, tokenProblem(err))
	}
	claims := map[string]any{}
	for _, k := range tok.Keys() {
		var val any
		if tok.Get(k, &val) == nil {
			claims[k] = val
		}
	}
	exp, _ := tok.Expiration()
	ti := &auth.TokenInfo{Expiration: exp, Scopes: scopesOf(claims), Extra: map[string]any{"oauth": true}}
	if len(v.clients) == 0 {
		sub, _ := tok.Subject()
		ti.UserID = "oauth:" + sub
		return ti, nil
	}
	for _, name := range slices.Sorted(maps.Keys(v.clients)) {
		if claimsMatch(claims, v.clients[name]) {
			ti.UserID = name
			return ti, nil
		}
	}
	ti.Extra["not_client"] = true
	return ti, nil
}

// tokenProblem says what is wrong with a token in words of our own: the
// library's may quote the token.
func tokenProblem(err error) string {
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return "it has expired"
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return "it is not valid yet (nbf)"
	case errors.Is(err, jwt.InvalidIssuerError()):
		return "it is not of this server's issuer"
	case errors.Is(err, jwt.InvalidAudienceError()):
		return "it is not for this server (aud)"
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return "it has no expiry (exp)"
	}
	return "its signature does not verify with the issuer's keys, or it is not a JWT"
}

// scopesOf are the token's scopes: "scope", a space-separated string, or
// "scp", a list.
func scopesOf(claims map[string]any) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	var out []string
	if l, ok := claims["scp"].([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// claimsMatch says whether claims hold every claim of want: equal, or,
// for a list claim, one of its values.
func claimsMatch(claims map[string]any, want map[string]string) bool {
	for k, w := range want {
		switch c := claims[k].(type) {
		case string:
			if c != w {
				return false
			}
		case []any:
			if !slices.ContainsFunc(c, func(x any) bool { s, ok := x.(string); return ok && s == w }) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// keySet returns the issuer's keys. It starts a fetch when none is under
// way, the last ended keysMinGap ago or more, and the keys are old, or
// none, or kid is not among them; and it waits for the fetch under way
// (or ctx) only when kid is not among the keys: old keys still serve.
func (v *oauthVerifier) keySet(ctx context.Context, kid string) (jwk.Set, error) {
	v.mu.Lock()
	known := v.keys != nil
	if known && kid != "" {
		_, known = v.keys.LookupKeyID(kid)
	}
	now := v.now()
	if v.fetching == nil && now.Sub(v.ended) >= keysMinGap && (!known || now.Sub(v.fetched) > keysMaxAge) {
		v.startFetch()
	}
	keys, wait := v.keys, v.fetching
	v.mu.Unlock()
	if !known && wait != nil {
		select {
		case <-wait:
		case <-ctx.Done(): // this request gives up; the fetch goes on for the others
			return nil, ctx.Err()
		}
		v.mu.Lock()
		keys = v.keys
		v.mu.Unlock()
	}
	if keys == nil {
		return nil, errors.New("the issuer's keys could not be fetched")
	}
	return keys, nil
}

// startFetch fetches the keys in the background; v.mu is held.
func (v *oauthVerifier) startFetch() {
	done := make(chan struct{})
	v.fetching = done
	go func() {
		ctx, cancel := context.WithTimeout(v.ctx, fetchTimeout)
		keys, err := v.fetch(ctx)
		cancel()
		if err != nil && v.ctx.Err() == nil {
			// The token's holder is told only that the keys cannot be
			// had; the operator, why (the URLs are the operator's).
			v.log.Warn("the OAuth issuer's keys could not be fetched; its tokens are refused", "issuer", v.cfg.Issuer, "error", err)
		}
		v.mu.Lock()
		if err == nil {
			v.keys, v.fetched = keys, v.now()
		}
		v.ended, v.fetching = v.now(), nil
		v.mu.Unlock()
		close(done)
	}()
}

// fetch gets the issuer's JWKS: from jwks_url, else from the issuer's
// metadata (RFC 8414, then OpenID discovery).
func (v *oauthVerifier) fetch(ctx context.Context) (jwk.Set, error) {
	if v.jwksURL == "" {
		v.jwksURL = v.cfg.JWKSURL
	}
	if v.jwksURL == "" {
		u, err := v.discover(ctx)
		if err != nil {
			return nil, err
		}
		v.jwksURL = u
	}
	b, err := v.get(ctx, v.jwksURL)
	if err != nil {
		return nil, err
	}
	return jwk.Parse(b)
}

// discover finds the issuer's jwks_uri in its metadata.
func (v *oauthVerifier) discover(ctx context.Context) (string, error) {
	iss, err := url.Parse(v.cfg.Issuer)
	if err != nil {
		return "", err
	}
	issPath := strings.TrimSuffix(iss.Path, "/")
	var why []string
	for _, u := range []string{
		iss.Scheme + "://" + iss.Host + "/.well-known/oauth-authorization-server" + issPath,
		strings.TrimSuffix(v.cfg.Issuer, "/") + "/.well-known/openid-configuration",
	} {
		b, err := v.get(ctx, u)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		var meta oauthex.AuthServerMeta
		if json.Unmarshal(b, &meta) != nil || strings.TrimSuffix(meta.Issuer, "/") != strings.TrimSuffix(v.cfg.Issuer, "/") || meta.JWKSURI == "" {
			why = append(why, u+": no metadata of this issuer with a jwks_uri")
			continue
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("the issuer publishes no metadata with a jwks_uri (set serve.oauth.jwks_url): %s", strings.Join(why, "; "))
}

func (v *oauthVerifier) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxFetched+1))
	if err == nil && len(b) > maxFetched {
		err = fmt.Errorf("%s: larger than %d bytes", u, maxFetched)
	}
	return b, err
}

// metadataURL is where the Protected Resource Metadata of resource is
// (RFC 9728 §3.1: the well-known path inserted before the resource's).
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
}

// resourceMetadata serves the server's Protected Resource Metadata.
func (s *Server) resourceMetadata() http.Handler {
	o := s.cfg.Serve.OAuth
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               o.Audience,
		AuthorizationServers:   []string{o.Issuer},
		ScopesSupported:        o.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Crucible",
	})
}
