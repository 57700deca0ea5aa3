// Package deno runs a TypeScript or JavaScript program with Deno, when a
// deno binary is configured or found, cold or in a warm jail. The jail is
// the boundary; Deno's permission flags are a second wall inside it. A
// program is run as the embedded engine runs it: without import or export
// it is the body of an async function, whose return is the result; else a
// module, whose default export (awaited) is.
package deno

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

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

// globals are the declarations of the globals that the runner adds to
// Deno's (env, fs), which a type check adds to the program's own.
//
//go:embed globals.d.ts
var globals string

// ErrNotFound says that no deno binary was configured or found.
var ErrNotFound = errors.New("no deno binary: install one (npm install deno) or set runtimes.deno in crucible.yaml")

// Find returns the deno binary to use: configured if not empty, else "deno"
// in PATH, else node_modules/.bin/deno in the current directory or the
// nearest of its parents that has one (where `npm install deno` puts it, as
// Node looks for packages). Symlinks are resolved, since the binary is bound
// into the jail by its real path. A deno older than 2.0, or one that does
// not say its version, is refused (asked once per binary).
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
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", ErrNotFound
	}
	if err := checkVersion(real, fi); err != nil {
		return "", err
	}
	return real, nil
}

// minMajor is the oldest deno that Crucible runs: 2.0, the first whose
// refusals are NotCapable and whose runner's APIs are all there.
const minMajor = 2

// versions are the versions of the deno binaries found so far, by path,
// size and time of change: each is asked once.
var versions sync.Map // versionKey -> error (nil: new enough)

type versionKey struct {
	path  string
	size  int64
	mtime int64
}

// checkVersion refuses a deno binary older than minMajor, or one that does
// not say its version; it names no path.
func checkVersion(path string, fi os.FileInfo) error {
	key := versionKey{path, fi.Size(), fi.ModTime().UnixNano()}
	if err, ok := versions.Load(key); ok {
		e, _ := err.(error)
		return e
	}
	err := askVersion(path)
	versions.Store(key, err)
	return err
}

// askVersion runs deno --version: its first line is "deno X.Y.Z (...)".
func askVersion(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = []string{"NO_COLOR=1", "DENO_NO_UPDATE_CHECK=1"}
	out, err := cmd.Output()
	if err != nil {
		return errors.New("the deno binary does not run (deno --version failed): install one (npm install deno) or set runtimes.deno in crucible.yaml")
	}
	var major, minor, patch int
	line, _, _ := strings.Cut(string(out), "\n")
	if _, err := fmt.Sscanf(line, "deno %d.%d.%d", &major, &minor, &patch); err != nil {
		return errors.New("the deno binary does not say its version (deno --version): install one (npm install deno) or set runtimes.deno in crucible.yaml")
	}
	if major < minMajor {
		return fmt.Errorf("deno %d.%d.%d is too old: Crucible needs deno %d.0 or later (npm install deno, or set runtimes.deno in crucible.yaml)", major, minor, patch, minMajor)
	}
	return nil
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

// permissions are Deno's own flags, a second wall inside the jail's: reads
// and writes only where the program's files are, no FFI. The network is
// the egress's to decide and record (a flag would refuse before it, and
// the model would not learn why); the environment is only what the
// configuration gives, and subprocesses run inside the jail. The result
// channel is fd 3, the tools channel fds 4 and 5 (lang.Program.ToolPipes).
var permissions = []string{
	"--allow-read=/workspace,/run/workspace,/tmp,/skills,/dev/fd/4," + lang.Dir,
	"--allow-write=/workspace,/run/workspace,/tmp,/dev/fd/3,/dev/fd/5",
	"--allow-net", "--allow-env", "--allow-run", "--allow-sys",
	"--deny-ffi",
}

// command is deno running the runner with args.
func command(denoPath string, args ...string) []string {
	cmd := append([]string{denoPath, "run", "--no-config", "--no-prompt", "--no-check", "--quiet", "--no-lock"}, permissions...)
	cmd = append(cmd, runner)
	return append(cmd, args...)
}

// env is Deno's environment in the jail: its caches on the jail's /tmp.
var env = map[string]string{"DENO_DIR": cache, "DENO_NO_UPDATE_CHECK": "1", "NO_COLOR": "1", "DENO_EMIT_CACHE_MODE": "disable", "DENO_NO_PACKAGE_JSON": "1"}

// Program runs src, a program named like file, with the deno binary at
// denoPath; ext, if not "", is its extension whatever file's says (see
// Name: the extension tells Deno whether it is TypeScript).
func Program(src []byte, file, ext, denoPath string) *lang.Program {
	name := Name(file, ext)
	main := dir + "/main" + path.Ext(name)
	return &lang.Program{
		Lang:        lang.Deno,
		Main:        main,
		Args:        command(denoPath, main, name),
		Env:         env,
		Files:       map[string][]byte{main: src, runner: runnerSource},
		ReadOnly:    []string{denoPath},
		ToolPipes:   true,
		ReportsExit: true, // see run.js's end
	}
}

// checkFile is where a cold program's declarations are, for its check.
const checkFile = dir + "/check.d.ts"

// CheckedProgram is Program, type-checked against declarations (and the
// runner's globals) before it runs; it does not run unless it passes.
func CheckedProgram(src []byte, file, ext, denoPath, declarations string) *lang.Program {
	p := Program(src, file, ext, denoPath)
	p.Args = append(p.Args, "--check", checkFile)
	p.Files[checkFile] = []byte(globals + "\n" + declarations)
	return p
}

// WarmProgram is the runner, readied, waiting for its [Job] on stdin: the
// program of a warm jail. With checker, it readies Deno's type checker
// too (its language server, killed before the program runs), so that a
// job's check is warm.
func WarmProgram(denoPath string, checker bool) *lang.Program {
	args := command(denoPath, "--warm")
	if checker {
		args = append(args, "--checker")
	}
	return &lang.Program{
		Lang:        lang.Deno,
		Args:        args,
		Env:         env,
		Files:       map[string][]byte{runner: runnerSource},
		ReadOnly:    []string{denoPath},
		ToolPipes:   true,
		ReportsExit: true, // see run.js's end
	}
}

// Job is a warm worker's program, sent on its stdin.
type Job struct {
	Source string `json:"source"`
	Name   string `json:"name"` // its file's, as stack traces show it: its extension says whether it is TypeScript
	// Check, if not "", are the declarations to type-check the program
	// against before it runs (the runner's globals among them).
	Check string `json:"check,omitempty"`
}

// Input is a warm worker's stdin for src, a program named like file; ext,
// if not "", is its extension whatever file's says (".js").
func Input(src []byte, file, ext string) ([]byte, error) {
	return json.Marshal(Job{Source: string(src), Name: Name(file, ext)})
}

// CheckedInput is Input for a program type-checked against declarations
// (and the runner's globals) before it runs.
func CheckedInput(src []byte, file, ext, declarations string) ([]byte, error) {
	return json.Marshal(Job{Source: string(src), Name: Name(file, ext), Check: globals + "\n" + declarations})
}

// Name is the name a program named like file runs under: its base name
// when that is safe in a stack trace and has an extension Deno runs (ext,
// if not "", is the only one taken), else main with that extension
// (.ts, or ext).
func Name(file, ext string) string {
	name := path.Base(filepath.ToSlash(file))
	e := path.Ext(name)
	ok := slices.Contains(extensions, e) && (ext == "" || e == ext)
	if !ok || !safeName(name) {
		if ext == "" {
			ext = ".ts"
		}
		return "main" + ext
	}
	return name
}

// extensions are those Deno runs a program of.
var extensions = []string{".ts", ".mts", ".tsx", ".js", ".mjs", ".jsx"}

// safeName reports whether a file's name may appear in stack traces and
// paths as is: up to 100 of [A-Za-z0-9._-], the first alphanumeric.
func safeName(name string) bool {
	if name == "" || len(name) > 100 || !isAlnum(name[0]) {
		return false
	}
	for _, c := range []byte(name) {
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
