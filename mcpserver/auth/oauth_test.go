package auth

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/mcpserver/auth/authtest"
)

const aud = "https://crucible.example.com/mcp"

// verifier is a Verifier of is's tokens for aud with the scope crucible,
// its clients known by claims, once its first fetch of the keys ended.
func verifier(t *testing.T, is *authtest.Issuer, clients map[string]config.Client) *Verifier {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := &config.Config{Clients: clients}
	cfg.Serve.OAuth = config.OAuth{Issuer: is.URL, Audience: aud, Scopes: []string{"crucible"}}
	v := NewVerifier(ctx, cfg, slog.New(slog.DiscardHandler))
	v.mu.Lock()
	fetching := v.fetching
	v.mu.Unlock()
	if fetching != nil { // nil: the first fetch has ended already
		<-fetching // the first fetch's end: the keys it got are the issuer's now
	}
	return v
}

// Each token's answer is of its kind, in words that quote no token: the
// server answers ErrInvalidToken with 401, the others with 403.
func TestVerifyKinds(t *testing.T) {
	is := authtest.NewIssuer(t)
	v := verifier(t, is, nil)
	now, hour := time.Now(), time.Hour
	none, hmac := is.Forged(aud)
	for _, c := range []struct {
		name, token, client string
		kind                error
		msg                 string
	}{
		{"valid", is.Token(aud, "alice", "crucible other", now.Add(-time.Minute), now.Add(hour)), "oauth:alice", nil, ""},
		{"wrong aud", is.Token("https://other.example.com/mcp", "alice", "crucible", now, now.Add(hour)), "", ErrInvalidToken, "invalid token: it is not for this server (aud)"},
		{"another issuer", is.TokenAs("https://other.example.com", aud, "alice", "crucible", now, now.Add(hour)), "", ErrInvalidToken, "invalid token: it is not of this server's issuer"},
		{"expired", is.Token(aud, "alice", "crucible", now.Add(-2*hour), now.Add(-hour)), "", ErrInvalidToken, "invalid token: it has expired"},
		{"nbf ahead", is.Token(aud, "alice", "crucible", now.Add(hour), now.Add(2*hour)), "", ErrInvalidToken, "invalid token: it is not valid yet (nbf)"},
		{"alg none", none, "", ErrInvalidToken, "invalid token: its signature does not verify with the issuer's keys, or it is not a JWT"},
		{"HS256 keyed with the public key", hmac, "", ErrInvalidToken, "invalid token: its signature does not verify with the issuer's keys, or it is not a JWT"},
		{"no scope", is.Token(aud, "alice", "other", now, now.Add(hour)), "", ErrInsufficientScope, "the token lacks the scope crucible"},
	} {
		client, _, err := v.Verify(context.Background(), c.token)
		if client != c.client || !errors.Is(err, c.kind) || (err != nil) != (c.kind != nil) || (err != nil && err.Error() != c.msg) {
			t.Errorf("%s: %q, %v; want %q, %q", c.name, client, err, c.client, c.msg)
		}
	}
}

// With clients known by claims, a token is its client's when its claims
// match, and a valid token of nobody's is ErrNotClient.
func TestVerifyClients(t *testing.T) {
	is := authtest.NewIssuer(t)
	v := verifier(t, is, map[string]config.Client{"alice": {OAuth: map[string]string{"sub": "alice@example.com"}}})
	now := time.Now()
	if client, _, err := v.Verify(context.Background(), is.Token(aud, "alice@example.com", "crucible", now, now.Add(time.Hour))); client != "alice" || err != nil {
		t.Errorf("alice: %q, %v", client, err)
	}
	if client, _, err := v.Verify(context.Background(), is.Token(aud, "mallory@example.com", "crucible", now, now.Add(time.Hour))); client != "" || !errors.Is(err, ErrNotClient) {
		t.Errorf("a valid token of no client: %q, %v", client, err)
	}
}

// A rotation (a kid the verifier has not seen) makes it fetch the keys
// again once KeysMinGap has passed on its clock, and not before.
func TestVerifyRotation(t *testing.T) {
	is := authtest.NewIssuer(t)
	v := verifier(t, is, nil)
	v.mu.Lock()
	base := v.now()
	var d time.Duration
	v.now = func() time.Time { return base.Add(d) } // read and moved under v.mu
	v.mu.Unlock()
	is.Rotate("k2")
	now := time.Now()
	rotated := is.Token(aud, "alice", "crucible", now, now.Add(time.Hour))
	if _, _, err := v.Verify(context.Background(), rotated); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("a rotated key within KeysMinGap of the first fetch: %v, want ErrInvalidToken", err)
	}
	v.mu.Lock()
	d = KeysMinGap
	v.mu.Unlock()
	if client, _, err := v.Verify(context.Background(), rotated); client != "oauth:alice" || err != nil {
		t.Errorf("a rotated key once KeysMinGap has passed: %q, %v", client, err)
	}
	if n := is.Served(); n != 2 {
		t.Errorf("the issuer was asked for its keys %d times, want 2", n)
	}
}
