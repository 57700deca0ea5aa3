package lang

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Settings are the operator's runtime settings, for the languages that need
// them.
type Settings struct {
	Python  string // the python3 interpreter, a host path
	Deno    string // the deno binary, a host path; "" finds one
	JSHeap  int64  // the embedded engine's heap, in bytes
	JSStack int    // its call depth, in frames

	// WarmChecker has a warm worker ready a type checker too, since every
	// program will be type-checked (serve.typecheck); a runtime without a
	// checker to warm ignores it.
	WarmChecker bool

	// Timeout is the execution's wall-time limit, which the jail enforces:
	// a runtime that can stop the program a little before it may say why.
	Timeout time.Duration
}

// Language is one language that `crucible run` offers, as its package
// registers it.
type Language struct {
	Name       string   // as --lang names it: "ts", "py"
	Extensions []string // the file extensions that pick it, in lower case: ".py"
	// Program plans src, a program named like file ("-" for standard
	// input), with the operator's settings.
	Program func(src []byte, file string, s Settings) (*Program, error)
	// Check says whether the language can run on this host, for `crucible
	// doctor`: what it found, or why not and how to fix it.
	Check func(s Settings) (detail string, err error)
	// Warm, if not nil, lets a jail be built before its program arrives
	// (sandbox.Pool).
	Warm *Warm
	// TypeCheck, if not nil, is the language's type checker, which runs
	// inside the program's jail before the program: a program that does
	// not type-check, or whose check cannot finish, does not run.
	TypeCheck *TypeCheck
}

// TypeCheck plans a program that is type-checked against declarations
// (TypeScript's, of the globals the program may use beyond the
// runtime's: its tools) before it runs: cold, as Language.Program does,
// or warm, as Warm.Input does.
type TypeCheck struct {
	Program func(src []byte, file, declarations string, s Settings) (*Program, error)
	Input   func(src []byte, file, declarations string) ([]byte, error)
}

// Warm is a language's way to wait in a ready jail: a worker that readies
// itself, then reads its program from stdin. Once the program has arrived,
// the worker enters its working directory again, by its path: the
// execution's workspace may have been bound over it meanwhile (a pool of
// sandbox.PoolOptions.Workspaces binds it just before the program).
type Warm struct {
	// Program is the worker, with the operator's settings; its error
	// (a runtime that is not there) refuses the pool, and names the
	// setting to fix.
	Program func(s Settings) (*Program, error)
	// Input is the worker's stdin that hands it src, a program named like
	// file.
	Input func(src []byte, file string) ([]byte, error)
	// Worker, if not "", names the worker that Program starts: languages
	// whose Warm names the same Worker start the same one, with the same
	// settings, so that a jail readied for one runs the others' programs
	// too, each handed over by its own language's Input.
	Worker string
	// SaysReady: the worker writes ReadyMark on fd 3, before its outcome,
	// once it is ready and waits for its job, so that a pool hands work to
	// the jails that can start it at once; then TakenMark, once it has read
	// the job and before any of the program runs. Without it, a jail counts
	// as ready as soon as it is started.
	SaysReady bool
	// Compile, if not nil, is work a worker would do the same way every
	// time, done once for all of them: a pool runs its Program once, in a
	// jail of its own that runs nothing else, before its first worker, and
	// adds to every worker's files what its Files makes of that program's
	// standard output. Should either fail, the workers do that work
	// themselves, as a cold program's always does.
	Compile *Compile
}

// Compile is a Warm's work done once for all its workers: for Python, the
// runner's bytecode, compiled by the operator's interpreter.
type Compile struct {
	Program func(s Settings) *Program
	Files   func(stdout []byte) (map[string][]byte, error)
}

// ReadyMark is what a worker that SaysReady writes first on fd 3: a
// newline, which a reader of the outcome's JSON would skip anyway.
const ReadyMark = '\n'

// TakenMark is what a worker that SaysReady writes next on fd 3, once it
// has read its job and before any of the program runs: a newline too. A
// jail that ended without it never ran any of the program, so that its
// job may run in another.
const TakenMark = '\n'

// Default is the language of a program whose file names none.
const Default = TypeScript

var registry struct {
	sync.RWMutex
	langs map[string]Language
}

// Register adds a language; a package calls it from init. A second
// language of the same name, or one claiming another's extension, is a
// programming error and panics.
func Register(l Language) {
	registry.Lock()
	defer registry.Unlock()
	if registry.langs == nil {
		registry.langs = map[string]Language{}
	}
	if _, dup := registry.langs[l.Name]; dup || l.Program == nil {
		panic("lang: bad or second registration of " + l.Name)
	}
	for _, other := range registry.langs {
		for _, ext := range l.Extensions {
			if slices.Contains(other.Extensions, ext) {
				panic("lang: " + l.Name + " and " + other.Name + " both claim " + ext)
			}
		}
	}
	registry.langs[l.Name] = l
}

// Lookup returns the language registered under name.
func Lookup(name string) (Language, bool) {
	registry.RLock()
	defer registry.RUnlock()
	l, ok := registry.langs[name]
	return l, ok
}

// All returns every registered language, by name.
func All() []Language {
	registry.RLock()
	defer registry.RUnlock()
	var ls []Language
	for _, name := range names() {
		ls = append(ls, registry.langs[name])
	}
	return ls
}

// names are the registered languages' names, sorted; the caller holds the
// lock.
func names() []string {
	var ns []string
	for n := range registry.langs {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// Detect picks the language: the one named, else the one whose extension
// file has, else [Default].
func Detect(name, file string) (string, error) {
	registry.RLock()
	defer registry.RUnlock()
	if name != "" {
		if _, ok := registry.langs[name]; !ok {
			return "", fmt.Errorf("unknown language %q (want one of %s)", name, strings.Join(names(), ", "))
		}
		return name, nil
	}
	ext := strings.ToLower(filepath.Ext(file))
	for _, l := range registry.langs {
		if ext != "" && slices.Contains(l.Extensions, ext) {
			return l.Name, nil
		}
	}
	return Default, nil
}
