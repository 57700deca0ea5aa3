// Package js runs TypeScript and JavaScript on the engine embedded in
// Crucible (package engine): no Node or Deno needed. The command in the jail
// is this binary, re-executed as the worker; [Hook] is its entry point.
package js

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/lang/js/engine"
)

// Worker is the worker's path in the jail: this binary, bound read-only.
const Worker = jail.FilesDir + "/bin/crucible-js"

// dir holds the program's source in the jail.
const dir = jail.FilesDir + "/js"

// Options are the engine's limits.
type Options struct {
	Heap  int64 // bytes
	Stack int   // call frames
}

// safeName is what a file's name may be to appear in stack traces as is.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Program runs src, a program named like file (its extension and base name
// only: "main.ts" or "main.js" for standard input or an odd name).
func Program(src []byte, file string, ts bool, o Options) *lang.Program {
	l, ext := language(ts)
	name := displayName(file, ts)
	main := dir + "/main" + ext
	return &lang.Program{
		Lang: l,
		Main: main,
		Args: []string{Worker, "-lang=" + l, "-name=" + name,
			"-heap=" + strconv.FormatInt(o.Heap, 10), "-stack=" + strconv.Itoa(o.Stack), main},
		Files: map[string][]byte{main: src},
		Self:  Worker,
	}
}

// Hook runs the worker when this process is one, and then never returns.
// Call it first thing in main and in TestMain, after jail.Hook.
func Hook() {
	if len(os.Args) > 0 && os.Args[0] == Worker {
		os.Exit(workerMain(os.Args[1:]))
	}
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

// displayName is the program's name in stack traces: the file's base name,
// or main.ts / main.js for standard input or an odd name.
func displayName(file string, ts bool) string {
	if name := filepath.Base(file); safeName.MatchString(name) {
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
		Args: []string{Worker, "-warm", "-heap=" + strconv.FormatInt(o.Heap, 10), "-stack=" + strconv.Itoa(o.Stack)},
		Self: Worker,
	}
}

// maxJob bounds a job read from stdin: the source, and some.
const maxJob = 64 << 20

// workerMain runs inside the jail: it runs the program and reports its
// outcome on fd 3. Its exit code is 0, or 1 for an uncaught error.
func workerMain(args []string) int {
	fs := flag.NewFlagSet("crucible-js", flag.ContinueOnError)
	l := fs.String("lang", lang.TypeScript, "")
	name := fs.String("name", "main.ts", "")
	heap := fs.Int64("heap", engine.DefaultHeap, "")
	stack := fs.Int("stack", engine.DefaultStack, "")
	warm := fs.Bool("warm", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 && !*warm {
		fmt.Fprintln(os.Stderr, "crucible-js: bad arguments")
		return 2
	}
	o := engine.Options{
		Heap: *heap, Stack: *stack,
		Stdout: os.Stdout, Stderr: os.Stderr,
		Env:  environ(),
		Dirs: map[string]string{"/workspace": "/workspace", "/tmp": "/tmp"},
		HTTP: httpClient(),
	}
	var out *lang.Outcome
	if *warm {
		out = warmRun(o)
	} else {
		src, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(os.Stderr, "crucible-js: %v\n", err)
			return 2
		}
		out = engine.Run(context.Background(), string(src), *name, *l == lang.TypeScript, o)
	}
	if b, err := json.Marshal(out); err == nil {
		// fd 3 is the result channel; without one (run by hand) it is closed
		// and the write fails, which is fine.
		r := os.NewFile(3, "result")
		_, _ = r.Write(b)
	}
	if out.Error != nil {
		printError(out.Error)
		return 1
	}
	return 0
}

// warmRun readies an engine, then runs the job that arrives on stdin.
func warmRun(o engine.Options) *lang.Outcome {
	rt, err := engine.New(o)
	if err != nil {
		return &lang.Outcome{Error: &lang.Error{Name: "CrucibleError", Message: err.Error()}}
	}
	engine.WarmUp()
	var job Job
	b, err := io.ReadAll(io.LimitReader(os.Stdin, maxJob))
	if err == nil {
		err = json.Unmarshal(b, &job)
	}
	if err != nil {
		rt.Close()
		return &lang.Outcome{Error: &lang.Error{Name: "CrucibleError", Message: "reading the job: " + err.Error()}}
	}
	return rt.Run(context.Background(), job.Source, job.Name, job.Lang == lang.TypeScript)
}

// printError shows an uncaught error on stderr, as Deno or Node would.
func printError(e *lang.Error) {
	msg := "error: Uncaught " + e.Name
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Stack != "" {
		msg += "\n" + e.Stack
	}
	fmt.Fprintln(os.Stderr, msg)
}

func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// httpClient is fetch's: no proxy from the environment (the jail's network
// is the only way out), and the jail's resolver.
func httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 0, // the execution's own timeout bounds it
	}}
}
