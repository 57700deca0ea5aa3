package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang/js"
)

func jsPool(t *testing.T, o PoolOptions, timeout time.Duration) *Pool {
	t.Helper()
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	cfg := embedded()
	if timeout > 0 {
		cfg.Sandbox.Timeout = config.Duration(timeout)
	}
	p, err := NewPool(cfg, "ts", o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stress runs the pool's concurrency test at full size (200 executions);
// by default it runs 40, enough to keep every jail of the pool busy.
var stress = flag.Bool("stress", false, "run the pool's stress test at full size")

// 200 executions (-stress; 50 by default) at once on a pool of 4 (2 cores
// here): each gets its own jail and its own answer. A result comes back
// before its jail's teardown, which goes on in the background; Close waits
// for all of it: once it returns nothing is left, no process, no cgroup, no
// descriptor (of a pipe, a namespace or a detached mount), and the
// goroutines end.
func TestPoolConcurrent(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	fds := openFDs(t)
	p := jsPool(t, PoolOptions{Size: 4, InFlight: 8}, 0)
	n := 50
	if *stress {
		n = 200
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			x, err := p.Do(ctx, Job{Source: fmt.Appendf(nil, "console.log('n', %d);\nreturn { n: %d * 2 };", i, i), File: "-"})
			switch {
			case err != nil:
				errs <- err
			case x.Error != nil || string(x.Result) != fmt.Sprintf(`{"n":%d}`, 2*i) ||
				x.Stdout != fmt.Sprintf("n %d\n", i) || x.ExitCode != 0:
				errs <- fmt.Errorf("execution %d: %+v", i, x)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := p.Stats()
	if st.Warm+st.Cold != int64(n) || st.Failed != 0 || st.InFlight != 0 {
		t.Errorf("stats %+v", st)
	}
	t.Logf("stats after %d: %+v", n, st)
	p.Close()
	if st := p.Stats(); st.Ready != 0 {
		t.Errorf("closed, %d jails still ready", st.Ready)
	}
	if procs, cgroups := children(), cgroupsOf(os.Getpid()); len(procs) != 0 || len(cgroups) != 0 {
		t.Errorf("left behind after Close: processes %q, cgroups %q", procs, cgroups)
	}
	if after := openFDs(t); len(after) != len(fds) {
		t.Errorf("descriptors open before the pool: %q; after it: %q", fds, after)
	}
	deadline := time.Now().Add(5 * time.Second)
	for g := runtime.NumGoroutine(); g > goroutines+2; g = runtime.NumGoroutine() {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left behind: %d (before: %d)", g, goroutines)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openFDs are this process's open descriptors, by what they are.
func openFDs(t *testing.T) []string {
	// The runtime's poller opens descriptors of its own on first use.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	w.Close()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var fds []string
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil {
			fds = append(fds, l)
		}
	}
	return fds
}

// children are this process's child processes: each jail's init (its
// worker, in the jail's pid namespace, goes with it).
func children() []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		if parent(e.Name()) == strconv.Itoa(os.Getpid()) {
			found = append(found, e.Name())
		}
	}
	return found
}

// A warm jail's timeout starts with its work, not with its birth; an
// execution that runs over it is killed like any other.
func TestPoolTimeoutAndIdle(t *testing.T) {
	// 3 s: a loaded machine took over a second to print the busy loop's
	// first line.
	const timeout = 3 * time.Second
	ticks := make(chan time.Time)
	p := jsPool(t, PoolOptions{Size: 1, Idle: 300 * time.Millisecond, ticks: ticks}, timeout)
	defer p.Close()
	time.Sleep(timeout + 200*time.Millisecond) // longer than the timeout: the ready jail must not have died of it
	x, err := p.Do(context.Background(), Job{Source: []byte("return 'ok'"), File: "-"})
	if err != nil || string(x.Result) != `"ok"` {
		t.Fatalf("%v %+v", err, x)
	}
	// The output is kept whoever stops the loop. The worker's own stop (and
	// its TimeoutError) comes shortly before the jail's kill, a margin a
	// loaded machine may eat: either is right here.
	x, err = p.Do(context.Background(), Job{Source: []byte("console.log('start');\nfor (;;) {}"), File: "-"})
	if err != nil || x.ExitCode != jail.ExitTimeout || x.Stdout != "start\n" || x.Error != nil && x.Error.Name != "TimeoutError" {
		t.Fatalf("busy loop: %v %+v", err, x)
	}
	awaitReady(t, p, 1) // the replacement
	expireIdle(ticks, p.o.Idle)
	st := p.Stats()
	if st.Expired == 0 {
		t.Errorf("no ready jail expired after the idle time: %+v", st)
	}
}

// expireIdle runs a sweep of a pool's expiry (PoolOptions.ticks) at a time
// past idle for every jail born by now, and returns once it is done: the
// second tick is taken only once the first one's sweep is over.
func expireIdle(ticks chan<- time.Time, idle time.Duration) {
	at := time.Now().Add(2 * idle)
	ticks <- at
	ticks <- at
}

// A warm worker runs on one P from its runtime's start (GOMAXPROCS=1 in its
// environment), which is the worker's, not the sandbox's: the program's env
// does not show it. One the operator sets is the sandbox's, and shows.
func TestPoolWorkerEnv(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, `[null,true]`},
		{map[string]string{"GOMAXPROCS": "2"}, `["2",true]`},
	} {
		cfg := config.Default()
		cfg.Sandbox.Env = c.env
		p, err := NewPool(cfg, "ts", PoolOptions{Size: 1})
		if err != nil {
			t.Fatal(err)
		}
		x, err := p.Do(context.Background(), Job{Source: []byte("return [env.GOMAXPROCS ?? null, 'PATH' in env]"), File: "-"})
		p.Close()
		if err != nil || x.Error != nil || string(x.Result) != c.want {
			t.Errorf("sandbox env %v: %v %+v; want %s", c.env, err, x, c.want)
		}
	}
}

// The audit trail of a pool says what a one-shot execution's says: one
// execution line per execution that ran (none for warm jails that never got
// work), naming its language and source by hash, not the worker's argv,
// and timed from its work's arrival, not from its jail's birth.
func TestPoolAudit(t *testing.T) {
	var buf testenv.Buffer
	w := audit.New(&buf)
	p := jsPool(t, PoolOptions{Size: 2, Audit: w}, 0)
	for p.Stats().Ready < 2 { // both jails born and waiting
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second) // a life longer than the work
	const src = "console.log('hi'); return 1"
	start := time.Now()
	x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "-"})
	span := time.Since(start)
	if err != nil || string(x.Result) != "1" {
		t.Fatalf("%v %+v", err, x)
	}
	p.Close()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var execs []audit.Execution
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var head struct{ Event string }
		_ = json.Unmarshal([]byte(line), &head)
		if head.Event == "execution" {
			var e audit.Execution
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			execs = append(execs, e)
		}
	}
	if len(execs) != 1 {
		t.Fatalf("%d execution lines, want 1:\n%s", len(execs), buf.String())
	}
	e := execs[0]
	if e.Language != "ts" || e.SourceHash != fmt.Sprintf("%x", sha256.Sum256([]byte(src))) || e.Command != nil || e.Error != "" {
		t.Errorf("execution line %+v", e)
	}
	if e.DurationMS > span.Milliseconds() || x.DurationMS > span.Milliseconds() {
		t.Errorf("duration %d ms (result %d ms), but Run took %d ms: the jail's idle life was counted", e.DurationMS, x.DurationMS, span.Milliseconds())
	}
}

// A closed pool refuses work and starts no jail for it.
func TestPoolRunAfterClose(t *testing.T) {
	p := jsPool(t, PoolOptions{Size: 1}, 0)
	p.Close()
	if _, err := p.Do(context.Background(), Job{Source: []byte("return 1"), File: "-"}); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("Run after Close: %v, want ErrPoolClosed", err)
	}
	if procs := workerProcs(); len(procs) != 0 {
		t.Errorf("workers running after Close: %v", procs)
	}
}

// workerProcs are the JS workers of this process's jails: children of a
// jail's init, itself a child of this process. (Other packages' tests run
// workers of their own at the same time.)
func workerProcs() []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), js.Worker+"\x00") && parent(parent(e.Name())) == strconv.Itoa(os.Getpid()) {
			found = append(found, e.Name())
		}
	}
	return found
}

// parent is the parent pid of pid, "" if it is gone.
func parent(pid string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return ""
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// cgroupsOf are the jail cgroups that the supervisor pid made.
func cgroupsOf(pid int) []string {
	var found []string
	for depth := 0; depth <= 5; depth++ {
		m, _ := filepath.Glob("/sys/fs/cgroup" + strings.Repeat("/*", depth) + fmt.Sprintf("/crucible-%d-*", pid))
		found = append(found, m...)
	}
	return found
}

// everythingTools is a configuration whose one server, ev, is
// server-everything, with one tool call per execution, and its tools.
func everythingTools(t *testing.T) (*config.Config, *Tools) {
	t.Helper()
	node, main := testenv.NeedEverything(t, "../node_modules")
	cfg, err := config.Parse([]byte("servers:\n  ev:\n    command: "+node+"\n    args: ["+main+"]\ntools: {max_calls: 1}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := NewTools(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, tools
}

// A pool's executions get tools channels of their own to one bridge; the
// channels of jails that expired unused are closed with them. On each
// engine.
func TestPoolTools(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	fds := func() int {
		d, _ := os.ReadDir("/proc/self/fd")
		return len(d)
	}
	onEngines(t, nil, func(t *testing.T, engine *config.Config) {
		before := fds()
		cfg, tools := everythingTools(t)
		cfg.Runtimes.Engine = engine.Runtimes.Engine
		ticks := make(chan time.Time)
		p := enginePool(t, cfg, PoolOptions{Size: 2, Idle: 200 * time.Millisecond, Tools: tools, ticks: ticks})
		for i := range 3 {
			// Each execution has its own session: its one call is allowed.
			src := fmt.Sprintf(`export default [await tools.ev.echo({ message: "%d" }), await tools.ev.echo({}).catch((e) => e.kind)];`, i)
			r, err := p.Do(context.Background(), Job{Source: []byte(src), File: "main.ts"})
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`["Echo: %d","limit"]`, i); string(r.Result) != want || len(r.ToolCalls) != 2 || len(r.Violations) != 1 {
				t.Errorf("execution %d: %s, want %s; %+v", i, r.Result, want, r)
			}
			awaitReady(t, p, 2)
			expireIdle(ticks, p.o.Idle) // the ready jails expire, unused
		}
		expired := p.Stats().Expired
		p.Close()
		tools.Close()
		// A channel left open holds two descriptors until the collector finds
		// it (some are found by then: the count is no exact measure of a leak).
		if after := fds(); expired > 0 && after > before {
			t.Errorf("%d descriptors open before the pool, %d after it (%d jails expired): tools channels left open", before, after, expired)
		}
	})
}
