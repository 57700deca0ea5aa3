// Command compute times the work a program does once it runs, measured
// inside the program (performance.now around the work, not the start):
// the two programs of issue 43, a 4 MB JSON tool result parsed, filtered,
// grouped, sorted, matched and stringified, and a 5M-step arithmetic loop
// with a sort of 200k numbers, on a warm pool of each engine (the embedded
// one and Deno, runtimes.engine) and with node outside any jail, in turn,
// so that drift in the machine's speed hits all alike. It also times a
// warm Deno execution of `return 1` with and without execute's type
// check (sandbox.TypeCheck), end to end: checked by `deno check`, and by
// the warm checker of a worker under serve.typecheck.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/bench/internal/timing"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/sandbox"
)

// programs are script bodies (a top-level return is the result) that
// return {ms}: the time their work took, in the program.
var programs = map[string]string{
	"json": `const topics = ["parsing", "network", "ui", "auth"], kinds = ["bug", "feature", "docs"];
const items = [];
for (let i = 0; i < 16000; i++) {
  items.push({ id: i, user: "user" + (i % 97), title: "Issue number " + i + " about " + topics[i % 4],
    labels: kinds.slice(0, 1 + (i % 3)), body: "x".repeat(120) + i,
    created: "2026-11-" + String(1 + (i % 28)).padStart(2, "0") + "T10:00:00Z", score: (i * 7919) % 1000 });
}
const text = JSON.stringify(items); // the tool's result, as it arrives
const t0 = performance.now();
const data = JSON.parse(text);
const bugs = data.filter((d) => d.labels.includes("bug") && d.score > 100);
const byUser = {};
for (const d of bugs) (byUser[d.user] ??= []).push(d);
const top = Object.entries(byUser)
  .map(([u, ds]) => ({ u, n: ds.length, best: ds.sort((a, b) => b.score - a.score)[0].id }))
  .sort((a, b) => b.n - a.n || (a.u < b.u ? -1 : 1));
const re = /about (parsing|auth)$/;
const matched = data.filter((d) => re.test(d.title)).length;
const out = JSON.stringify({ top, matched });
return { ms: performance.now() - t0, mb: text.length / 1e6, out: out.length };
`,
	"loop": `const t0 = performance.now();
let x = 0;
for (let i = 0; i < 5000000; i++) x = (x * 31 + i) % 1000003;
const a = [];
let s = 1;
for (let i = 0; i < 200000; i++) { s = (s * 1103515245 + 12345) % 2147483648; a.push(s); }
a.sort((p, q) => p - q);
return { ms: performance.now() - t0, x, first: a[0] };
`,
}

func main() {
	rounds := flag.Int("rounds", 5, "rounds of alternation")
	checks := flag.Int("checks", 5, "executions with and without a type check, per round")
	node := flag.String("node", "node", "the node binary")
	idle := flag.Duration("idle", 100*time.Millisecond, "pause before each timed execution, once a jail is ready")
	flag.Parse()

	embedded := config.Default()
	embedded.Runtimes.Engine = config.EngineEmbedded
	embedded.Sandbox.Timeout = config.Duration(2 * time.Minute)
	onDeno := *embedded
	onDeno.Runtimes.Engine = config.EngineDeno
	checking := onDeno
	checking.Serve.TypeCheck = true // its workers ready the checker
	pools := map[string]*sandbox.Pool{}
	for name, cfg := range map[string]*config.Config{"embedded": embedded, "deno": &onDeno, "checking": &checking} {
		p, err := sandbox.NewPool(cfg, "ts", sandbox.PoolOptions{Size: 1})
		if err != nil {
			fail(err)
		}
		defer p.Close()
		pools[name] = p
	}
	dir, err := os.MkdirTemp("", "bench-compute-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)

	names := slices.Sorted(func(yield func(string) bool) {
		for n := range programs {
			if !yield(n) {
				return
			}
		}
	})
	inProgram := map[string][]float64{} // "json on deno": ms
	for range *rounds {
		for _, prog := range names {
			for _, on := range []string{"embedded", "deno", "node"} {
				var ms float64
				if on == "node" {
					ms = runNode(*node, dir, programs[prog])
				} else {
					ms = runPool(pools[on], programs[prog], nil)
				}
				key := prog + " on " + on
				inProgram[key] = append(inProgram[key], ms)
			}
		}
	}
	for _, prog := range names {
		med := map[string]float64{}
		for _, on := range []string{"embedded", "deno", "node"} {
			t := inProgram[prog+" on "+on]
			slices.Sort(t)
			med[on] = timing.Pct(t, 50)
		}
		fmt.Printf("%s (%d rounds), in the program, p50: embedded %.1f ms, deno %.1f ms, node %.1f ms: deno/node %.2f, embedded/deno %.1f\n",
			prog, *rounds, med["embedded"], med["deno"], med["node"], med["deno"]/med["node"], med["embedded"]/med["deno"])
	}

	check := &sandbox.TypeCheck{Declarations: sandbox.ToolDeclarations(nil)}
	order := []string{"unchecked", "checked", "warm checker"}
	times := map[string][]time.Duration{}
	for range *rounds * *checks {
		for _, name := range order {
			p := pools["deno"]
			if name == "warm checker" {
				p = pools["checking"]
			}
			for p.Stats().Ready == 0 { // a jail ready: the check's cost, not the jail's build
				time.Sleep(time.Millisecond)
			}
			time.Sleep(*idle) // and the last one torn down
			c := check
			if name == "unchecked" {
				c = nil
			}
			start := time.Now()
			runPool(p, "return 1", c)
			times[name] = append(times[name], time.Since(start))
		}
	}
	for _, t := range times {
		slices.Sort(t)
	}
	fmt.Println("a warm Deno execution of `return 1`, end to end:")
	timing.Table("  ", 10, order, times)
	fmt.Printf("  checked/unchecked: %s; warm checker/unchecked: %s\n", timing.Ratio(times["checked"], times["unchecked"]), timing.Ratio(times["warm checker"], times["unchecked"]))
}

// runPool runs src on p, type-checked as c says (nil: not), and returns its
// result's ms.
func runPool(p *sandbox.Pool, src string, c *sandbox.TypeCheck) float64 {
	x, err := p.Do(context.Background(), sandbox.Job{Source: []byte(src), File: "bench.ts", TypeCheck: c})
	if err != nil {
		fail(err)
	}
	if x.Error != nil || x.ExitCode != 0 {
		fail(fmt.Errorf("exit %d: %+v\n%s", x.ExitCode, x.Error, x.Stderr))
	}
	var r struct{ MS float64 }
	_ = json.Unmarshal(x.Result, &r) // `return 1` has none
	return r.MS
}

// runNode runs the script body src with node, outside any jail, and
// returns its result's ms.
func runNode(node, dir, src string) float64 {
	f := filepath.Join(dir, "bench.mjs")
	body := "const r = await (async () => {\n" + src + "\n})();\nconsole.log(JSON.stringify(r));\n"
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		fail(err)
	}
	out, err := exec.Command(node, f).Output()
	if err != nil {
		fail(fmt.Errorf("node: %w", err))
	}
	var r struct{ MS float64 }
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &r); err != nil {
		fail(fmt.Errorf("node's result %q: %w", out, err))
	}
	return r.MS
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
