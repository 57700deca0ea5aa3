package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// login and logout refuse what they cannot do, with the reason, before
// any network: no name, a server that is not there, or one without oauth;
// logout of a server never logged in to says so, and exits 0.
func TestLoginRefusals(t *testing.T) {
	t.Setenv("CRUCIBLE_STATE_DIR", t.TempDir())
	cfg := filepath.Join(t.TempDir(), "crucible.yaml")
	yaml := "servers:\n  plain: {url: \"http://127.0.0.1:1/mcp\"}\n  remote: {url: \"http://127.0.0.1:1/mcp\", oauth: {}}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"login", "--config", cfg}, ExitUsage, "crucible login: takes one argument, the name of a server"},
		{[]string{"login", "--config", cfg, "nosuch"}, ExitUsage, "crucible login: there is no url server nosuch in the config"},
		{[]string{"login", "--config", cfg, "plain"}, ExitUsage, "crucible login: server plain has no oauth section"},
		{[]string{"login", "--config", cfg, "--timeout", "0s", "remote"}, ExitUsage, "--timeout must be positive"},
		{[]string{"login", "--config", cfg, "--timeout", "5s", "remote"}, ExitFail, "crucible login: server remote: "},
		{[]string{"logout", "--config", cfg, "remote"}, ExitOK, "crucible logout: there was no login to server remote"},
	} {
		code, _, errs := run(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d\n%s\nwant %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// What an authorization server writes cannot drive the terminal.
func TestPrintable(t *testing.T) {
	if got := printable("refused: \x1b[2Jgone\x07 ünïcode"); got != `refused: \x1b[2Jgone\x07 ünïcode` {
		t.Errorf("printable = %q", got)
	}
}
