package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/mcpserver/auth"
	"github.com/cruciblehq/crucible/mcpserver/auth/authtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Attack: a client of the readonly profile calls a tool whose rule keeps
// that profile out (client.profile != "readonly"). The rule sees the
// caller's profile over HTTP in both eras, for a client named by its
// token and for one named by its OAuth subject (it saw "" before, and let
// them through); a client of another profile, and stdio (no profile), are
// let through.
func TestAttackProfileInRules(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	const roToken, devToken = "ro-token-0123456789abcdef", "dev-token-0123456789abcdef"
	is := authtest.NewIssuer(t)
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	ev := everything(t)
	ev.Rules = []config.CallRule{{Tools: []string{"echo"}, AllowIf: `client.profile != "readonly"`, Reason: "readonly clients do not echo"}}
	s := newServer(t, func(c *config.Config) {
		c.Serve.Pool, c.Serve.Rate = 0, 0
		c.Serve.OAuth = config.OAuth{Issuer: is.URL, Audience: hs.URL + "/mcp", Scopes: []string{"crucible"}}
		c.Servers = map[string]config.Server{"ev": ev}
		c.Profiles = map[string]config.Profile{"readonly": {Servers: []string{"ev"}}, "dev": {Servers: []string{"ev"}}}
		c.Clients = map[string]config.Client{
			"ro":    {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "readonly"},
			"dev":   {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "dev"},
			"alice": {OAuth: map[string]string{"sub": "alice@example.com"}, Profile: "readonly"},
		}
	})
	mux.Handle("/", s.Handler(auth.New(nil, map[string]string{"ro": roToken, "dev": devToken})))
	now := time.Now()
	alice := is.Token(hs.URL+"/mcp", "alice@example.com", "crucible", now, now.Add(time.Hour))

	code := `try { return await tools.ev.echo({ message: "x" }) } catch (e) { return "refused: " + e.message }`
	for _, c := range []struct {
		who     string
		cs      func() *mcp.ClientSession
		refused bool
	}{
		{"ro, stateless", func() *mcp.ClientSession { return connectHTTP(t, hs.URL, roToken, "") }, true},
		{"ro, 2025-11-25", func() *mcp.ClientSession { return connectHTTP(t, hs.URL, roToken, "2025-11-25") }, true},
		{"alice (OAuth)", func() *mcp.ClientSession { return connectHTTP(t, hs.URL, alice, "") }, true},
		{"dev", func() *mcp.ClientSession { return connectHTTP(t, hs.URL, devToken, "2025-11-25") }, false},
		{"stdio", func() *mcp.ClientSession { return connect(t, s) }, false},
	} {
		_, out := execute(t, c.cs(), map[string]any{"code": code})
		if out == nil || out.ExitCode != 0 {
			t.Fatalf("%s: %+v", c.who, out)
		}
		got := string(out.Result)
		switch {
		case c.refused && (!strings.Contains(got, "readonly clients do not echo") || len(out.Violations) != 1 || out.Violations[0].Kind != "tool"):
			t.Errorf("%s echoed past the rule: %s, violations %+v", c.who, got, out.Violations)
		case !c.refused && got != `"Echo: x"`:
			t.Errorf("%s was refused: %s", c.who, got)
		}
	}
}
