package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cruciblehq/crucible/config"
)

// configFlagHelp is the help of every command's --config flag.
const configFlagHelp = "read settings from this `FILE` (default: $CRUCIBLE_CONFIG, else crucible/crucible.yaml in $XDG_CONFIG_HOME or ~/.config)"

// configFile says where a command's config came from, for the operator's
// stderr (never the model's: it names a host path).
type configFile struct {
	path    string   // the file read; "" when there was none
	how     string   // how it was found
	looked  []string // with no file: the places searched
	ignored string   // a ./crucible.yaml that was not read, if any
}

func (c configFile) String() string {
	s := "config " + c.path + " (" + c.how + ")"
	if c.path == "" {
		where := "and none at " + strings.Join(c.looked, " or ")
		if len(c.looked) == 0 {
			where = "and no user config directory: neither $XDG_CONFIG_HOME nor $HOME is set"
		}
		s = "no config file (no --config or $CRUCIBLE_CONFIG, " + where + "): the defaults apply"
	}
	if c.ignored != "" {
		s += "; " + c.ignored + " is not read unless named (--config or $CRUCIBLE_CONFIG): a file in the working directory may have come with a repository"
	}
	return s
}

// loadConfig finds the config file where users expect it and loads it:
// the --config flag's (flagPath), else $CRUCIBLE_CONFIG's, else
// crucible/crucible.yaml in the user's config directory ($XDG_CONFIG_HOME,
// else ~/.config). A file named by the flag or the variable must exist; the
// user's is skipped when there is none, and then the defaults apply. A file
// found and not loaded (unreadable, invalid) is an error, never a fallback:
// the operator meant it.
//
// ./crucible.yaml is never read unless named: the config decides what runs
// on the host unjailed (its servers' commands), which secrets go to which
// hosts and what the network allows, and a file in the working directory
// may have come with a repository that was cloned there (Claude Code starts
// its MCP servers in the project's directory). Such a file is only
// mentioned, so that its owner learns how to use it.
func loadConfig(flagPath string) (*config.Config, configFile, error) {
	if flagPath != "" {
		cfg, err := readConfig(flagPath, false)
		return cfg, configFile{path: flagPath, how: "named by --config"}, err
	}
	if p := os.Getenv("CRUCIBLE_CONFIG"); p != "" {
		cfg, err := readConfig(p, false)
		if err != nil {
			err = fmt.Errorf("$CRUCIBLE_CONFIG: %w", err)
		}
		return cfg, configFile{path: p, how: "named by $CRUCIBLE_CONFIG"}, err
	}
	var ignored string
	if p, err := filepath.Abs("crucible.yaml"); err == nil {
		if _, err := os.Stat(p); err == nil {
			ignored = p
		}
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return config.Default(), configFile{ignored: ignored}, nil // no $HOME: no user config either
	}
	f := configFile{path: filepath.Join(d, "crucible", "crucible.yaml"), how: "found in the user's config directory", ignored: ignored}
	cfg, err := readConfig(f.path, true)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return config.Default(), configFile{looked: []string{f.path}, ignored: ignored}, nil
	}
	return cfg, f, err
}

// readConfig loads the config at path. One that crucible found by itself
// (found) must be owned by this user or root and not writable by everyone:
// the config sets the sandbox's whole policy (its network, its mounts, the
// host commands of its servers), and a config directory shared by mistake
// would let anyone set it. A file named with --config or $CRUCIBLE_CONFIG
// is the operator's choice.
func readConfig(path string, found bool) (*config.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	defer f.Close()
	if found {
		// The open file's owner, not the path's: it cannot be swapped in between.
		fi, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("reading config: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || (st.Uid != uint32(os.Geteuid()) && st.Uid != 0) || fi.Mode().Perm()&0o002 != 0 {
			return nil, fmt.Errorf("%s is not read: it belongs to another user or everyone may write it (name it with --config to use it anyway)", path)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return config.Parse(data, path)
}
