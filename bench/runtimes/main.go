// Command runtimes times a cold `crucible run hello.ts` (a fresh jail and
// the embedded engine) against the same file run by `deno run` without any
// jail, and against `python3 -c`, alternating the commands so that drift in
// the machine's speed hits all alike. It prints medians, p95 and the ratio
// to Deno. Then it times executions on a warm pool, inside this process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/bench/internal/hello"
	"github.com/cruciblehq/crucible/bench/internal/timing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/sandbox"
)

func main() {
	crucible := flag.String("crucible", "crucible", "path of the crucible binary")
	deno := flag.String("deno", "node_modules/.bin/deno", "path of the deno binary")
	n := flag.Int("n", 100, "runs of each command")
	warm := flag.Int("warm", 500, "executions on the warm pool")
	flag.Parse()

	file, embedded, remove, err := hello.Write()
	if err != nil {
		fail(err)
	}
	defer remove()
	cmds := map[string][]string{
		"crucible run hello.ts": {*crucible, "run", "--config", embedded, file},
		"deno run hello.ts":     {*deno, "run", "--no-config", "--no-prompt", "--quiet", file},
		"python3 -c":            {"/usr/bin/python3", "-c", `print("hello")`},
		"crucible exec true":    {*crucible, "exec", "--", "/bin/true"},
	}
	order := []string{"crucible run hello.ts", "deno run hello.ts", "python3 -c", "crucible exec true"}
	for _, name := range order { // warm-up (Deno's cache too), and a check that each works
		out, err := exec.Command(cmds[name][0], cmds[name][1:]...).CombinedOutput()
		// crucible run prints the program's value after its output.
		if err != nil || !strings.HasPrefix(string(out), "hello\n") && name != "crucible exec true" {
			fail(fmt.Errorf("%s: %w\n%s", name, err, out))
		}
	}
	times := timing.Alternate(order, *n, func(name string) {
		if err := exec.Command(cmds[name][0], cmds[name][1:]...).Run(); err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
	})
	timing.Table("", 22, order, times)
	fmt.Printf("ratio crucible run / deno run: %s (%d runs each)\n", timing.Ratio(times["crucible run hello.ts"], times["deno run hello.ts"]), *n)
	benchPool(*warm)
}

// benchPool times tiny executions on a pool: one at a time with a jail
// always ready (latency), then as many as the pool takes (throughput).
func benchPool(n int) {
	cfg := config.Default()
	cfg.Runtimes.Engine = config.EngineEmbedded
	p, err := sandbox.NewPool(cfg, "ts", sandbox.PoolOptions{Size: 2})
	if err != nil {
		fail(err)
	}
	defer p.Close()
	var lat []time.Duration
	for i := 0; i < n; i++ {
		for p.Stats().Ready == 0 { // latency with a jail ready, not the build
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		x, err := p.Do(context.Background(), sandbox.Job{Source: []byte(hello.Source), File: "hello.ts"})
		if err != nil || x.Error != nil || x.Stdout != "hello\n" {
			fail(fmt.Errorf("pool: %w %+v", err, x))
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	fmt.Printf("warm pool, one at a time: p50 %s, p99 %s, min %s (%d executions)\n",
		timing.Pct(lat, 50).Round(time.Microsecond), timing.Pct(lat, 99).Round(time.Microsecond), lat[0].Round(time.Microsecond), n)

	p2, err := sandbox.NewPool(cfg, "ts", sandbox.PoolOptions{Size: 4, InFlight: 8})
	if err != nil {
		fail(err)
	}
	defer p2.Close()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() {
			if x, err := p2.Do(context.Background(), sandbox.Job{Source: []byte(hello.Source), File: "hello.ts"}); err != nil || x.Error != nil {
				fail(fmt.Errorf("pool: %w %+v", err, x))
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	fmt.Printf("warm pool, all at once (size 4, 8 in flight): %.0f executions/s (%d in %s)\n", float64(n)/d.Seconds(), n, d.Round(time.Millisecond))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
