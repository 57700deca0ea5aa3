// Package authtest is a loopback OAuth authorization server for tests of
// auth.Verifier and of the HTTP server that uses it, as net/http/httptest
// is a server for tests. It is not for a server's own use.
package authtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// Issuer is a loopback OAuth authorization server made by the test: its
// metadata (RFC 8414), its JWKS, and keys it signs with; Rotate replaces
// its key with a new one (a new kid).
type Issuer struct {
	*httptest.Server
	t testing.TB

	hits chan struct{} // a value for each JWKS request, as it comes

	mu       sync.Mutex
	keys     []jwk.Key         // private; the first signs
	served   int               // JWKS fetches
	down     bool              // the JWKS answers 503
	hold     chan struct{}     // not nil: a JWKS request waits for it to close (or its client to go)
	redirect map[string]string // a path's requests redirect to its URL
}

// NewIssuer starts an issuer, closed when t ends.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{t: t, hits: make(chan struct{}, 64)}
	is.Rotate("k1")
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
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": is.Token(r.FormValue("resource"), id, scope, now, now.Add(time.Hour)),
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

// Rotate makes a new signing key, kid, and keeps the old ones published.
func (is *Issuer) Rotate(kid string) {
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

// Token is an access token signed with the current key, of the issuer,
// for aud, with scope, valid from nbf to exp.
func (is *Issuer) Token(aud, sub, scope string, nbf, exp time.Time) string {
	is.t.Helper()
	return is.TokenAs(is.URL, aud, sub, scope, nbf, exp)
}

// TokenAs is Token, its issuer claim iss: signed with this issuer's key,
// it claims to be another's.
func (is *Issuer) TokenAs(iss, aud, sub, scope string, nbf, exp time.Time) string {
	is.t.Helper()
	b := jwt.NewBuilder().Issuer(iss).Audience([]string{aud}).Subject(sub).IssuedAt(time.Now()).NotBefore(nbf).Expiration(exp)
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

// Forged are the classic forgeries of a token: alg none, and HS256 keyed
// with the issuer's public key (as a verifier that trusts the header's
// alg would take it).
func (is *Issuer) Forged(aud string) (none, hmac string) {
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

// UnknownKid is a token of a kid no issuer has, the i-th.
func UnknownKid(i int) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"k-`+strings.Repeat("x", i)+`"}`)) + "." + enc([]byte(`{"sub":"m"}`)) + "." + enc([]byte("sig"))
}

// Served is how many times the issuer was asked for its keys.
func (is *Issuer) Served() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.served
}

// WaitHit waits for a JWKS request to come to the issuer.
func (is *Issuer) WaitHit(t testing.TB) {
	t.Helper()
	select {
	case <-is.hits:
	case <-time.After(30 * time.Second):
		t.Fatal("the issuer was not asked for its keys")
	}
}

// HoldKeys makes the issuer's JWKS requests wait; the function returned
// lets them go.
func (is *Issuer) HoldKeys() (release func()) {
	hold := make(chan struct{})
	is.mu.Lock()
	is.hold = hold
	is.mu.Unlock()
	return func() {
		is.mu.Lock()
		is.hold = nil
		is.mu.Unlock()
		close(hold)
	}
}

// SetDown makes the JWKS answer 503 (down) or its keys again.
func (is *Issuer) SetDown(down bool) {
	is.mu.Lock()
	is.down = down
	is.mu.Unlock()
}

// Redirect makes the requests for path redirect to the URL to.
func (is *Issuer) Redirect(path, to string) {
	is.mu.Lock()
	is.redirect = map[string]string{path: to}
	is.mu.Unlock()
}
