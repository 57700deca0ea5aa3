// Command startup times `crucible exec -- /bin/true` against bubblewrap
// running the same command, alternating the two so that drift in the
// machine's speed hits both alike, and prints medians, p95 and their ratio.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

func main() {
	crucible := flag.String("crucible", "crucible", "path of the crucible binary")
	n := flag.Int("n", 200, "runs of each command")
	flag.Parse()

	cmds := map[string][]string{
		"crucible": {*crucible, "exec", "--", "/bin/true"},
		"bwrap": {"bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
			"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
			"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "/bin/true"},
		"no jail": {"/bin/true"},
	}
	order := []string{"crucible", "bwrap", "no jail"}
	times := map[string][]time.Duration{}
	for _, name := range order { // warm-up, and a check that each works
		if out, err := exec.Command(cmds[name][0], cmds[name][1:]...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n%s", name, err, out)
			os.Exit(1)
		}
	}
	for i := 0; i < *n; i++ {
		for _, name := range order {
			start := time.Now()
			if err := exec.Command(cmds[name][0], cmds[name][1:]...).Run(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
				os.Exit(1)
			}
			times[name] = append(times[name], time.Since(start))
		}
	}
	fmt.Printf("%-10s %10s %10s %10s\n", "command", "median", "p95", "min")
	for _, name := range order {
		t := times[name]
		slices.Sort(t)
		fmt.Printf("%-10s %10s %10s %10s\n", name, pct(t, 50), pct(t, 95), t[0].Round(time.Microsecond))
	}
	c, b := times["crucible"], times["bwrap"]
	fmt.Printf("ratio crucible/bwrap: median %.2f, p95 %.2f (%d runs each)\n",
		float64(pct(c, 50))/float64(pct(b, 50)), float64(pct(c, 95))/float64(pct(b, 95)), *n)
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)-1)*p/100].Round(time.Microsecond)
}
