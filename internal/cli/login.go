package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/sandbox"
	"github.com/cruciblehq/crucible/serverlogin"
)

const loginUsage = `Usage: crucible login [--config FILE] [--timeout D] NAME

Logs in to the remote MCP server NAME of the config's servers section,
which has an oauth section: a fresh authorization every time. It prints the
authorization server's URL to open in a browser (and runs $BROWSER URL when
$BROWSER is set), takes the redirect on 127.0.0.1, and keeps the tokens in
the user's state directory ($CRUCIBLE_STATE_DIR, else
$XDG_STATE_HOME/crucible, else ~/.local/state/crucible; root's
/var/lib/crucible), readable by the user alone, never in the config. With
oauth.grant: client_credentials no browser is needed, and nothing is kept.
Crucible refreshes the tokens as they expire; when it cannot, it says to
run crucible login NAME again.

Flags:
`

const logoutUsage = `Usage: crucible logout [--config FILE] NAME

Forgets the tokens of the login to the server NAME (crucible login NAME).

Flags:
`

func runLogin(ctx context.Context, args []string, env Env) int {
	fs := newFlagSet("login", loginUsage)
	file := fs.String("config", "", configFlagHelp)
	timeout := fs.Duration("timeout", 5*time.Minute, "give up on a login not done in this time")
	s, code, ok := loginSettings(fs, file, args, env)
	if !ok {
		return code
	}
	if *timeout <= 0 {
		fmt.Fprintln(env.Stderr, "crucible login: --timeout must be positive")
		return ExitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	say := func(line string) { fmt.Fprintln(env.Stderr, line) }
	var browse func(string) error
	if b := strings.Fields(os.Getenv("BROWSER")); len(b) > 0 {
		browse = func(url string) error {
			// Its output is not ours (a browser may say much): /dev/null.
			// A browser may stay; the login does not wait for it, but
			// reaps it when it ends.
			cmd := exec.Command(b[0], append(b[1:], url)...)
			if err := cmd.Start(); err != nil {
				return err
			}
			go func() { _ = cmd.Wait() }()
			return nil
		}
	}
	n, err := serverlogin.Login(ctx, s, serverlogin.Operator, say, browse)
	if err != nil {
		// Its words may be the authorization server's: no control
		// characters reach the terminal.
		fmt.Fprintf(env.Stderr, "crucible login: %s\n", printable(err.Error()))
		return ExitFail
	}
	fmt.Fprintf(env.Stderr, "crucible login: logged in to server %s (%d tools)\n", s.Server, n)
	return ExitOK
}

func runLogout(_ context.Context, args []string, env Env) int {
	fs := newFlagSet("logout", logoutUsage)
	file := fs.String("config", "", configFlagHelp)
	s, code, ok := loginSettings(fs, file, args, env)
	if !ok {
		return code
	}
	had, err := serverlogin.Logout(s, serverlogin.Operator)
	switch {
	case err != nil:
		fmt.Fprintf(env.Stderr, "crucible logout: %v\n", err)
		return ExitFail
	case had:
		fmt.Fprintf(env.Stderr, "crucible logout: forgot the login to server %s\n", s.Server)
	default:
		fmt.Fprintf(env.Stderr, "crucible logout: there was no login to server %s\n", s.Server)
	}
	return ExitOK
}

// loginSettings parses login's or logout's flags and finds the settings
// of the server they name; ok is false when the caller should return code.
func loginSettings(fs *flag.FlagSet, file *string, args []string, env Env) (s *serverlogin.Settings, code int, ok bool) {
	name := fs.Name()
	if code, ok := parseFlags(fs, args, env); !ok {
		return nil, code, false
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(env.Stderr, "crucible %s: takes one argument, the name of a server (crucible %s -h)\n", name, name)
		return nil, ExitUsage, false
	}
	cfg, src, err := loadConfig(*file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible %s: %v\n", name, err)
		return nil, ExitUsage, false
	}
	fmt.Fprintf(env.Stderr, "crucible %s: %s\n", name, src)
	s, err = sandbox.LoginSettings(cfg, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible %s: %v\n", name, err)
		return nil, ExitUsage, false
	}
	return s, 0, true
}

// printable is s with each control character (a terminal's escape, say)
// written as \xNN.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
