package auth

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
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/cruciblehq/crucible/config"
)

// With serve.oauth the HTTP server is an OAuth 2.1 resource server, as the
// MCP authorization spec (2025-11-25) has it: it takes the access tokens
// (JWTs) of one issuer whose signature, issuer, audience (its own resource
// URL, RFC 8707), times and scopes hold; its Protected Resource Metadata
// (RFC 9728) and its challenges are the server's. The JOSE work is
// lestrrat-go/jwx (v3): a maintained library that verifies with the keys of a JWKS and never by
// the token's own word (no "none", no HMAC with a public key), whose
// parsing we do not write ourselves.

// Bounds of the issuer's keys, and of a token's times.
const (
	keysMaxAge   = 15 * time.Minute // fetched again once older
	KeysMinGap   = 30 * time.Second // from the end of one fetch to the start of the next
	fetchTimeout = 10 * time.Second // a whole fetch: metadata and JWKS
	maxFetched   = 1 << 20          // a metadata or JWKS document
	Skew         = time.Minute      // for exp, nbf and iat
)

// Verifier checks the access tokens of one issuer: whose they are.
//
// Its keys are fetched when it is made, and again when they are old or a
// token names a kid not among them (a rotation). A fetch is the
// verifier's, not a request's: it runs on the verifier's context with a
// timeout of its own, one at a time, and a request that needs it waits
// for it only as long as its own context lets it; so a client that hangs
// up cancels nothing, and the gap after a fetch, which bounds what tokens
// of made-up kids can make the issuer do, follows only a fetch that ended
// by itself. Until keys are had every token of the issuer is refused.
type Verifier struct {
	cfg     config.OAuth
	clients atomic.Pointer[map[string]map[string]string] // the clients known by claims, by name
	http    *http.Client
	log     *slog.Logger    // the operator's: why the keys could not be had
	ctx     context.Context // the fetches'; ends with the server

	mu       sync.Mutex
	now      func() time.Time // time.Now, or a test's (SetClock)
	keys     jwk.Set
	fetched  time.Time     // when keys were fetched
	ended    time.Time     // when the last fetch ended, well or not
	fetching chan struct{} // closed when the fetch under way ends; nil when none

	jwksURL string // found once; only the one fetch under way uses it
}

// NewVerifier makes the verifier of cfg's serve.oauth and starts
// fetching its issuer's keys; ctx bounds its fetches.
func NewVerifier(ctx context.Context, cfg *config.Config, log *slog.Logger) *Verifier {
	v := &Verifier{cfg: cfg.Serve.OAuth, log: log, ctx: ctx, now: time.Now}
	// No redirect is followed: the URLs are the operator's, or the
	// issuer's metadata's, and a redirect would take the keys from
	// wherever the answer says. Refusing them all is simpler than
	// telling a same-host https redirect from another, and an issuer
	// serves these documents where it says they are.
	v.http = &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("redirected to %s: redirects are refused (set serve.oauth.jwks_url to where the keys are)", req.URL.Redacted())
	}}
	v.SetClients(cfg)
	v.mu.Lock()
	v.startFetch()
	v.mu.Unlock()
	return v
}

// SetClients makes cfg's clients known by claims the ones tokens are
// matched to, from the next token verified: a reload's.
func (v *Verifier) SetClients(cfg *config.Config) {
	clients := map[string]map[string]string{}
	for name, c := range cfg.Clients {
		if c.OAuth != nil {
			clients[name] = c.OAuth
		}
	}
	v.clients.Store(&clients)
}

// SetClock makes now the verifier's clock, called under its lock from
// then on: a test's, which moves past KeysMinGap without sleeping.
func (v *Verifier) SetClock(now func() time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.now = now
}

// The kinds of error of Verify, which the server answers differently: an
// invalid token (401: a new token may do), and a valid one whose holder
// may not go on (403), for want of a scope or because its claims are no
// client's. ErrInvalidToken is the SDK's, whose middleware answers it.
var (
	ErrInvalidToken      = sdkauth.ErrInvalidToken
	ErrInsufficientScope = errors.New("the token lacks the scope")
	ErrNotClient         = errors.New("the token's holder is not a client of this server")
)

// Verify checks token and returns its holder: the client its claims
// match, or, when no client is known by claims, "oauth:" and its subject;
// and its expiry, with ErrInsufficientScope and ErrNotClient too. Its
// errors are safe to show the token's holder.
func (v *Verifier) Verify(ctx context.Context, token string) (client string, expires time.Time, err error) {
	kid := ""
	if msg, err := jws.Parse([]byte(token)); err == nil && len(msg.Signatures()) == 1 {
		kid, _ = msg.Signatures()[0].ProtectedHeaders().KeyID()
	}
	keys, err := v.keySet(ctx, kid)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: the issuer's keys cannot be had now", ErrInvalidToken)
	}
	tok, err := jwt.Parse([]byte(token),
		jwt.WithKeySet(keys, jws.WithInferAlgorithmFromKey(true)),
		jwt.WithValidate(true),
		jwt.WithIssuer(v.cfg.Issuer),
		jwt.WithAudience(v.cfg.Audience),
		jwt.WithAcceptableSkew(Skew),
		jwt.WithRequiredClaim("exp"),
	)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %s", ErrInvalidToken, tokenProblem(err))
	}
	claims := map[string]any{}
	for _, k := range tok.Keys() {
		var val any
		if tok.Get(k, &val) == nil {
			claims[k] = val
		}
	}
	expires, _ = tok.Expiration()
	scopes := scopesOf(claims)
	for _, sc := range v.cfg.Scopes {
		if !slices.Contains(scopes, sc) {
			return "", expires, fmt.Errorf("%w %s", ErrInsufficientScope, sc)
		}
	}
	clients := *v.clients.Load()
	if len(clients) == 0 {
		sub, _ := tok.Subject()
		return "oauth:" + sub, expires, nil
	}
	for _, name := range slices.Sorted(maps.Keys(clients)) {
		if claimsMatch(claims, clients[name]) {
			return name, expires, nil
		}
	}
	return "", expires, ErrNotClient
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
// way, the last ended KeysMinGap ago or more, and the keys are old, or
// none, or kid is not among them; and it waits for the fetch under way
// (or ctx) only when kid is not among the keys: old keys still serve.
func (v *Verifier) keySet(ctx context.Context, kid string) (jwk.Set, error) {
	v.mu.Lock()
	known := v.keys != nil
	if known && kid != "" {
		_, known = v.keys.LookupKeyID(kid)
	}
	now := v.now()
	if v.fetching == nil && now.Sub(v.ended) >= KeysMinGap && (!known || now.Sub(v.fetched) > keysMaxAge) {
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
func (v *Verifier) startFetch() {
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
func (v *Verifier) fetch(ctx context.Context) (jwk.Set, error) {
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
func (v *Verifier) discover(ctx context.Context) (string, error) {
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

func (v *Verifier) get(ctx context.Context, u string) ([]byte, error) {
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
