// Package worker is the embedded engine's side inside the jail: this
// binary, re-executed as the command of a TypeScript or JavaScript
// execution, runs the program (package engine) and reports its outcome on
// fd 3. Package js plans what it is given; nothing here runs on the host
// side of the jail.
package worker

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/lang/js"
	"github.com/cruciblehq/crucible/lang/js/engine"
)

// The worker is entered here, from this package's init, rather than from
// main: Go initializes a package as soon as everything it imports is,
// taking the first by import path among those ready, so this one runs right
// after the engine and before the packages of the binary it does not need
// that sort after it (the MCP SDK, the tools bridge, the sandbox itself),
// and a worker never pays for their initialization. The packages it imports and
// those ready before them still initialize first (modernc.org's sort after
// most others). Any binary that links this package, as package sandbox
// does, is a worker when run as one; in any other process this returns at
// once. TestWorkerHookRunsEarly checks it in the crucible binary.
func init() {
	if len(os.Args) > 0 && os.Args[0] == js.Worker {
		os.Exit(Main(os.Args[1:]))
	}
}

// maxJob bounds a job read from stdin: the source, and some.
const maxJob = 64 << 20

// stopBefore is how long before the jail's timeout the worker stops the
// program itself, to report a TimeoutError while the jail's clock still
// runs. The jail's clock starts a little before the worker's (before the
// worker exists, or as a warm worker's Job is sent): tens of milliseconds
// here, several times that on a slow, loaded machine or under the race
// detector. A fifth of the timeout covers that on a short timeout and
// leaves the program most of its time; a second covers it on any machine
// fit to run jails. Should the jail strike first all the same, only the
// TimeoutError is missing: console output is written as it is made.
func stopBefore(timeout time.Duration) time.Duration { return min(timeout/5, time.Second) }

// programContext is what the program runs in: it ends stopBefore the
// timeout counted from start, or never for no timeout.
func programContext(start time.Time, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithDeadline(context.Background(), start.Add(timeout-stopBefore(timeout)))
}

// Main runs inside the jail: it runs the program and reports its
// outcome on fd 3. Its exit code is 0, or 1 for an uncaught error, or 124
// (as the jail's) when it ran out of time.
func Main(args []string) int {
	start := time.Now()
	fs := flag.NewFlagSet("crucible-js", flag.ContinueOnError)
	l := fs.String("lang", lang.TypeScript, "")
	name := fs.String("name", "main.ts", "")
	heap := fs.Int64("heap", engine.DefaultHeap, "")
	stack := fs.Int("stack", engine.DefaultStack, "")
	warm := fs.Bool("warm", false, "")
	timeout := fs.Duration("timeout", 0, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 && !*warm {
		fmt.Fprintln(os.Stderr, "crucible-js: bad arguments")
		return 2
	}
	o := engine.Options{
		Heap: *heap, Stack: *stack,
		Stdout: os.Stdout, Stderr: os.Stderr,
		Env:    environ(),
		Dirs:   map[string]string{"/workspace": "/workspace", "/tmp": "/tmp"},
		Skills: engine.SkillsDir, // bound there when the server has skills
		HTTP:   httpClient(),
		Tools:  toolsChannel(),
	}
	// fd 3 is the result channel; without one (run by hand) it is closed
	// and writes to it fail, which is fine. One File for the process: a
	// second's finalizer would close the first's descriptor.
	result := os.NewFile(3, "result")
	var out *lang.Outcome
	if *warm {
		out, start = warmRun(o, *timeout, result)
	} else {
		src, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(os.Stderr, "crucible-js: %v\n", err)
			return 2
		}
		ctx, cancel := programContext(start, *timeout)
		out = engine.Run(ctx, string(src), *name, *l == lang.TypeScript, o)
		cancel()
	}
	timedOut := out.Error != nil && out.Error.Name == "TimeoutError"
	if !timedOut {
		// Nothing of the program runs after this report: the engine is
		// done with it (its event loop ends only once no fetch or tool
		// call is in flight, as Node's does, so no refusal of one can come
		// after this either), and the process exits with this code once
		// stderr has the error.
		code := 0
		if out.Error != nil {
			code = 1
		}
		out.Exit = &code
	}
	if b, err := json.Marshal(out); err == nil {
		_, _ = result.Write(b)
	}
	if out.Error != nil {
		printError(out.Error)
	}
	switch {
	case timedOut:
		// Only the deadline above interrupts the engine. The jail reports
		// a timeout its own way (exit 124, SIGKILL, limits_hit "timeout"):
		// rather than imitate that, wait for it, so that the user sees the
		// same whichever stopped the program. By the timeout from start,
		// and a second for its own delay, the jail has struck; else there
		// is no jail (run by hand), and this says what it would have.
		time.Sleep(time.Until(start.Add(*timeout)) + time.Second)
		return jail.ExitTimeout
	case out.Error != nil:
		return 1
	}
	return 0
}

// warmRun readies an engine, then runs the job that arrives on stdin; its
// arrival starts the timeout.
func warmRun(o engine.Options, timeout time.Duration, result *os.File) (*lang.Outcome, time.Time) {
	// One P: the program is one goroutine's work, and esbuild's goroutines
	// (it parses and links in parallel) then take turns on this thread
	// instead of waking another, which on an idle VM takes tens of
	// microseconds each time: the job's transpile took 0.1-0.25 ms less in
	// a warm pool (and went from 0.5-1.7 ms to 0.3-0.5 ms when hot, in a
	// process of its own). Fetches and tool calls still run beside the
	// program: Go preempts a goroutine that keeps the P. A cold worker
	// (Main without -warm) keeps GOMAXPROCS as it is, to make its engine
	// while esbuild loads. The warm worker's environment sets it from the
	// runtime's start (js.WarmProgram), which makes this call a no-op.
	runtime.GOMAXPROCS(1)
	rt, err := engine.New(o)
	if err != nil {
		return &lang.Outcome{Error: &lang.Error{Name: "CrucibleError", Message: err.Error()}}, time.Now()
	}
	engine.WarmUp()
	_, _ = result.Write([]byte{lang.ReadyMark}) // see lang.Warm.SaysReady
	var job js.Job
	b, err := io.ReadAll(io.LimitReader(os.Stdin, maxJob))
	_, _ = result.Write([]byte{lang.TakenMark}) // nothing of the program has run
	if err == nil {
		err = json.Unmarshal(b, &job)
	}
	if wd, werr := os.Getwd(); werr == nil {
		_ = os.Chdir(wd) // see lang.Warm: the workspace may be there now
	}
	start := time.Now()
	if err != nil {
		rt.Close()
		return &lang.Outcome{Error: &lang.Error{Name: "CrucibleError", Message: "reading the job: " + err.Error()}}, start
	}
	ctx, cancel := programContext(start, timeout)
	defer cancel()
	// Not closed: the process exits once it has reported the outcome,
	// which frees the engine at once; Close would first free each of its
	// objects, while the execution waits.
	return rt.Run(ctx, job.Source, job.Name, job.Lang == lang.TypeScript), start
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

// environ is the sandbox's environment, as the program's env shows it:
// without what the worker's launch added for the worker itself.
func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && !js.Own(k, v) {
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
