package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Where a command finds its config: --config, then $CRUCIBLE_CONFIG, then
// crucible/crucible.yaml in the user's config directory; ./crucible.yaml
// only when named, and mentioned when it is not. In each case the place
// that should win holds a valid config and every other place one that
// fails to load, so a command that exits 0 read the right one; stderr must
// say which.
func TestConfigSearch(t *testing.T) {
	const (
		good = "sandbox:\n  pids: 64\n"
		bad  = "sandbox:\n  pids: 0\n" // sandbox.pids: must be between ...
	)
	type places struct{ flag, env, cwd, user string } // each: "", good, bad, or "absent" (named, not there)
	for _, tc := range []struct {
		name     string
		in       places
		code     int
		want     string // in stderr; {flag}, {env}, {cwd}, {user} stand for the paths
		wantBody string // in stderr too
	}{
		{"flag wins", places{good, bad, bad, bad}, ExitOK, "config {flag} (named by --config)", ""},
		{"env next", places{"", good, bad, bad}, ExitOK, "config {env} (named by $CRUCIBLE_CONFIG)", ""},
		{"user config dir next, ./crucible.yaml not read", places{"", "", bad, good}, ExitOK, "config {user} (found in the user's config directory)", "{cwd} is not read unless named"},
		{"user config dir last", places{"", "", "", good}, ExitOK, "config {user} (found in the user's config directory)", ""},
		{"none", places{}, ExitOK, "no config file", "the defaults apply"},
		{"./crucible.yaml alone is not read", places{"", "", bad, ""}, ExitOK, "no config file", "{cwd} is not read unless named"},
		{"a named file is there", places{"absent", good, good, good}, ExitUsage, "{flag}", "no such file"},
		{"an env file is there", places{"", "absent", good, good}, ExitUsage, "$CRUCIBLE_CONFIG", "no such file"},
		{"a found file is read", places{"", "", good, bad}, ExitUsage, "{user}:2: sandbox.pids", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := map[string]string{
				"{flag}": filepath.Join(dir, "flag.yaml"),
				"{env}":  filepath.Join(dir, "env.yaml"),
				"{cwd}":  filepath.Join(dir, "work", "crucible.yaml"),
				"{user}": filepath.Join(dir, "xdg", "crucible", "crucible.yaml"),
			}
			write := func(key, text string) {
				if text == "" || text == "absent" {
					return
				}
				p := paths[key]
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write("{flag}", tc.in.flag)
			write("{env}", tc.in.env)
			write("{cwd}", tc.in.cwd)
			write("{user}", tc.in.user)
			if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Chdir(filepath.Join(dir, "work"))
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
			t.Setenv("CRUCIBLE_CONFIG", "")
			if tc.in.env != "" {
				t.Setenv("CRUCIBLE_CONFIG", paths["{env}"])
			}
			args := []string{"tools"}
			if tc.in.flag != "" {
				args = append(args, "--config", paths["{flag}"])
			}
			expand := func(s string) string {
				for k, v := range paths {
					s = strings.ReplaceAll(s, k, v)
				}
				return s
			}
			code, _, errs := run(t, "", args...)
			if code != tc.code || !strings.Contains(errs, expand(tc.want)) || !strings.Contains(errs, expand(tc.wantBody)) {
				t.Errorf("crucible %q: exit %d, stderr:\n%s\nwant exit %d and %q", args, code, errs, tc.code, expand(tc.want))
			}
		})
	}
}

// serve without a config has no MCP servers to offer: it says so, and where
// it looked, rather than serving an empty catalog in silence. With one, it
// says which, and how many servers it has.
func TestConfigServe(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("CRUCIBLE_CONFIG", "")
	code, _, errs := run(t, "", "serve")
	user := filepath.Join(dir, "xdg", "crucible", "crucible.yaml")
	if code != ExitOK || !strings.Contains(errs, "no config file") || !strings.Contains(errs, "no MCP servers") || !strings.Contains(errs, user) {
		t.Errorf("serve without a config: exit %d, stderr:\n%s", code, errs)
	}

	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte("servers:\n  a:\n    command: /bin/false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, "", "serve")
	if code != ExitOK || !strings.Contains(errs, "config "+user+" (found in the user's config directory)") || !strings.Contains(errs, "1 MCP server") {
		t.Errorf("serve with the user's crucible.yaml: exit %d, stderr:\n%s", code, errs)
	}
}

// run and exec read the same places (without saying so on every run: their
// stderr is the command's own); a bad config stops them before any jail,
// which needs no root to see.
func TestConfigExec(t *testing.T) {
	user := userConfig(t, "sandbox:\n  pids: 0\n")
	for _, args := range [][]string{{"exec", "--", "true"}, {"run", "-"}} {
		code, _, errs := run(t, "1", args...)
		if code != ExitUsage || !strings.Contains(errs, user+":2: sandbox.pids") {
			t.Errorf("crucible %q with a bad user config: exit %d, stderr:\n%s", args, code, errs)
		}
	}
}

// A repository cloned into the working directory brings a crucible.yaml
// whose server is a host command (and whose secrets would go to its own
// hosts): started there, as Claude Code starts its MCP servers, crucible
// must not read it, and so must not run the command.
func TestAttackPlantedConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("CRUCIBLE_CONFIG", "")
	marker := filepath.Join(dir, "ran")
	planted := "servers:\n  evil:\n    command: /bin/sh\n    args: [-c, \"touch " + marker + "\"]\n"
	if err := os.WriteFile("crucible.yaml", []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "", "tools")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the planted config's server command ran on the host")
	}
	if code != ExitOK || strings.Contains(out, "evil") || !strings.Contains(errs, "is not read unless named") {
		t.Errorf("crucible tools beside a planted crucible.yaml: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
}

// A file crucible finds by itself, rather than one it is given, must be the
// user's (or root's) and not writable by everyone: a config directory
// shared by mistake would otherwise let anyone set the sandbox's policy.
func TestConfigFoundNotYours(t *testing.T) {
	user := userConfig(t, "")
	if err := os.Chmod(user, 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	code, _, errs := run(t, "", "tools")
	if code != ExitUsage || !strings.Contains(errs, "--config") {
		t.Errorf("a world-writable user config: exit %d, stderr:\n%s", code, errs)
	}
	if code, _, errs := run(t, "", "tools", "--config", user); code != ExitOK {
		t.Errorf("the same file named by --config: exit %d, stderr:\n%s", code, errs)
	}
}

// Without $HOME or $XDG_CONFIG_HOME (a bare service unit), there is no
// user config directory: the line says so, rather than naming nothing.
func TestConfigNoHome(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "")
	t.Setenv("CRUCIBLE_CONFIG", "")
	code, _, errs := run(t, "", "tools")
	if code != ExitOK || !strings.Contains(errs, "neither $XDG_CONFIG_HOME nor $HOME is set") || strings.Contains(errs, "none at )") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
}

// userConfig writes text as the user's crucible.yaml, in a config directory
// of the test's, from which the test then runs; it returns its path.
func userConfig(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("CRUCIBLE_CONFIG", "")
	user := filepath.Join(dir, "crucible", "crucible.yaml")
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return user
}
