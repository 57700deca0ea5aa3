package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Where a command finds its config: --config, then $CRUCIBLE_CONFIG, then
// ./crucible.yaml, then crucible/crucible.yaml in the user's config
// directory. In each case the place that should win holds a valid config and
// every other place one that fails to load, so a command that exits 0 read
// the right one; stderr must say which.
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
		{"cwd next", places{"", "", good, bad}, ExitOK, "config {cwd} (found in the current directory)", ""},
		{"user config dir last", places{"", "", "", good}, ExitOK, "config {user} (found in the user's config directory)", ""},
		{"none", places{}, ExitOK, "no config file", "the defaults apply"},
		{"a named file is there", places{"absent", good, good, good}, ExitUsage, "{flag}", "no such file"},
		{"an env file is there", places{"", "absent", good, good}, ExitUsage, "$CRUCIBLE_CONFIG", "no such file"},
		{"a found file is read", places{"", "", bad, good}, ExitUsage, "{cwd}:2: sandbox.pids", ""},
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
			if code != tc.code || !strings.Contains(errs, expand(tc.want)) || !strings.Contains(errs, tc.wantBody) {
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
	cwd := filepath.Join(dir, "crucible.yaml")
	user := filepath.Join(dir, "xdg", "crucible", "crucible.yaml")
	if code != ExitOK || !strings.Contains(errs, "no config file") || !strings.Contains(errs, "no MCP servers") ||
		!strings.Contains(errs, cwd) || !strings.Contains(errs, user) {
		t.Errorf("serve without a config: exit %d, stderr:\n%s", code, errs)
	}

	if err := os.WriteFile(cwd, []byte("servers:\n  a:\n    command: /bin/false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, "", "serve")
	if code != ExitOK || !strings.Contains(errs, "config "+cwd+" (found in the current directory)") || !strings.Contains(errs, "1 MCP server") {
		t.Errorf("serve with ./crucible.yaml: exit %d, stderr:\n%s", code, errs)
	}
}

// run and exec read the same places (without saying so on every run: their
// stderr is the command's own); a bad ./crucible.yaml stops them before any
// jail, which needs no root to see.
func TestConfigExec(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("CRUCIBLE_CONFIG", "")
	if err := os.WriteFile("crucible.yaml", []byte("sandbox:\n  pids: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"exec", "--", "true"}, {"run", "-"}} {
		code, _, errs := run(t, "1", args...)
		if code != ExitUsage || !strings.Contains(errs, filepath.Join(dir, "crucible.yaml")+":2: sandbox.pids") {
			t.Errorf("crucible %q with a bad ./crucible.yaml: exit %d, stderr:\n%s", args, code, errs)
		}
	}
}

// A file crucible finds by itself, rather than one it is given, must be the
// user's (or root's) and not writable by everyone: in a shared directory
// such as /tmp, someone else's crucible.yaml would otherwise set the
// sandbox's policy.
func TestConfigFoundNotYours(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("CRUCIBLE_CONFIG", "")
	if err := os.WriteFile("crucible.yaml", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod("crucible.yaml", 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	code, _, errs := run(t, "", "tools")
	if code != ExitUsage || !strings.Contains(errs, "--config") {
		t.Errorf("a world-writable ./crucible.yaml: exit %d, stderr:\n%s", code, errs)
	}
	if code, _, errs := run(t, "", "tools", "--config", "crucible.yaml"); code != ExitOK {
		t.Errorf("the same file named by --config: exit %d, stderr:\n%s", code, errs)
	}
}
