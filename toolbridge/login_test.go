package toolbridge

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/oauthtest"
	"github.com/cruciblehq/crucible/serverlogin"
)

// A server that wants an OAuth login: without one, a call says which
// command to run (and the next call, once logged in, works at once, with
// no back-off); with one, the call carries the token, and a server that
// echoes the token back has it redacted before the code sees it.
func TestLoginServer(t *testing.T) {
	f := oauthtest.New(t, oauthtest.Options{IssParameter: true})
	ls := &serverlogin.Settings{Server: "tracker", URL: f.MCPURL(), Store: &serverlogin.Store{Dir: t.TempDir()}}
	h, err := serverlogin.NewHandler(ls, serverlogin.Operator)
	if err != nil {
		t.Fatal(err)
	}
	b := newBridge(t, Options{Servers: map[string]Server{
		"tracker": {URL: f.MCPURL(), Login: func(string) (Authorizer, error) { return h, nil }},
	}})
	s := b.NewSession()
	_, err = call(t, s, "tracker", "whoami", `{}`)
	if err == nil || err.Error() != "tool server tracker is not available: server tracker needs a login: run crucible login tracker" {
		t.Fatalf("no login: %v", err)
	}
	_, err = call(t, s, "tracker", "whoami", `{}`)
	if err == nil || strings.Contains(err.Error(), "next attempt in") {
		t.Fatalf("again: %v; want the same words, no back-off", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	browse := func(u string) error {
		resp, err := http.Get(u)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		return err
	}
	if _, err := serverlogin.Login(ctx, ls, serverlogin.Operator, func(string) {}, browse); err != nil {
		t.Fatal(err)
	}
	if got := mustCall(t, s, "tracker", "whoami", `{}`); got != `"alice"` {
		t.Errorf("whoami = %s", got)
	}
	got := mustCall(t, s, "tracker", "leak", `{}`)
	for _, tok := range f.Tokens() {
		if strings.Contains(got, tok) {
			t.Fatalf("the code got a token: %s", got)
		}
	}
	if !strings.Contains(got, "[redacted]") {
		t.Errorf("leak = %s; want the token redacted", got)
	}
}
