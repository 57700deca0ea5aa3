// Package python runs a Python program in the jail with the host's python3,
// in isolated mode (-I: no environment variables, no user site-packages, no
// script directory on sys.path), with a small `crucible` module importable.
// `crucible.result` (anything JSON can encode) becomes the result.
package python

import (
	_ "embed"

	"github.com/cruciblehq/crucible/lang"
)

// Paths inside the jail.
const (
	dir    = "/crucible/python"
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

// Program runs src with the interpreter at python (a host path; under /usr it
// is already in the jail, elsewhere it is bound read-only).
func Program(src []byte, python string) *lang.Program {
	p := &lang.Program{
		Lang: lang.Python,
		Main: Main,
		// -u: unbuffered, so output interleaves as written; -B: the jail's
		// root is read-only, no .pyc to write.
		Args:  []string{python, "-I", "-B", "-u", runner},
		Files: map[string][]byte{Main: src, runner: runnerSource, module: moduleSource},
	}
	if !underUsr(python) {
		p.ReadOnly = []string{python}
	}
	return p
}

func underUsr(p string) bool { return len(p) > 5 && p[:5] == "/usr/" }
