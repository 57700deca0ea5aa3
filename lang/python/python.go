// Package python runs a Python program in the jail with the host's python3,
// in isolated mode (-I: no environment variables, no user site-packages, no
// script directory on sys.path), with a small `crucible` module importable.
// `crucible.result` (anything JSON can encode) becomes the result.
package python

import (
	_ "embed"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/cruciblehq/crucible/lang"
)

// Paths inside the jail.
const (
	dir    = lang.Dir + "/python"
	Main   = dir + "/main.py" // the program
	runner = dir + "/run.py"
	module = dir + "/lib/crucible.py"
)

var (
	//go:embed run.py
	runnerSource []byte
	//go:embed crucible.py
	moduleSource []byte
)

// Program runs src, a program named like file ("-" for standard input),
// with the interpreter at python (a host path; under /usr it is already in
// the jail, elsewhere it is bound read-only).
func Program(src []byte, file, python string) *lang.Program {
	p := runnerProgram(python, "--", displayName(file))
	p.Main, p.Files[Main] = Main, src
	return p
}

// WarmProgram is the runner with the interpreter at python, readied (its
// imports done), waiting for its [Job] on stdin: the program of a warm
// jail. The jail's timeout, which starts when the job is sent, stops it.
func WarmProgram(python string) *lang.Program {
	return runnerProgram(python, "--warm")
}

// runnerProgram runs the runner, with args.
func runnerProgram(python string, args ...string) *lang.Program {
	p := &lang.Program{
		Lang: lang.Python,
		// -u: unbuffered, so output interleaves as written; -B: the jail's
		// root is read-only, no .pyc to write; -S: site runs once the
		// program needs it (run.py's Site).
		Args:  append([]string{python, "-I", "-S", "-B", "-u", runner}, args...),
		Files: map[string][]byte{runner: runnerSource, module: moduleSource},
	}
	if !underUsr(python) {
		p.ReadOnly = []string{python}
	}
	return p
}

// Input is what a warm runner reads on stdin for src, named like file as
// Program would name it: the name, a newline, and the program's exact bytes
// (a coding comment may name another encoding than UTF-8). A name never
// holds a newline (displayName).
func Input(src []byte, file string) []byte {
	name := strings.ToValidUTF8(displayName(file), "\uFFFD")
	return append(append(make([]byte, 0, len(name)+1+len(src)), name+"\n"...), src...)
}

// displayName is the program's name in tracebacks: its file's base name
// (a host path would tell the program about the host), or <stdin> as
// Python names a program read from there, or main.py for a name that could
// garble a traceback.
func displayName(file string) string {
	name := filepath.Base(file)
	switch {
	case file == "-":
		return "<stdin>"
	case name == "." || name == "/" || strings.ContainsFunc(name, unicode.IsControl):
		return "main.py"
	}
	return name
}

func underUsr(p string) bool { return len(p) > 5 && p[:5] == "/usr/" }
