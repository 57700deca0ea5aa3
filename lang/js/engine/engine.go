// Package engine runs a TypeScript or JavaScript program in an embedded
// engine (QuickJS, through modernc.org/quickjs: pure Go, no cgo), with the
// Web-like globals that code-mode programs expect: console, timers, fetch,
// URL, TextEncoder, structuredClone, crypto, env, and a small fs limited to
// /workspace and /tmp.
//
// The engine is not the boundary: it runs in the jail's worker process, and
// whatever escapes it meets the jail. Its limits (heap, call depth, a
// deadline) turn a runaway program into a catchable error or a clean stop
// rather than a dead worker.
package engine

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/quickjs"

	"github.com/cruciblehq/crucible/lang"
)

// Defaults for Options' zero values.
const (
	DefaultHeap  = 256 << 20
	DefaultStack = 10000 // JavaScript call frames
)

// gcStart is the heap size at which QuickJS first collects garbage (its
// own default is 256 KiB); after each collection it sets the next at 1.5
// times what is left, as before. Starting an engine (the Web APIs and the
// prelude) grows the heap past 256 KiB several times, and each time QuickJS
// marks and sweeps the whole heap so far: ~15 % of the engine's start,
// spent on garbage that hardly exists yet. 4 MiB, as Go's own first heap
// goal, is far below the smallest heap an engine may have (16 MiB, the
// configuration's floor): a program still gets its garbage collected long
// before it could run out.
const gcStart = 4 << 20

// Options set up one run.
type Options struct {
	Heap  int64 // bytes the engine may allocate; 0 means DefaultHeap
	Stack int   // call depth; 0 means DefaultStack

	// Stdout and Stderr are console's; nil means discard. Each console call
	// is one Write, as it happens: what a program printed is out before
	// whatever ends it (the jail's timeout or memory limit, a crash).
	Stdout, Stderr io.Writer
	Env            map[string]string // the program's env global, read-only

	// Dirs maps the directories the program's fs may use (as it names
	// them: "/workspace", "/tmp") to where they are; none means no fs.
	// Relative paths are taken from the first, "/workspace".
	Dirs map[string]string

	// Skills is where the directory that programs import as /skills is;
	// "" means there are no skills.
	Skills string

	// HTTP is fetch's client; nil refuses every fetch.
	HTTP *http.Client
	// Tools carries the tools global's calls; nil makes each of them
	// throw that no tools are configured.
	Tools Tools
}

// scripts are the JavaScript half of the runtime: web.js (the Web APIs
// that need nothing of Go) and prelude.js (those that do, and the loop's),
// with their bytecode (see internal/jsc), which is what runs.
//
//go:generate go run ./internal/jsc
//go:embed js/*.js js/*.bc
var scripts embed.FS

func script(name string) []byte {
	b, _ := scripts.ReadFile("js/" + name)
	return b
}

// Run runs the program src, whose name (as stack traces show it) is name;
// ts says it is TypeScript. The outcome is the program's default export (or
// top-level return) as JSON, or its uncaught error. A program still running
// when ctx ends is interrupted.
func Run(ctx context.Context, src, name string, ts bool, o Options) *lang.Outcome {
	// esbuild's first transform in a process takes ~2 ms (it parses its own
	// helpers), as long as the engine's start: do the two at once.
	type transpiled struct {
		p   *program
		err *lang.Error
	}
	ch := make(chan transpiled, 1)
	go func() {
		p, err := transpile(src, name, ts)
		ch <- transpiled{p, err}
	}()
	r, err := New(o)
	t := <-ch
	if err != nil {
		return internalError(err)
	}
	defer r.Close()
	if t.err != nil {
		return &lang.Outcome{Error: t.err}
	}
	return r.run(ctx, t.p)
}

// Run runs one program on r, as the package's Run does. r runs no other;
// the caller closes it, or exits: a worker that reports the outcome first
// and then exits frees the engine sooner than Close would.
func (r *Runtime) Run(ctx context.Context, src, name string, ts bool) *lang.Outcome {
	p, err := transpile(src, name, ts)
	if err != nil {
		return &lang.Outcome{Error: err}
	}
	return r.run(ctx, p)
}

// WarmUp does once what the first transpile in a process would: a warm
// worker calls it while it waits for its program.
func WarmUp() { _, _ = transpile("0", "warm.js", false) }

func internalError(err error) *lang.Outcome {
	return &lang.Outcome{Error: &lang.Error{Name: "CrucibleError", Message: err.Error()}}
}

// Runtime is one program's engine and event loop, made ready before the
// program is known (a warm worker makes it while it waits). Everything but
// the goroutines of fetch and the deadline's watcher runs on the caller's
// goroutine, which owns the VM.
type Runtime struct {
	vm       *quickjs.VM
	prog     *program // set before run
	o        Options
	dispatch quickjs.Value // the prelude's: Go's way back into JavaScript

	timers timers
	tasks  chan func()   // work done elsewhere, to finish on the VM's goroutine
	done   chan struct{} // closed when the run is over: tasks are dropped
	busy   int           // fetches and tool calls in flight
	fetch  fetches

	toolSeq int
	names   toolNames
	life    context.Context // ends with Close: the tool calls still running
	end     context.CancelFunc
	files   *files

	outcome *lang.Outcome // set once the program has settled
	closed  bool
}

// New starts an engine with every global in place, for one program.
func New(o Options) (_ *Runtime, err error) {
	if o.Heap <= 0 {
		o.Heap = DefaultHeap
	}
	if o.Stack <= 0 {
		o.Stack = DefaultStack
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("starting the engine: %w", err)
	}
	r := &Runtime{
		vm: vm, o: o,
		tasks: make(chan func(), 16),
		done:  make(chan struct{}),
		files: newFiles(o.Dirs),
	}
	r.fetch.init()
	r.life, r.end = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	vm.SetMemoryLimit(uintptr(o.Heap))
	vm.SetGCThreshold(gcStart)
	vm.SetMaxStackSize(uintptr(o.Stack))
	vm.SetModuleLoader(r.loadModule, resolveModule)
	if err := r.registerHost(); err != nil {
		return nil, err
	}
	web, err := vm.EvalBytecodeValue(script("web.bc"))
	if err != nil {
		return nil, fmt.Errorf("the Web API prelude: %w", err)
	}
	defer web.Free()
	api, err := web.CallValue(quickjs.UndefinedValue, vm.GlobalObject())
	if err != nil {
		return nil, fmt.Errorf("the Web API prelude: %w", err)
	}
	defer api.Free()
	prelude, err := vm.EvalBytecodeValue(script("prelude.bc"))
	if err != nil {
		return nil, fmt.Errorf("the prelude: %w", err)
	}
	defer prelude.Free()
	env, _ := json.Marshal(o.Env)
	r.dispatch, err = prelude.CallValue(quickjs.UndefinedValue, vm.GlobalObject(), api, string(env))
	if err != nil {
		return nil, fmt.Errorf("the prelude: %w", err)
	}
	return r, nil
}

// post hands f to the VM's goroutine, unless the run is over.
func (r *Runtime) post(f func()) {
	select {
	case r.tasks <- f:
	case <-r.done:
	}
}

// Close releases the engine; Run does it.
func (r *Runtime) Close() {
	if r.closed {
		return
	}
	r.closed = true
	close(r.done)
	r.fetch.cancelAll()
	r.end()
	if r.dispatch.VM() != nil {
		r.dispatch.Free()
	}
	_ = r.vm.Close()
	r.files.close()
}

// SkillsDir is where the operator's skills are, read-only: the one place
// a program may import modules from.
const SkillsDir = "/skills"

// resolveModule names the module that base imports as name: a relative
// import from a skill is a file beside it; any other name stays as it is.
func resolveModule(_ *quickjs.VM, base, name string) (string, error) {
	if strings.HasPrefix(base, SkillsDir+"/") && (strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../")) {
		return path.Join(path.Dir(base), name), nil
	}
	return name, nil
}

// loadModule serves the program, and the skills (/skills/NAME.ts or .js):
// there are no packages.
func (r *Runtime) loadModule(_ *quickjs.VM, name string) (string, error) {
	if name == r.prog.name {
		return r.prog.code, nil
	}
	ext := path.Ext(name)
	if !strings.HasPrefix(name, SkillsDir+"/") || path.Clean(name) != name || (ext != ".ts" && ext != ".js") {
		return "", fmt.Errorf("cannot import %q: programs import only skills, as \"/skills/NAME.ts\" (no packages)", shorten(name))
	}
	if r.o.Skills == "" {
		return "", fmt.Errorf("cannot import %q: this server offers no skills", shorten(name))
	}
	src, err := os.ReadFile(filepath.Join(r.o.Skills, strings.TrimPrefix(name, SkillsDir+"/")))
	if err != nil {
		return "", fmt.Errorf("cannot import %q: no such skill", shorten(name))
	}
	p, perr := transform(string(src), name, ext == ".ts")
	if perr != nil {
		return "", fmt.Errorf("%s:%d:%d: %s", name, perr.line, perr.col, perr.msg)
	}
	return p.code, nil
}

// run runs the program and its event loop to the end.
func (r *Runtime) run(ctx context.Context, p *program) *lang.Outcome {
	r.prog = p
	// Each call from Go into the engine starts by clearing a pending
	// interrupt (quickjs' VM.Interrupt), so one interrupt is lost when the
	// deadline falls between two calls (while esbuild loads a module, or
	// between a timer and the next): once ctx is done, interrupt again and
	// again until the program has stopped.
	ended := make(chan struct{})
	defer close(ended)
	stop := interruptAfter(ctx, r.vm.Interrupt, ended)
	defer stop()
	err := r.call("run", r.prog.name)
	for err == nil {
		if _, err = r.vm.ExecutePendingJobs(); err != nil {
			break
		}
		if r.timers.len() == 0 && r.busy == 0 {
			break
		}
		if err = r.wait(ctx); err != nil {
			break
		}
		if err = ctx.Err(); err != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return &lang.Outcome{Error: timeoutError()}
	}
	if err != nil {
		return &lang.Outcome{Error: r.jsError(err)}
	}
	if r.outcome == nil {
		return &lang.Outcome{Error: &lang.Error{Name: "Error", Message: "the program's top-level await never settled: it waits for something that nothing will do"}}
	}
	return r.outcome
}

// interruptEvery is how often a program past its deadline is interrupted
// again, until it stops.
const interruptEvery = 5 * time.Millisecond

// interruptAfter calls interrupt once ctx is done, and again every
// interruptEvery until ended is closed.
func interruptAfter(ctx context.Context, interrupt func(), ended <-chan struct{}) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		t := time.NewTicker(interruptEvery)
		defer t.Stop()
		for {
			interrupt()
			select {
			case <-ended:
				return
			case <-t.C:
			}
		}
	})
}

// wait runs the next thing to happen: a finished task, else a due timer,
// else it blocks until one of them.
func (r *Runtime) wait(ctx context.Context) error {
	select {
	case f := <-r.tasks:
		f()
		return nil
	default:
	}
	d, ok := r.timers.next()
	if ok && d <= 0 {
		return r.fireTimer()
	}
	var due <-chan time.Time
	if ok {
		t := time.NewTimer(d)
		defer t.Stop()
		due = t.C
	}
	select {
	case f := <-r.tasks:
		f()
		return nil
	case <-due:
		return r.fireTimer()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call calls the prelude's dispatcher.
func (r *Runtime) call(args ...any) error {
	_, err := r.dispatch.Call(quickjs.UndefinedValue, args...)
	return err
}

// jsError turns an engine error into the program's error, in its own lines.
func (r *Runtime) jsError(err error) *lang.Error {
	var e *quickjs.Error
	if !errors.As(err, &e) {
		return &lang.Error{Name: "Error", Message: err.Error()}
	}
	return r.programError(e.Name, e.Message, e.Stack)
}

func (r *Runtime) programError(name, msg, stack string) *lang.Error {
	if name == "" {
		name = "Error"
	}
	if name == "InternalError" && msg == "interrupted" {
		return timeoutError()
	}
	return &lang.Error{Name: name, Message: msg, Stack: r.prog.mapStack(stack)}
}

// timeoutError is the outcome of a program stopped at its deadline. The
// engine's interruption carries no stack to say where.
func timeoutError() *lang.Error {
	return &lang.Error{Name: "TimeoutError", Message: "the program ran out of time and was stopped"}
}

// shorten bounds a program-made string that goes into a message.
func shorten(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
