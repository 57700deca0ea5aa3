// Command startup times `crucible exec -- /bin/true` against bubblewrap
// running the same command, alternating the two so that drift in the
// machine's speed hits both alike, and prints medians, p95 and their ratio.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"

	"github.com/cruciblehq/crucible/bench/internal/timing"
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
	for _, name := range order { // warm-up, and a check that each works
		if out, err := exec.Command(cmds[name][0], cmds[name][1:]...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n%s", name, err, out)
			os.Exit(1)
		}
	}
	times := timing.Alternate(order, *n, func(name string) {
		if err := exec.Command(cmds[name][0], cmds[name][1:]...).Run(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
	})
	timing.Table("", 10, order, times)
	fmt.Printf("ratio crucible/bwrap: %s (%d runs each)\n", timing.Ratio(times["crucible"], times["bwrap"]), *n)
}
