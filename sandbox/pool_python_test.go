package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang"
	"golang.org/x/sys/unix"
)

// pyPool is a pool of Python workers with cfg, the default one if nil,
// closed at the test's end.
func pyPool(t *testing.T, cfg *config.Config, o PoolOptions) *Pool {
	t.Helper()
	return testPool(t, cfg, "py", o, func(c *config.Config) string {
		if unix.Access(c.Runtimes.Python, unix.X_OK) != nil {
			return "needs python3 at runtimes.python (apt-get install python3)"
		}
		return ""
	})
}

// testPool is a pool of language with cfg, the default one if nil, closed
// at the test's end; ready readies cfg for it and says what this machine
// lacks for it ("" for nothing).
func testPool(t *testing.T, cfg *config.Config, language string, o PoolOptions, ready func(*config.Config) string) *Pool {
	t.Helper()
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	if cfg == nil {
		cfg = config.Default()
	}
	if why := ready(cfg); why != "" {
		testenv.Missing(t, why)
	}
	p, err := NewPool(cfg, language, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close) // also after a test's own Close: a second one does nothing
	return p
}

// awaitReady waits until p has n jails ready (their workers warmed and
// waiting): a job then starts the jail's clock with nothing left to start,
// however slowly the machine started them.
func awaitReady(t *testing.T, p *Pool, n int) {
	t.Helper()
	for end := time.Now().Add(time.Minute); p.Stats().Ready < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("fewer than %d jails ready in a minute: %+v, last failure %v", n, p.Stats(), p.Failure())
		}
	}
}

// Python programs, one after another on a pool of 2: each runs in a jail of
// its own (nothing another left in /tmp or in the interpreter), as __main__,
// its result crucible.result; an uncaught error names the program's own
// line; an execution that outlives the timeout, counted from its arrival
// (the jail waited longer than that), is killed like any other.
func TestPoolPython(t *testing.T) {
	// A timeout no run that must succeed comes near, however long a
	// loaded machine takes to start the interpreters; the busy loop's
	// short one is its own pool's, below.
	cfg := config.Default()
	cfg.Sandbox.Timeout = config.Duration(30 * time.Second)
	p := pyPool(t, cfg, PoolOptions{Size: 2})
	for i := range 4 {
		src := fmt.Sprintf(`import crucible, os
fresh = crucible.result is None and not os.path.exists("/tmp/mark")
open("/tmp/mark", "w").close()
print("n", %d)
crucible.result = {"n": %d * 2, "fresh": fresh, "main": __name__}
`, i, i)
		x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "-"})
		if err != nil || x.Error != nil || x.ExitCode != 0 || x.Stdout != fmt.Sprintf("n %d\n", i) ||
			string(x.Result) != fmt.Sprintf(`{"n": %d, "fresh": true, "main": "__main__"}`, 2*i) {
			t.Fatalf("execution %d: %v %+v", i, err, x)
		}
	}

	x, err := p.Do(context.Background(), Job{Source: []byte("x = 1\n\ndef f():\n    raise ValueError('boom')\n\nf()\n"), File: "/home/u/job.py"})
	if err != nil || x.ExitCode != 1 || x.Error == nil || x.Error.Name != "ValueError" || x.Error.Message != "boom" ||
		!strings.Contains(x.Error.Stack, `File "job.py", line 4, in f`) || !strings.Contains(x.Stderr, `File "job.py", line 6, in <module>`) ||
		strings.Contains(x.Error.Stack, "run.py") {
		t.Errorf("uncaught error: %v %+v", err, x)
	}
	if st := p.Stats(); st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
	p.Close()

	// The busy loop, on a pool with a timeout of 1 s whose jail, ready,
	// has waited longer than that: it is killed for its timeout, counted
	// from the job's arrival, not from the jail's birth (which would kill
	// it at once). Its "start" is there if it got that far: on a loaded
	// machine the kill may come first, so none is not an error.
	cfg = config.Default()
	cfg.Sandbox.Timeout = config.Duration(time.Second)
	short := pyPool(t, cfg, PoolOptions{Size: 1})
	awaitReady(t, short, 1)
	time.Sleep(1200 * time.Millisecond) // longer than the timeout
	start := time.Now()
	x, err = short.Do(context.Background(), Job{Source: []byte("print('start')\nwhile True:\n    pass\n"), File: "-"})
	if err != nil || x.ExitCode != jail.ExitTimeout || (x.Stdout != "start\n" && x.Stdout != "") || !strings.Contains(strings.Join(x.LimitsHit, ","), "timeout") {
		t.Errorf("busy loop: %v %+v", err, x)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("the busy loop was stopped after %s, before its timeout of 1s: the jail's wait was counted", d)
	}
	if st := short.Stats(); st.Failed != 0 || st.Warm != 1 {
		t.Errorf("stats %+v", st)
	}
	short.Close()
	if procs, cgroups := children(), cgroupsOf(os.Getpid()); len(procs) != 0 || len(cgroups) != 0 {
		t.Errorf("left behind after Close: processes %q, cgroups %q", procs, cgroups)
	}
}

// A pooled Python program calls tools over its own channel.
func TestPoolPythonTools(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	cfg, tools := everythingTools(t)
	t.Cleanup(tools.Close) // after the pool's
	p := pyPool(t, cfg, PoolOptions{Size: 2, Tools: tools})
	for i := range 2 {
		// Each execution has its own session: its one call is allowed.
		src := fmt.Sprintf(`import crucible
r = [crucible.tools.ev.echo(message="%d")]
try:
    crucible.tools.ev.echo()
except crucible.ToolError as e:
    r.append(e.kind)
crucible.result = r
`, i)
		x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "main.py"})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`["Echo: %d", "limit"]`, i); string(x.Result) != want || len(x.Violations) != 1 {
			t.Errorf("execution %d: %s, want %s; %+v", i, x.Result, want, x)
		}
	}
}

// A pool's Python workers find the runner's bytecode ready, compiled once
// in a jail of the pool's own by the interpreter that runs them; should
// that compile fail, or its output not be taken, the pool's workers run
// without it.
func TestPoolPythonCompiled(t *testing.T) {
	p := pyPool(t, nil, PoolOptions{Size: 1})
	src := "import crucible, crucible_runner, os\ncrucible.result = [os.path.exists(m.__cached__) for m in (crucible, crucible_runner)]\n"
	x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "-"})
	if err != nil || x.ExitCode != 0 || string(x.Result) != "[true, true]" {
		t.Fatalf("the runner's bytecode in a worker's jail: %v %+v", err, x)
	}
	// A program cannot replace the bytecode, for itself or for those after
	// it: the jail's root is read-only, and the next jail a new one.
	attack := `import crucible, crucible_runner, os
out = []
for path in (crucible_runner.__cached__, os.path.dirname(crucible_runner.__cached__) + "/x.pyc"):
    try:
        with open(path, "wb") as f:
            f.write(b"not bytecode")
        out.append("written")
    except OSError as e:
        out.append(e.__class__.__name__)
crucible.result = out
`
	x, err = p.Do(context.Background(), Job{Source: []byte(attack), File: "-"})
	if err != nil || x.ExitCode != 0 || strings.Contains(string(x.Result), "written") || !strings.Contains(string(x.Result), "Error") {
		t.Fatalf("a program writing the runner's bytecode: %v %+v", err, x)
	}
	x, err = p.Do(context.Background(), Job{Source: []byte(src), File: "-"})
	if err != nil || x.ExitCode != 0 || string(x.Result) != "[true, true]" {
		t.Fatalf("the execution after that: %v %+v", err, x)
	}

	cfg := config.Default()
	l, err := lookup(cfg, "py")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := l.Warm.Program(settings(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if got := compiled(context.Background(), cfg, l.Warm.Compile, prog); len(got.Files) != len(prog.Files)+2 {
		t.Errorf("compiled: %d files, want the worker's %d and 2", len(got.Files), len(prog.Files))
	}
	fails := &lang.Compile{
		Program: func(s lang.Settings) *lang.Program {
			return &lang.Program{Lang: lang.Python, Args: []string{s.Python, "-I", "-c", "raise SystemExit(3)"}}
		},
		Files: l.Warm.Compile.Files,
	}
	refused := &lang.Compile{
		Program: l.Warm.Compile.Program,
		Files:   func([]byte) (map[string][]byte, error) { return nil, errors.New("refused") },
	}
	for name, c := range map[string]*lang.Compile{"a failing compile": fails, "an output refused": refused} {
		if got := compiled(context.Background(), cfg, c, prog); got != prog {
			t.Errorf("%s: the workers' program changed", name)
		}
	}
}
