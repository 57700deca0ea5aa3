// Package python runs a Python program in the jail with the host's python3,
// in isolated mode (-I: no environment variables, no user site-packages, no
// script directory on sys.path), with a small `crucible` module importable.
// `crucible.result` (anything JSON can encode) becomes the result.
package python

import (
	_ "embed"
	"encoding/base64"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/cruciblehq/crucible/lang"
)

// Paths inside the jail.
const (
	dir    = lang.Dir + "/python"
	Main   = dir + "/main.py" // the program
	runner = dir + "/run.py"  // the runner's entry
	body   = dir + "/lib/crucible_runner.py"
	module = dir + "/lib/crucible.py"
)

var (
	//go:embed run.py
	runnerSource []byte
	//go:embed runner.py
	bodySource []byte
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
		// program needs it (runner.py's Site).
		Args:  append([]string{python, "-I", "-S", "-B", "-u", runner}, args...),
		Files: map[string][]byte{runner: runnerSource, body: bodySource, module: moduleSource},
	}
	if !underUsr(python) {
		p.ReadOnly = []string{python}
	}
	return p
}

// compiled are the modules whose bytecode CompileProgram makes: those that
// every worker imports.
var compiled = []string{body, module}

// compileScript writes the interpreter's cache tag (cpython-311), or an
// empty line for an interpreter that caches no bytecode, then a line for
// each module its arguments name: its path and its bytecode, in base64,
// as the interpreter would cache it (py_compile's, in memory). The
// bytecode is checked against the source by hash (PEP 552: flags 3), not
// by time: a jail's files are new each time.
const compileScript = `import base64, importlib.util, marshal, sys
tag = sys.implementation.cache_tag
print(tag or "")
for src in sys.argv[1:] if tag else []:
    with open(src, "rb") as f:
        source = f.read()
    code = compile(source, src, "exec", dont_inherit=True)
    pyc = importlib.util.MAGIC_NUMBER + (3).to_bytes(4, "little") + importlib.util.source_hash(source) + marshal.dumps(code)
    print(src, base64.b64encode(pyc).decode())
`

// CompileProgram compiles the runner's modules with the interpreter at
// python, which runs them: a pool runs it once, in a jail of its own, and
// gives its workers what Compiled makes of its output.
func CompileProgram(python string) *lang.Program {
	p := runnerProgram(python)
	p.Args = append([]string{python, "-I", "-S", "-B", "-c", compileScript}, compiled...)
	return p
}

// maxBytecode bounds one module's bytecode: several times the runner's.
const maxBytecode = 1 << 20

// cacheTag says whether an interpreter's sys.implementation.cache_tag is
// one whose bytecode may be used: a short part of a file name, of letters,
// digits, '-' and '_'.
func cacheTag(tag string) bool {
	ok := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
	}
	return len(tag) <= 32 && tag != "" && !strings.ContainsFunc(tag, func(r rune) bool { return !ok(r) })
}

// Compiled makes CompileProgram's output into the files where the
// interpreter looks for the runner's bytecode, beside each module in
// __pycache__; an interpreter that caches none makes none.
func Compiled(out []byte) (map[string][]byte, error) {
	tag, rest, _ := strings.Cut(string(out), "\n")
	if tag == "" {
		return nil, nil
	}
	if !cacheTag(tag) {
		return nil, fmt.Errorf("python: a cache tag %.40q", tag)
	}
	files := map[string][]byte{}
	for _, line := range strings.Split(strings.TrimSuffix(rest, "\n"), "\n") {
		src, b64, _ := strings.Cut(line, " ")
		if !slices.Contains(compiled, src) || files[cached(src, tag)] != nil {
			return nil, fmt.Errorf("python: bytecode for %.60q", src)
		}
		pyc, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(pyc) == 0 || len(pyc) > maxBytecode {
			return nil, fmt.Errorf("python: the bytecode of %s is not base64, or too large", path.Base(src))
		}
		files[cached(src, tag)] = pyc
	}
	if len(files) != len(compiled) {
		return nil, fmt.Errorf("python: bytecode for %d modules of %d", len(files), len(compiled))
	}
	return files, nil
}

// cached is where the interpreter of tag looks for the bytecode of the
// module at src (importlib.util.cache_from_source).
func cached(src, tag string) string {
	d, f := path.Split(src)
	return d + "__pycache__/" + strings.TrimSuffix(f, ".py") + "." + tag + ".pyc"
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
