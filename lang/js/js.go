// Package js plans TypeScript and JavaScript programs for the engine
// embedded in Crucible (package engine): no Node or Deno needed. The command
// in the jail is this binary, re-executed as the worker (package worker,
// which runs inside the jail); this package is the host's side: the
// worker's command line, the program's files, and a warm worker's Job.
package js

import (
	"maps"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cruciblehq/crucible/lang"
)

// Worker is the worker's path in the jail: this binary, bound read-only.
const Worker = lang.Dir + "/bin/crucible-js"

// dir holds the program's source in the jail.
const dir = lang.Dir + "/js"

// Options are the engine's limits.
type Options struct {
	Heap  int64 // bytes
	Stack int   // call frames

	// Timeout is the jail's: the execution's wall time, which for a warm
	// worker starts as its Job is sent. The worker stops the program a
	// little before it (see stopBefore), so that it can say so; 0 leaves
	// the stop to the jail.
	Timeout time.Duration
}

// safeName reports whether a file's name may appear in stack traces as
// is: up to 100 of [A-Za-z0-9._-], the first alphanumeric. (A regexp of
// it compiled to ~100 KB, at the start of every process of this binary.)
func safeName(name string) bool {
	if name == "" || len(name) > 100 || name[0] == '.' || name[0] == '_' || name[0] == '-' {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Program runs src, a program named like file (its extension and base name
// only: "main.ts" or "main.js" for standard input or an odd name).
func Program(src []byte, file string, ts bool, o Options) *lang.Program {
	l, ext := language(ts)
	name := displayName(file, ts)
	main := dir + "/main" + ext
	return &lang.Program{
		Lang:  l,
		Main:  main,
		Args:  append([]string{Worker, "-lang=" + l, "-name=" + name}, append(o.flags(), main)...),
		Env:   workerEnv,
		Files: map[string][]byte{main: src},
		Self:  Worker,

		ReportsExit: true, // the worker's (see package worker); programs have no fd 3
	}
}

// flags hand o to the worker.
func (o Options) flags() []string {
	return []string{"-heap=" + strconv.FormatInt(o.Heap, 10), "-stack=" + strconv.Itoa(o.Stack), "-timeout=" + o.Timeout.String()}
}

// Job is a warm worker's program, sent on its stdin.
type Job struct {
	Source string `json:"source"`
	Name   string `json:"name"` // as stack traces show it
	Lang   string `json:"lang"` // lang.TypeScript or lang.JavaScript
}

// NewJob is src's job, named like file as Program would.
func NewJob(src []byte, file string, ts bool) *Job {
	l, _ := language(ts)
	return &Job{Source: string(src), Name: displayName(file, ts), Lang: l}
}

// language is ts's language and file extension.
func language(ts bool) (string, string) {
	if ts {
		return lang.TypeScript, ".ts"
	}
	return lang.JavaScript, ".js"
}

// warmEnv is what a warm worker adds to the jail's environment: it runs on
// one P (see package worker), from its runtime's start; set later, the
// second P's teardown cost ~0.4 ms a worker (a stop of the world, and
// page faults as its cache went back).
var warmEnv = func() map[string]string {
	env := map[string]string{"GOMAXPROCS": "1"}
	maps.Copy(env, workerEnv)
	return env
}()

// Own says whether k=v is the worker's own, added by Program or
// WarmProgram, not the sandbox's: the program's env leaves it out.
func Own(k, v string) bool {
	w, ok := warmEnv[k]
	return ok && w == v
}

// displayName is the program's name in stack traces: the file's base name,
// or main.ts / main.js for standard input or an odd name.
func displayName(file string, ts bool) string {
	if name := filepath.Base(file); safeName(name) {
		return name
	}
	_, ext := language(ts)
	return "main" + ext
}

// WarmProgram is a worker that readies its engine, then waits for its Job
// on stdin: the program of a warm jail.
func WarmProgram(o Options) *lang.Program {
	return &lang.Program{
		Lang: lang.TypeScript,
		Args: append([]string{Worker, "-warm"}, o.flags()...),
		Env:  warmEnv,
		Self: Worker,

		ReportsExit: true,
	}
}
