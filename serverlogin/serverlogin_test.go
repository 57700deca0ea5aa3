package serverlogin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/oauthtest"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// settings are a login to f's server through dynamic registration, its
// tokens kept in a directory of the test's.
func settings(t *testing.T, f *oauthtest.Fixture) *Settings {
	t.Helper()
	return &Settings{Server: "tracker", URL: f.MCPURL(), Store: &Store{Dir: t.TempDir()}}
}

// follow is the browser: it goes where the authorization server redirects
// it, which is the login's callback.
func follow(t *testing.T) func(string) error {
	return func(u string) error {
		resp, err := http.Get(u)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Logf("the callback answered %s", resp.Status)
		}
		return nil
	}
}

func login(t *testing.T, s *Settings) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Login(ctx, s, Operator, func(string) {}, follow(t))
	return err
}

// call calls tool on s's server through h, as the tool bridge does.
func call(t *testing.T, s *Settings, h auth.OAuthHandler, tool string, args map[string]any) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, OAuthHandler: h, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = sess.Close() }()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", errors.New("no content")
	}
	text, _ := res.Content[0].(*mcp.TextContent)
	if text == nil {
		return "", errors.New("not text")
	}
	return text.Text, nil
}

// isNeedsLogin says whether err is, or wraps, a NeedsLogin.
func isNeedsLogin(err error) bool {
	var n *NeedsLogin
	return errors.As(err, &n)
}

func handler(t *testing.T, s *Settings) *Handler {
	t.Helper()
	h, err := NewHandler(s, Operator)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A login: registered dynamically, PKCE, state and iss checked; the
// tokens in a file of the user's alone; a call with them reaches the
// server as the account logged in.
func TestLogin(t *testing.T) {
	f := oauthtest.New(t, oauthtest.Options{IssParameter: true})
	s := settings(t, f)
	if err := login(t, s); err != nil {
		t.Fatalf("login: %v", err)
	}
	p := filepath.Join(s.Store.Dir, "tracker", "operator.json")
	for path, mode := range map[string]os.FileMode{p: 0o600, filepath.Dir(p): 0o700 | os.ModeDir} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != mode {
			t.Errorf("%s: %v, mode %v; want %v", path, err, fi.Mode(), mode)
		}
	}
	rec, err := s.Store.Load("tracker", Operator)
	if err != nil || rec == nil || rec.RefreshToken == "" || rec.URL != f.MCPURL() {
		t.Fatalf("the saved login: %+v, %v", rec, err)
	}
	got, err := call(t, s, handler(t, s), "whoami", nil)
	if err != nil || got != "alice" {
		t.Fatalf("whoami = %q, %v; want alice", got, err)
	}
	seen := f.SeenTokens()
	if len(seen) == 0 || seen[len(seen)-1] != rec.AccessToken {
		t.Errorf("the server saw %q; want the saved token last", seen)
	}
	if c := f.Counts(); c.Registrations != 1 || c.Authorize != 1 || c.CodeExchanges != 1 {
		t.Errorf("counts %+v; want one registration, authorization, exchange", c)
	}

	// A second login is a fresh authorization.
	f.SetAccount("bob")
	if err := login(t, s); err != nil {
		t.Fatalf("second login: %v", err)
	}
	if got, err := call(t, s, handler(t, s), "whoami", nil); err != nil || got != "bob" {
		t.Fatalf("after a second login whoami = %q, %v; want bob", got, err)
	}
	if had, err := Logout(s, Operator); !had || err != nil {
		t.Fatalf("logout: %v, %v", had, err)
	}
	if _, err := call(t, s, handler(t, s), "whoami", nil); !isNeedsLogin(err) || !strings.Contains(err.Error(), "server tracker needs a login: run crucible login tracker") {
		t.Fatalf("after logout: %v; want the login it needs", err)
	}
}

// No login: the call fails with the command that mends it.
func TestNoLogin(t *testing.T) {
	f := oauthtest.New(t, oauthtest.Options{})
	s := settings(t, f)
	_, err := call(t, s, handler(t, s), "whoami", nil)
	if !isNeedsLogin(err) || !strings.Contains(err.Error(), "server tracker needs a login: run crucible login tracker") {
		t.Fatalf("err = %v", err)
	}
	if f.Counts().Authorize != 0 {
		t.Error("the bridge's handler went to authorize")
	}
}

// A token that expires is refreshed on the next call, the rotated refresh
// token written back at once: a later process (a new handler) goes on
// from the file without a login, and no refresh token is spent twice.
func TestRefresh(t *testing.T) {
	f := oauthtest.New(t, oauthtest.Options{IssParameter: true})
	f.SetTokenTTL(earlyRefresh + time.Second) // due for a refresh within a second
	s := settings(t, f)
	if err := login(t, s); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Store.Load("tracker", Operator)
	time.Sleep(2 * time.Second)
	f.SetTokenTTL(time.Hour)
	if got, err := call(t, s, handler(t, s), "whoami", nil); err != nil || got != "alice" {
		t.Fatalf("whoami = %q, %v", got, err)
	}
	after, _ := s.Store.Load("tracker", Operator)
	if f.Counts().Refreshes != 1 || after.RefreshToken == before.RefreshToken || after.AccessToken == before.AccessToken {
		t.Fatalf("refreshes %d; the file's tokens changed: %v", f.Counts().Refreshes, after.RefreshToken != before.RefreshToken)
	}
	if got, err := call(t, s, handler(t, s), "whoami", nil); err != nil || got != "alice" {
		t.Fatalf("a later process: whoami = %q, %v", got, err)
	}
	if c := f.Counts(); c.Refreshes != 1 || c.RefreshReuse != 0 || c.Authorize != 1 {
		t.Errorf("counts %+v; want one refresh, no reuse, one authorization", c)
	}
}

// A revoked login: the server refuses the token, the refresh is refused,
// and the call says to log in again.
func TestRevoked(t *testing.T) {
	f := oauthtest.New(t, oauthtest.Options{IssParameter: true})
	s := settings(t, f)
	if err := login(t, s); err != nil {
		t.Fatal(err)
	}
	h := handler(t, s)
	if _, err := call(t, s, h, "whoami", nil); err != nil {
		t.Fatal(err)
	}
	f.Revoke("alice")
	_, err := call(t, s, h, "whoami", nil)
	if !isNeedsLogin(err) || !strings.Contains(err.Error(), "the server refused its token, and the authorization server refused to refresh it): run crucible login tracker") {
		t.Fatalf("err = %v", err)
	}
}

// An authorization server that is down: the refresh fails and says so.
func TestAuthServerDown(t *testing.T) {
	f := oauthtest.New(t, oauthtest.Options{IssParameter: true})
	f.SetTokenTTL(earlyRefresh + time.Second)
	s := settings(t, f)
	if err := login(t, s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	f.SetAuthDown(true)
	_, err := call(t, s, handler(t, s), "whoami", nil)
	if err == nil || !strings.Contains(err.Error(), "server tracker: refreshing the login: the authorization server answered 503") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Login(context.Background(), s, Operator, func(string) {}, follow(t)); err == nil {
		t.Fatal("a login with the authorization server down succeeded")
	}
}

// The attacks on a login: each is refused, with its reason, and nothing is
// saved.
func TestLoginRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		o    oauthtest.Options
		want string
	}{
		{"another issuer", oauthtest.Options{IssParameter: true, WrongIss: true}, `does not match expected issuer`},
		{"another audience", oauthtest.Options{ResourceOverride: "https://other.example/mcp"}, "resource"},
		{"a redirect to another host", oauthtest.Options{RedirectTokenEndpoint: "http://127.0.0.2:9/token"}, "refused a redirect from 127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := oauthtest.New(t, c.o)
			s := settings(t, f)
			err := login(t, s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("login: %v; want %q", err, c.want)
			}
			if rec, _ := s.Store.Load("tracker", Operator); rec != nil {
				t.Error("a refused login was saved")
			}
		})
	}
}

// A call that needs a scope the login lacks: refused with the scope named,
// which the next login asks for.
func TestStepUp(t *testing.T) {
	f := oauthtest.New(t, oauthtest.Options{IssParameter: true, ToolScopes: map[string]string{"admin_op": "mcp:admin"}})
	s := settings(t, f)
	if err := login(t, s); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, s, handler(t, s), "admin_op", nil)
	if !isNeedsLogin(err) || !strings.Contains(err.Error(), "it asks for more scope") || !strings.Contains(err.Error(), "mcp:admin") {
		t.Fatalf("err = %v", err)
	}
	if err := login(t, s); err != nil {
		t.Fatal(err)
	}
	if got, err := call(t, s, handler(t, s), "admin_op", nil); err != nil || !strings.Contains(got, "ok for alice") {
		t.Fatalf("after the new login: %q, %v", got, err)
	}
}

// The client credentials grant: no browser, no file.
func TestClientCredentials(t *testing.T) {
	f := oauthtest.New(t, oauthtest.Options{ClientID: "svc", ClientSecret: "svc-secret-0123456789"})
	s := settings(t, f)
	s.ClientID, s.ClientSecret, s.ClientCredentials = "svc", "svc-secret-0123456789", true
	n, err := Login(context.Background(), s, Operator, func(string) { t.Error("asked a person") }, nil)
	if err != nil || n == 0 {
		t.Fatalf("login: %d tools, %v", n, err)
	}
	h := handler(t, s)
	if got, err := call(t, s, h, "whoami", nil); err != nil || got != "svc" {
		t.Fatalf("whoami = %q, %v", got, err)
	}
	if secrets := strings.Join(h.Secrets(), " "); !strings.Contains(secrets, "svc-secret") || !strings.Contains(secrets, f.SeenTokens()[len(f.SeenTokens())-1]) {
		t.Errorf("Secrets() = %q; want the client's secret and its token", secrets)
	}
	if entries, _ := os.ReadDir(s.Store.Dir); len(entries) != 0 {
		t.Errorf("the client credentials grant saved %d files", len(entries))
	}
}

// A damaged file is an error naming the command that mends it, not a
// panic or the file's path.
func TestDamagedLogin(t *testing.T) {
	st := &Store{Dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(st.Dir, "tracker"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st.Dir, "tracker", "operator.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := st.Load("tracker", Operator)
	if err == nil || !strings.Contains(err.Error(), "run crucible login tracker") || strings.Contains(err.Error(), st.Dir) {
		t.Fatalf("err = %v", err)
	}
	if _, err := st.path("tracker", "../x"); err == nil {
		t.Error("an account name with a slash was taken")
	}
}

// A web login: its link works once; asking again for the same account
// and server kills the previous link; a callback with a state that no
// login waits for is refused; the tokens go to the account asked.
func TestWebLogin(t *testing.T) {
	f := oauthtest.New(t, oauthtest.Options{IssParameter: true})
	s := settings(t, f)
	web := NewWeb(func(string) (*Settings, error) { return s, nil })
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth/start", web.Start)
	mux.HandleFunc("GET /oauth/callback", web.Callback)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	get := func(u string) int {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	ended := make(chan error, 1)
	first, err := web.Ask("tracker", "client-a", hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := web.Ask("tracker", "client-a", hs.URL, func(_ string, err error) { ended <- err })
	if code := get(first); code != http.StatusGone {
		t.Errorf("the link asked for again: %d; want 410", code)
	}
	if code := get(hs.URL + "/oauth/callback?state=nope&code=x"); code != http.StatusBadRequest {
		t.Errorf("a forged callback: %d; want 400", code)
	}
	if code := get(second); code != http.StatusOK {
		t.Fatalf("the login: %d", code)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if code := get(second); code != http.StatusGone {
		t.Errorf("a used link: %d; want 410", code)
	}
	if rec, _ := s.Store.Load("tracker", "client-a"); rec == nil {
		t.Error("the login was not saved for the account asked")
	}
	if rec, _ := s.Store.Load("tracker", Operator); rec != nil {
		t.Error("the login was saved for the operator")
	}
}
