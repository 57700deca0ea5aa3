// Package deno runs a TypeScript or JavaScript module with Deno, when a deno
// binary is configured or found. Deno gets every permission (-A): the jail,
// not Deno's flags, is the boundary. The module's default export (awaited)
// becomes the result.
package deno

import (
	_ "embed"
	"errors"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/cruciblehq/crucible/lang"
)

// Paths inside the jail.
const (
	dir    = lang.Dir + "/deno"
	runner = dir + "/run.js"
	cache  = "/tmp/.deno" // DENO_DIR: Deno's caches, on the jail's /tmp
)

//go:embed run.js
var runnerSource []byte

// ErrNotFound says that no deno binary was configured or found.
var ErrNotFound = errors.New("no deno binary: install one (npm install deno) or set runtimes.deno in crucible.yaml")

// Find returns the deno binary to use: configured if not empty, else "deno"
// in PATH, else node_modules/.bin/deno in the current directory or the
// nearest of its parents that has one (where `npm install deno` puts it, as
// Node looks for packages). Symlinks are resolved, since the binary is bound
// into the jail by its real path.
func Find(configured string) (string, error) {
	p := configured
	if p == "" {
		var err error
		if p, err = exec.LookPath("deno"); err != nil {
			p = inNodeModules()
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", ErrNotFound
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", ErrNotFound
	}
	return real, nil
}

// inNodeModules is node_modules/.bin/deno in the working directory or the
// nearest parent that has one, or "" if none has.
func inNodeModules() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, "node_modules", ".bin", "deno")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Program runs src, a module named like file (its extension tells Deno
// whether it is TypeScript), with the deno binary at denoPath.
func Program(src []byte, file, denoPath string) *lang.Program {
	ext := filepath.Ext(file)
	switch ext {
	case ".ts", ".mts", ".tsx", ".js", ".mjs", ".jsx":
	default:
		ext = ".ts"
	}
	main := dir + "/main" + ext
	return &lang.Program{
		Lang:     lang.Deno,
		Main:     main,
		Args:     []string{denoPath, "run", "--no-config", "--no-prompt", "--no-check", "--quiet", "-A", runner, main},
		Env:      map[string]string{"DENO_DIR": cache, "DENO_NO_UPDATE_CHECK": "1", "NO_COLOR": "1"},
		Files:    map[string][]byte{main: src, runner: runnerSource},
		ReadOnly: []string{denoPath},
	}
}
