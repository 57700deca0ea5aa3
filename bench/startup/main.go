// Command startup measures cold starts against their baselines in the same
// run, alternating the commands so that drift in the machine's speed hits
// all alike: `crucible exec -- /bin/true` against bubblewrap running the
// same command (and /bin/true with no jail), then `crucible run hello.ts`
// (a fresh jail and the embedded engine) against `deno run` of the same
// file with no jail. For each it prints the wall time until the command
// exits, and the page faults and CPU time of its whole process tree: the
// benchmark is a child subreaper, reaps every descendant after each run,
// and counts the growth of its RUSAGE_CHILDREN.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/bench/internal/hello"
	"github.com/cruciblehq/crucible/bench/internal/timing"
	"golang.org/x/sys/unix"
)

func main() {
	crucible := flag.String("crucible", "crucible", "path of the crucible binary")
	deno := flag.String("deno", "node_modules/.bin/deno", "path of the deno binary; \"\" skips the runtimes")
	n := flag.Int("n", 200, "runs of each command")
	flag.Parse()
	// Orphans (a jail's processes that outlive their parent) come to us,
	// so that their usage is counted too.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fail(err)
	}

	bwrap := []string{"bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "/bin/true"}
	compare("jail start-up", *n, "crucible exec", "bwrap", map[string][]string{
		"crucible exec": {*crucible, "exec", "--", "/bin/true"},
		"bwrap":         bwrap,
		"no jail":       {"/bin/true"},
	}, []string{"crucible exec", "bwrap", "no jail"})

	if *deno == "" {
		return
	}
	file, embedded, remove, err := hello.Write()
	if err != nil {
		fail(err)
	}
	defer remove()
	fmt.Println()
	compare("runtimes, cold", *n, "crucible run", "deno run", map[string][]string{
		"crucible run": {*crucible, "run", "--config", embedded, file},
		"deno run":     {*deno, "run", "--no-config", "--no-prompt", "--quiet", file},
	}, []string{"crucible run", "deno run"})
}

// sample is one run of a command.
type sample struct {
	wall   time.Duration
	cpu    time.Duration // user + system, the whole tree
	faults int64         // minor + major, the whole tree
}

// compare runs each command of order n times in turn (after one run each
// that checks it works and warms caches) and prints a table and the
// ratios of a to b.
func compare(title string, n int, a, b string, cmds map[string][]string, order []string) {
	for _, name := range order {
		if out, err := exec.Command(cmds[name][0], cmds[name][1:]...).CombinedOutput(); err != nil ||
			strings.Contains(name, "run") && !strings.Contains(string(out), "hello\n") {
			fail(fmt.Errorf("%s: %w\n%s", name, err, out))
		}
	}
	samples := map[string][]sample{}
	timing.Alternate(order, n, func(name string) {
		var before, after unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &before)
		cmd := exec.Command(cmds[name][0], cmds[name][1:]...)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		wall := time.Since(start)
		for { // the orphans, if any
			if _, err := unix.Wait4(-1, nil, 0, nil); err != nil && err != unix.EINTR {
				break
			}
		}
		_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &after)
		samples[name] = append(samples[name], sample{wall: wall,
			cpu:    time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()),
			faults: after.Minflt + after.Majflt - before.Minflt - before.Majflt})
	})

	fmt.Printf("%s, %d runs each (medians; wall p95 in brackets)\n", title, n)
	fmt.Printf("%-14s %20s %12s %12s\n", "command", "wall", "CPU", "page faults")
	for _, name := range order {
		s := samples[name]
		fmt.Printf("%-14s %9s (%8s) %12s %12d\n", name, round(pct(s, wall, 50)), round(pct(s, wall, 95)),
			round(pct(s, cpu, 50)), pct(s, faults, 50))
	}
	ra, rb := samples[a], samples[b]
	fmt.Printf("ratio %s / %s: wall %.2f (p95 %.2f), CPU %.2f, page faults %.2f\n", a, b,
		ratio(ra, rb, wall, 50), ratio(ra, rb, wall, 95), ratio(ra, rb, cpu, 50), ratio(ra, rb, faults, 50))
}

func wall(s sample) time.Duration  { return s.wall }
func cpu(s sample) time.Duration   { return s.cpu }
func faults(s sample) int64        { return s.faults }
func round(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
func fail(err error)               { fmt.Fprintln(os.Stderr, err); os.Exit(1) }
func ratio[T time.Duration | int64](a, b []sample, f func(sample) T, p int) float64 {
	return float64(pct(a, f, p)) / float64(pct(b, f, p))
}

// pct is the p-th percentile of f over s.
func pct[T time.Duration | int64](s []sample, f func(sample) T, p int) T {
	v := make([]T, len(s))
	for i := range s {
		v[i] = f(s[i])
	}
	slices.Sort(v)
	return v[(len(v)-1)*p/100]
}
