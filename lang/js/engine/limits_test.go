package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/lang"
)

// A heap bomb gets a catchable "out of memory" at the heap limit; uncaught,
// it ends the program with that error. The engine itself lives on.
func TestHeapLimit(t *testing.T) {
	o := Options{Heap: 16 << 20} // the smallest allowed: the race detector makes each MiB slow
	out, _ := run(t, `const a = [];
try { for (;;) a.push("x".repeat(1 << 16) + a.length); } catch (e) { a.length = 0; return String(e); }`, false, o)
	if out.Error != nil || string(out.Result) != `"InternalError: out of memory"` {
		t.Errorf("caught: %s %+v", out.Result, out.Error)
	}
	out, _ = run(t, "const a = [];\nfor (;;) a.push(new Array(1e5).fill(1.5));\n", false, o)
	if out.Error == nil || out.Error.Name != "InternalError" || out.Error.Message != "out of memory" {
		t.Errorf("uncaught: %s %+v", out.Result, out.Error)
	}
}

// Garbage that reference counting cannot free (cycles) is collected long
// before the smallest heap the configuration allows is full: the engine's
// first collection (gcStart) comes well inside it. 64 MiB of cycles
// through a 16 MiB heap. (An ArrayBuffer's bytes count in the heap as a
// string's do, and cost the race detector a tenth of a string's writing.)
func TestCyclesCollectedInSmallestHeap(t *testing.T) {
	out, _ := run(t, `let kept = 0;
for (let i = 0; i < 1024; i++) {
  const a = { pad: new ArrayBuffer(1 << 16) }, b = { a };
  a.b = b; // a cycle: freed only by the collector
  kept += a.pad.byteLength > 0 ? 1 : 0;
}
return kept;`, false, Options{Heap: 16 << 20})
	if out.Error != nil || string(out.Result) != "1024" {
		t.Errorf("64 MiB of cycles in a 16 MiB heap: %s %+v", out.Result, out.Error)
	}
}

// Deep recursion gets a catchable "stack overflow" at the depth limit, well
// before the worker's own stack runs out.
func TestStackLimit(t *testing.T) {
	out, _ := run(t, `let depth = 0;
function down(n) { depth = n; return down(n + 1) + 1; }
try { down(0); } catch (e) { return [String(e), depth > 500 && depth <= 1000]; }`, false, Options{Stack: 1000})
	if out.Error != nil || string(out.Result) != `["InternalError: stack overflow",true]` {
		t.Errorf("caught: %s %+v", out.Result, out.Error)
	}
	// The default, uncaught, and through getters, toString and JSON.
	for _, src := range []string{
		"function f() { return f(); }\nf();",
		"const o = { get x() { return this.x; } };\no.x;",
		"const o = { toString() { return `${this}`; } };\nString(o);",
		"const o = { toJSON() { return JSON.stringify(this); } };\nJSON.stringify(o);",
	} {
		out, _ = run(t, src, false, Options{})
		if out.Error == nil || out.Error.Message != "stack overflow" {
			t.Errorf("%q: %s %+v", src, out.Result, out.Error)
		}
	}
}

// A runaway loop is interrupted when the deadline passes, whatever it
// loops in: plain code, a catch that swallows everything, microtasks,
// timers.
func TestDeadline(t *testing.T) {
	for _, src := range []string{
		"for (;;) {}",
		"for (;;) { try { for (;;) {} } catch {} }",
		"const f = () => Promise.resolve().then(f); f(); await new Promise(() => {});",
		"const f = () => setTimeout(f, 0); f();",
		"setInterval(() => {}, 1);",
		"/(a+)+$/.test('a'.repeat(40) + 'b');",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		out := Run(ctx, src, "main.js", false, Options{})
		cancel()
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%q: stopped after %s", src, d)
		}
		if out.Error == nil || out.Error.Name != "TimeoutError" {
			t.Errorf("%q: %s %+v", src, out.Result, out.Error)
		}
	}
}

// Console output reaches its writer as it is made, not at the end: what a
// program printed survives whatever kills its worker later (the jail's
// timeout, its memory limit, a crash).
func TestOutputWrittenThrough(t *testing.T) {
	w := &signalWriter{got: make(chan string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *lang.Outcome, 1)
	go func() {
		done <- Run(ctx, "console.log('start');\nconsole.error('err');\nfor (;;) {}\n", "main.js", false, Options{Stdout: w, Stderr: w})
	}()
	var got string
	// Generous: only a broken engine waits this long.
	deadline := time.After(time.Minute)
	for got != "start\nerr\n" {
		select {
		case s := <-w.got:
			got += s
		case out := <-done:
			t.Fatalf("the program ended: %+v; output %q", out.Error, got)
		case <-deadline:
			t.Fatalf("the output is still held back: %q", got)
		}
	}
	cancel()
	if out := <-done; out.Error == nil || out.Error.Name != "TimeoutError" {
		t.Errorf("%+v", out.Error)
	}
}

// signalWriter hands each write to the test as it happens.
type signalWriter struct{ got chan string }

func (w *signalWriter) Write(p []byte) (int, error) {
	w.got <- string(p)
	return len(p), nil
}

// A program that waits on nothing that will ever happen ends at once.
func TestNeverSettles(t *testing.T) {
	out, _ := run(t, "await new Promise(() => {});\nreturn 1", false, Options{})
	if out.Error == nil || !strings.Contains(out.Error.Message, "never settled") {
		t.Errorf("%s %+v", out.Result, out.Error)
	}
}

// A deadline that passes while the engine is not running JavaScript
// (between two calls into it) must still stop the program. Each call from
// Go into the engine clears a pending interrupt, so one interrupt alone
// can be lost (it was, once, under the race detector on a loaded machine:
// TestDeadline's catastrophic regexp then ran for ten minutes): once the
// deadline has passed, the program is interrupted again and again until it
// stops.
func TestInterruptRepeats(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	var n atomic.Int32
	stop := interruptAfter(ctx, func() { n.Add(1) }, ended)
	defer stop()
	time.Sleep(10 * interruptEvery)
	if n.Load() != 0 {
		t.Fatal("interrupted before the deadline")
	}
	cancel()
	deadline := time.Now().Add(time.Minute)
	for n.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("interrupted %d times in a minute past the deadline", n.Load())
		}
		time.Sleep(interruptEvery)
	}
	close(ended)
	time.Sleep(2 * time.Second) // the last interrupt may be under way
	after := n.Load()
	time.Sleep(time.Second)
	if n.Load() != after {
		t.Error("still interrupting after the program ended")
	}
}
