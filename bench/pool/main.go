// Command pool times executions on a warm sandbox.Pool, in this process,
// against bubblewrap's cost per jail as the reference: rounds alternate a
// batch of `bwrap ... /bin/true` runs (their wall time and CPU time, the
// whole process tree's), pooled executions one at a time (latency: each on
// an idle, full pool, then back to back), and a burst with 8 in flight
// (throughput), so that drift in the machine's speed hits all alike. The
// capacity goal is half of what the cores could do if each jail cost
// bubblewrap's CPU time: 0.5 × cores ÷ CPU per run. With -crucible, each
// round also runs the same programs cold, `crucible run --lang L -` with
// that binary, one at a time. A language without a warm pool (one whose
// worker cannot wait for its program) is named and skipped. Where each
// execution's CPU and page faults go is split by process: the supervisor's
// side (this process: building jails, serving them), each jail's init and
// its command (the language's worker), as the jails count them
// (jail.TotalUsage), beside bubblewrap's whole run.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cruciblehq/crucible/bench/internal/hello"
	"github.com/cruciblehq/crucible/bench/internal/timing"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang/deno"
	"github.com/cruciblehq/crucible/sandbox"
)

var bwrap = []string{"bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
	"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
	"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "/bin/true"}

// bwrapDeno is bubblewrap running deno on a program that prints 1: the
// baseline of Deno's pool, a fresh process in a fresh sandbox each time.
func bwrapDeno(denoPath string) []string {
	args := slices.Clone(bwrap[:len(bwrap)-1])
	return append(args, "--ro-bind", denoPath, denoPath, "--setenv", "DENO_DIR", "/tmp/.deno", "--setenv", "NO_COLOR", "1",
		denoPath, "eval", "--quiet", "console.log(1)")
}

// programs are what each language's pool runs: the issue's `return 1`.
var programs = map[string]string{
	"ts":   "return 1",
	"py":   "import crucible\ncrucible.result = 1\n",
	"deno": "return 1", // the engine deno's pool (runtimes.engine: deno)
}

func main() {
	rounds := flag.Int("rounds", 10, "rounds of alternation")
	single := flag.Int("n", 30, "executions one at a time, per language and round")
	burst := flag.Int("burst", 40, "executions per burst, per language and round")
	bw := flag.Int("bwrap", 20, "bwrap runs per round")
	inFlight := flag.Int("inflight", 8, "executions in flight in a burst")
	idle := flag.Duration("idle", 30*time.Millisecond, "pause before each execution on an idle pool")
	size := flag.Int("size", 4, "jails kept ready by the burst's pool")
	langs := flag.String("lang", "ts,py", "languages to try, comma-separated (deno: Deno's pool, runtimes.engine deno)")
	crucible := flag.String("crucible", "", "a crucible binary, to time cold `crucible run` too")
	flag.Parse()

	m, err := newMeter()
	if err != nil {
		fail(fmt.Errorf("cgroups to count the jails' cost in: %w", err))
	}
	defer cleanup()
	atCleanup(m.close)
	stopOnSignal()
	cfg := config.Default()
	cfg.Runtimes.Engine = config.EngineEmbedded // ts: the embedded engine; deno: Deno's pool
	type pools struct{ single, burst *sandbox.Pool }
	var order []string
	ps := map[string]pools{}
	onDeno := config.Default()
	onDeno.Runtimes.Engine = config.EngineDeno
	for _, l := range strings.Split(*langs, ",") {
		cfg := cfg
		if l == "deno" {
			cfg = onDeno
		}
		one, err := sandbox.NewPool(cfg, l, sandbox.PoolOptions{Size: 2})
		if err != nil {
			fmt.Printf("%s: no warm pool: %v\n", l, err)
			continue
		}
		atCleanup(one.Close)
		many, err := sandbox.NewPool(cfg, l, sandbox.PoolOptions{Size: *size, InFlight: *inFlight})
		if err != nil {
			fail(err)
		}
		atCleanup(many.Close)
		run(one, l) // a check that it works
		order = append(order, l)
		ps[l] = pools{one, many}
	}
	if err := exec.Command(bwrap[0], bwrap[1:]...).Run(); err != nil {
		fail(fmt.Errorf("bwrap: %w", err))
	}
	if *crucible != "" {
		f, err := os.CreateTemp("", "bench-pool-*.yaml")
		if err != nil {
			fail(err)
		}
		atCleanup(func() { _ = os.Remove(f.Name()) })
		_, err = f.WriteString(hello.Embedded)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fail(err)
		}
		embeddedConfig = f.Name()
	}

	var bwWall, bwCPU []time.Duration
	var bwFaults int64
	lat := map[string][]time.Duration{}     // back to back
	settled := map[string][]time.Duration{} // each on an idle pool
	count := map[string]int{}
	spent := map[string]time.Duration{}  // wall time of the bursts
	bursts := map[string]cost{}          // what the bursts cost
	parts := map[string]cost{}           // what the one-at-a-time batches cost
	cold := map[string][]time.Duration{} // crucible run, with -crucible
	var bd bwrapRuns                     // bubblewrap running deno, with deno
	var bdArgs []string
	if slices.Contains(order, "deno") {
		bin, err := deno.Find("")
		if err != nil {
			fail(err)
		}
		bdArgs = bwrapDeno(bin)
	}
	for range *rounds {
		for range *bw {
			start := time.Now()
			c := exec.Command(bwrap[0], bwrap[1:]...)
			if err := c.Run(); err != nil {
				fail(fmt.Errorf("bwrap: %w", err))
			}
			bwWall = append(bwWall, time.Since(start))
			bwCPU = append(bwCPU, c.ProcessState.UserTime()+c.ProcessState.SystemTime())
			if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
				bwFaults += ru.Minflt + ru.Majflt
			}
		}
		for _, l := range order {
			p := ps[l].single
			for range *single {
				for p.Stats().Ready < 2 { // the pool full,
					time.Sleep(time.Millisecond)
				}
				time.Sleep(*idle) // and the last jail torn down
				start := time.Now()
				run(p, l)
				settled[l] = append(settled[l], time.Since(start))
			}
			u0 := costNow(m)
			for range *single {
				for p.Stats().Ready == 0 { // latency with a jail ready, not its build
					time.Sleep(100 * time.Microsecond)
				}
				start := time.Now()
				run(p, l)
				lat[l] = append(lat[l], time.Since(start))
			}
			parts[l] = parts[l].add(costNow(m).sub(u0))

			if *crucible != "" {
				for range *single {
					start := time.Now()
					runCold(*crucible, l)
					cold[l] = append(cold[l], time.Since(start))
				}
			}

			p = ps[l].burst
			for p.Stats().Ready < *size { // each burst starts from a full pool
				time.Sleep(time.Millisecond)
			}
			b0 := costNow(m)
			start := time.Now()
			var wg sync.WaitGroup
			for range *burst {
				wg.Go(func() { run(p, l) })
			}
			wg.Wait()
			spent[l] += time.Since(start)
			bursts[l] = bursts[l].add(costNow(m).sub(b0))
			count[l] += *burst
		}
		if bdArgs != nil {
			bd.burst(m, bdArgs, *burst, *inFlight)
		}
	}

	slices.Sort(bwWall)
	slices.Sort(bwCPU)
	goal := math.NaN() // without bwrap's runs (-bwrap 0)
	if len(bwWall) > 0 {
		perRun := timing.Pct(bwCPU, 50)
		goal = 0.5 * float64(runtime.NumCPU()) / perRun.Seconds()
		fmt.Printf("bwrap /bin/true (%d runs): wall p50 %s, CPU p50 %s per run, %d page faults: goal %.0f executions/s (half of %d cores ÷ CPU per run)\n",
			len(bwWall), round(timing.Pct(bwWall, 50)), round(perRun), bwFaults/int64(len(bwWall)), goal, runtime.NumCPU())
	}
	for _, l := range order {
		t := settled[l]
		slices.Sort(t)
		fmt.Printf("%s, one at a time, idle pool (%d): p50 %s, p99 %s, min %s\n",
			l, len(t), round(timing.Pct(t, 50)), round(timing.Pct(t, 99)), round(t[0]))
		t = lat[l]
		slices.Sort(t)
		rate := float64(count[l]) / spent[l].Seconds()
		fmt.Printf("%s, one at a time, back to back (%d): p50 %s, p99 %s, min %s; per execution, CPU %s\n",
			l, len(t), round(timing.Pct(t, 50)), round(timing.Pct(t, 99)), round(t[0]), parts[l])
		fmt.Printf("%s, %d in flight (%d): %.0f executions/s (%.2f of the goal); per execution, CPU %s\n",
			l, *inFlight, count[l], rate, rate/goal, bursts[l])
		if l == "deno" && bd.n > 0 {
			fmt.Printf("bwrap running deno, %d in flight (%d): %.0f runs/s; per run, CPU %s / %d page faults\n",
				*inFlight, bd.n, float64(bd.n)/bd.wall.Seconds(), round(bd.cpu/time.Duration(bd.n)), bd.faults/int64(bd.n))
		}
		if t = cold[l]; len(t) > 0 {
			slices.Sort(t)
			fmt.Printf("%s, cold `crucible run` (%d): p50 %s, p99 %s, min %s\n",
				l, len(t), round(timing.Pct(t, 50)), round(timing.Pct(t, 99)), round(t[0]))
		}
	}
}

// bwrapRuns are bubblewrap's runs of deno: how many, their wall time in
// bursts, and their CPU and page faults, as the meter's cgroups count them
// (bubblewrap's rusage misses the command it runs in its namespace).
type bwrapRuns struct {
	n      int
	wall   time.Duration
	cpu    time.Duration
	faults int64
}

// burst runs args n times, inFlight at once, and counts them.
func (b *bwrapRuns) burst(m *meter, args []string, n, inFlight int) {
	slots := make(chan struct{}, inFlight)
	cpu0, faults0 := m.total()
	start := time.Now()
	var wg sync.WaitGroup
	for range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			out, err := exec.Command(args[0], args[1:]...).Output()
			if err != nil || strings.TrimSpace(string(out)) != "1" {
				fail(fmt.Errorf("bwrap running deno: %w %s", err, out))
			}
		})
	}
	wg.Wait()
	b.wall += time.Since(start)
	cpu, faults := m.total()
	b.cpu += cpu - cpu0
	b.faults += faults - faults0
	b.n += n
}

// run runs the language's program on p and checks its result.
func run(p *sandbox.Pool, l string) {
	x, err := p.Do(context.Background(), sandbox.Job{Source: []byte(programs[l]), File: "-"})
	if err != nil || x.Error != nil || x.ExitCode != 0 || string(x.Result) != "1" {
		fail(fmt.Errorf("%s pool: %w %+v", l, err, x))
	}
}

// embeddedConfig is a configuration file of hello.Embedded, for -crucible:
// ts on the embedded engine, as the pool's.
var embeddedConfig string

// runCold runs the language's program with `crucible run`, in a jail of its
// own, and checks its result.
func runCold(crucible, l string) {
	c := exec.Command(crucible, "run", "--json", "--config", embeddedConfig, "--lang", l, "-")
	c.Stdin = strings.NewReader(programs[l])
	out, err := c.Output()
	if err != nil || !strings.Contains(string(out), `"result":1`) {
		fail(fmt.Errorf("%s: crucible run: %w %s", l, err, out))
	}
}

// cost is CPU time and page faults, by process: everything (the meter's
// cgroups), the supervisor's side (this process), the jails' inits; the
// commands' are what is left.
type cost struct {
	jails                 int64
	all, self, init       time.Duration
	allPF, selfPF, initPF int64
}

func costNow(m *meter) cost {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	u := jail.TotalUsage()
	all, allPF := m.total()
	return cost{jails: u.Jails, all: all, self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), init: u.InitCPU,
		allPF: allPF, selfPF: ru.Minflt + ru.Majflt, initPF: u.InitFaults}
}

func (c cost) sub(o cost) cost {
	return cost{c.jails - o.jails, c.all - o.all, c.self - o.self, c.init - o.init, c.allPF - o.allPF, c.selfPF - o.selfPF, c.initPF - o.initPF}
}

func (c cost) add(o cost) cost {
	return cost{c.jails + o.jails, c.all + o.all, c.self + o.self, c.init + o.init, c.allPF + o.allPF, c.selfPF + o.selfPF, c.initPF + o.initPF}
}

// String is the cost per jail reaped.
func (c cost) String() string {
	if c.jails == 0 {
		return "no jail reaped"
	}
	n := c.jails
	d := time.Duration(n)
	return fmt.Sprintf("%s / %d page faults: supervisor %s / %d, init %s / %d, command %s / %d (%d jails)",
		round(c.all/d), c.allPF/n, round(c.self/d), c.selfPF/n, round(c.init/d), c.initPF/n,
		round((c.all-c.self-c.init)/d), (c.allPF-c.selfPF-c.initPF)/n, n)
}

func round(d time.Duration) time.Duration { return d.Round(time.Microsecond) }

// undo is what main set up, undone by cleanup in reverse order: when main
// returns, in fail (os.Exit runs no deferred call), and on SIGINT or
// SIGTERM, which would otherwise leave the jails' cgroups and this
// process's behind.
var (
	undoMu sync.Mutex
	undo   []func()
)

func atCleanup(f func()) {
	undoMu.Lock()
	defer undoMu.Unlock()
	undo = append(undo, f)
}

func cleanup() {
	undoMu.Lock()
	defer undoMu.Unlock()
	for i := len(undo) - 1; i >= 0; i-- {
		undo[i]()
	}
	undo = nil
}

// stopOnSignal ends the bench on SIGINT or SIGTERM once its pools' jails
// are gone and its cgroups removed, with the shell's code for the signal.
func stopOnSignal() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := (<-sigs).(syscall.Signal)
		cleanup()
		fmt.Fprintf(os.Stderr, "stopped by %v\n", s)
		os.Exit(128 + int(s))
	}()
}

func fail(err error) {
	cleanup()
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
