package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/mcpserver/auth"
	"github.com/cruciblehq/crucible/mcpserver/auth/authtest"
)

// Attacks on the issuer's keys: a client that hangs up while they are
// fetched, a flood of tokens of made-up kids, an issuer's endpoint that
// redirects elsewhere.

// clock is a verifier's time, moved only by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time     // from the verifier's first reading of it
	d  time.Duration // advanced
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		c.t = time.Now()
	}
	return c.t.Add(c.d)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.d += d
	c.mu.Unlock()
}

// fakeClock sets s's verifier on a clock of the test's, from now: first
// read under the verifier's lock, it is not before any time the verifier
// read.
func fakeClock(s *Server) *clock {
	c := &clock{}
	s.oauth.SetClock(c.now)
	return c
}

// keysTest is a Server that takes is's tokens, on a clock of the test's,
// its log kept; entered and left have a value as a request marked
// X-Hangup comes to its handler and as the handler is done with it.
type keysTest struct {
	is             *authtest.Issuer
	url, aud       string
	s              *Server
	clock          *clock
	log            testenv.Buffer
	entered, left  chan struct{}
	now, hourLater time.Time
}

func newKeysTest(t *testing.T, is *authtest.Issuer) *keysTest {
	t.Helper()
	k := &keysTest{is: is, entered: make(chan struct{}, 16), left: make(chan struct{}, 16), now: time.Now()}
	k.hourLater = k.now.Add(time.Hour)
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	k.url, k.aud = hs.URL, hs.URL+"/mcp"
	k.s = newServerWith(t, Options{Logger: slog.New(slog.NewTextHandler(&k.log, nil))}, func(c *config.Config) {
		c.Serve.Pool, c.Serve.Rate = 0, 0
		c.Serve.OAuth = config.OAuth{Issuer: is.URL, Audience: k.aud, Scopes: []string{"crucible"}}
	})
	h := k.s.Handler(auth.New([]string{tokenA}, nil))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		marked := r.Header.Get("X-Hangup") != ""
		if marked {
			k.entered <- struct{}{}
		}
		h.ServeHTTP(w, r)
		if marked {
			k.left <- struct{}{}
		}
	})
	k.clock = fakeClock(k.s)
	return k
}

// valid is a valid token of the issuer's current key.
func (k *keysTest) valid() string {
	return k.is.Token(k.aud, "alice", "crucible", k.now, k.hourLater)
}

// hangUp sends token as a client that hangs up once its request is at the
// server and the issuer is asked for its keys, and returns once the
// server is done with the request.
func (k *keysTest) hangUp(t *testing.T, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", k.url+"/mcp", nil) // no body: the server sees the hang-up at once
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Hangup", "1")
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	<-k.entered
	k.is.WaitHit(t)
	cancel()
	<-sent
	<-k.left
}

// The keys are fetched at start, before any token: the first token does
// not wait on the issuer, nor ask it again.
func TestOAuthKeysAtStart(t *testing.T) {
	is := authtest.NewIssuer(t)
	k := newKeysTest(t, is)
	is.WaitHit(t)
	if status, chal := initialize(t, k.url, k.valid()); status != 200 {
		t.Errorf("the first token: %d %q", status, chal)
	}
	if n := is.Served(); n != 1 {
		t.Errorf("the issuer was asked for its keys %d times, want 1 (at start)", n)
	}
}

// The attack: a client sends a token while the first fetch of the keys is
// under way, and hangs up. The fetch is the server's, not the client's:
// it goes on, and the next valid token gets in at once, with no second
// fetch and no back-off.
func TestOAuthKeysClientHangsUp(t *testing.T) {
	is := authtest.NewIssuer(t)
	release := is.HoldKeys()
	k := newKeysTest(t, is)
	k.hangUp(t, k.valid())
	release()
	if status, chal := initialize(t, k.url, k.valid()); status != 200 {
		t.Errorf("a valid token after a client hung up during the first fetch: %d %q", status, chal)
	}
	if n := is.Served(); n != 1 {
		t.Errorf("the issuer was asked for its keys %d times, want 1", n)
	}
	if l := k.log.String(); strings.Contains(l, "could not be fetched") {
		t.Errorf("a client's hang-up was logged as the issuer's failure:\n%s", l)
	}
}

// The attack: floods of tokens of made-up kids, some of their clients
// hanging up while the fetch they caused is under way. The issuer is
// asked at most once per keysMinGap, and a rotated key is still taken
// once keysMinGap has passed: the fetch a hung-up client caused is not
// lost.
func TestOAuthKeysUnknownKids(t *testing.T) {
	is := authtest.NewIssuer(t)
	k := newKeysTest(t, is)
	if status, chal := initialize(t, k.url, k.valid()); status != 200 {
		t.Fatalf("a valid token: %d %q", status, chal)
	}
	is.WaitHit(t) // the first fetch's
	flood := func() {
		t.Helper()
		for i := range 20 {
			if status, _ := initialize(t, k.url, authtest.UnknownKid(i)); status != 401 {
				t.Errorf("a token of an unknown kid: %d", status)
			}
		}
	}
	flood()
	if n := is.Served(); n != 1 {
		t.Errorf("a flood within keysMinGap of the first fetch: the issuer was asked %d times, want 1", n)
	}

	is.Rotate("k2")
	rotated := k.valid()
	if status, _ := initialize(t, k.url, rotated); status != 401 {
		t.Errorf("a rotated key within keysMinGap of the last fetch: %d, want 401 (not fetched yet)", status)
	}
	k.clock.advance(auth.KeysMinGap)
	release := is.HoldKeys()
	k.hangUp(t, authtest.UnknownKid(99)) // the flood's next token, its client gone before the keys come
	release()
	if status, chal := initialize(t, k.url, rotated); status != 200 {
		t.Errorf("a rotated key once keysMinGap has passed: %d %q", status, chal)
	}
	flood()
	if n := is.Served(); n != 2 {
		t.Errorf("the issuer was asked for its keys %d times, want 2", n)
	}
}

// The attack: the issuer's metadata, or its JWKS, redirects to a server
// of the attacker's, which publishes keys it signs tokens of the issuer
// with. No redirect is followed: its tokens are refused, the attacker's
// keys are never asked for, and the operator's log says why.
func TestOAuthKeysRedirect(t *testing.T) {
	for _, c := range []struct{ name, path string }{
		{"metadata", "/.well-known/oauth-authorization-server"},
		{"jwks", "/jwks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is, evil := authtest.NewIssuer(t), authtest.NewIssuer(t)
			// The attacker's metadata names the issuer, and its own keys.
			meta := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": evil.URL + "/jwks"})
			}))
			t.Cleanup(meta.Close)
			to := map[string]string{"/.well-known/oauth-authorization-server": meta.URL, "/jwks": evil.URL + "/jwks"}[c.path]
			is.Redirect(c.path, to)

			k := newKeysTest(t, is)
			forged := evil.TokenAs(is.URL, k.aud, "mallory", "crucible", k.now, k.hourLater)
			if status, chal := initialize(t, k.url, forged); status != 401 || !strings.Contains(chal, `error="invalid_token"`) {
				t.Errorf("a token signed with the keys a redirect leads to: %d %q, want 401 invalid_token", status, chal)
			}
			if n := evil.Served(); n != 0 {
				t.Errorf("the attacker's keys were fetched %d times", n)
			}
			if l := k.log.String(); !strings.Contains(l, "redirects are refused") {
				t.Errorf("the log does not say that the issuer redirected:\n%s", l)
			}
		})
	}
}
