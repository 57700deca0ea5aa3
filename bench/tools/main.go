// Command tools measures one tool call made from code in a `crucible run`
// jail, through the tools channel and the bridge, against the same call
// made directly by an SDK client in the benchmark's own process, in one run:
//
//   - bridge: a TypeScript program calls server-everything's echo -n times
//     in a loop and times each call with performance.now() (the server's
//     start and the program's are not counted: one call before the loop
//     starts the server).
//   - direct: a Go SDK client of the benchmark's own, on its own
//     server-everything process (the same program, started the same way),
//     times -n calls of echo.
//
// The two sides alternate, -runs times each, so that drift in the machine's
// speed hits both alike; it prints p50 and p99 of each, their difference
// and their ratio. With -jail, the bridge's server runs in a jail of its
// own (jail: true) and the direct one does not. With -rule, a third side,
// rule, is the bridge with a rule (a CEL condition) on the tool called, and
// it prints what the rule adds to the bridge's call.
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
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/bench/internal/hello"
	"github.com/cruciblehq/crucible/bench/internal/timing"
)

// program is the code in the jail; %d is the number of timed calls.
const program = `await tools.ev.echo({message: "start"});
const ms = [];
for (let i = 0; i < %d; i++) {
  const t = performance.now();
  await tools.ev.echo({message: "hello"});
  ms.push(performance.now() - t);
}
export default ms;
`

func main() {
	crucible := flag.String("crucible", "/tmp/crucible", "the crucible binary")
	everything := flag.String("everything", "node_modules/@modelcontextprotocol/server-everything/dist/index.js", "server-everything's main script")
	n := flag.Int("n", 200, "timed calls per run")
	runs := flag.Int("runs", 5, "runs per side")
	jailed := flag.Bool("jail", false, "run the bridge's server in a jail of its own")
	rule := flag.Bool("rule", false, "time the bridge with a rule on the tool called too")
	flag.Parse()
	if err := bench(*crucible, *everything, *n, *runs, *jailed, *rule); err != nil {
		fmt.Fprintln(os.Stderr, "bench/tools:", err)
		os.Exit(1)
	}
}

// ruled is the rule of the rule side: a condition over the arguments, the
// tool and the execution, as an operator writes one.
const ruled = `    rules: [{tools: [echo], allow_if: 'size(args.message) < 1000 && tool.server == "ev" && execution.calls < 100000'}]
`

func bench(crucible, everything string, n, runs int, jailed, rule bool) error {
	node, err := exec.LookPath("node")
	if err != nil {
		return err
	}
	main, err := filepath.Abs(everything)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-tools-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := hello.Embedded + fmt.Sprintf("servers:\n  ev:\n    command: %s\n    args: [%s]\n", node, main)
	if jailed {
		nm := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(main)))) // node_modules
		cfg += fmt.Sprintf("    jail: true\n    ro: [%s]\n", nm)
	}
	limits := fmt.Sprintf("tools: {max_calls: %d}\n", n+1)
	cfgPath := filepath.Join(dir, "crucible.yaml")
	rulePath := filepath.Join(dir, "rule.yaml")
	prog := filepath.Join(dir, "calls.ts")
	if err := os.WriteFile(cfgPath, []byte(cfg+limits), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(rulePath, []byte(cfg+ruled+limits), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(prog, fmt.Appendf(nil, program, n), 0o644); err != nil {
		return err
	}

	ctx := context.Background()
	cmd := exec.Command(node, main)
	cmd.Env = []string{}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("the direct server: %w", err)
	}
	defer func() { _ = sess.Close() }()
	echo := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}}
	if _, err := sess.CallTool(ctx, echo); err != nil {
		return err
	}

	times := map[string][]float64{} // ms, by side
	sides := []string{"bridge", "direct"}
	if rule {
		sides = append(sides, "rule")
	}
	var runErr error
	timing.Alternate(sides, runs, func(side string) {
		if runErr != nil {
			return
		}
		if side == "direct" {
			for range n {
				t := time.Now()
				if _, err := sess.CallTool(ctx, echo); err != nil {
					runErr = err
					return
				}
				times[side] = append(times[side], float64(time.Since(t).Nanoseconds())/1e6)
			}
			return
		}
		c := cfgPath
		if side == "rule" {
			c = rulePath
		}
		out, err := exec.Command(crucible, "run", "--json", "--config", c, prog).Output()
		if err != nil {
			runErr = fmt.Errorf("crucible run: %w", err)
			return
		}
		var r struct {
			Result []float64
			Error  any
		}
		if err := json.Unmarshal(out, &r); err != nil {
			runErr = fmt.Errorf("crucible run: %w: %.300s", err, out)
			return
		}
		if len(r.Result) != n {
			runErr = fmt.Errorf("crucible run: %d times, not %d: %.300s", len(r.Result), n, out)
			return
		}
		times[side] = append(times[side], r.Result...)
	})
	if runErr != nil {
		return runErr
	}
	for _, ms := range times {
		slices.Sort(ms)
	}
	bridge, direct := times["bridge"], times["direct"]
	server := "not jailed"
	if jailed {
		server = "jailed"
	}
	fmt.Printf("echo, %d runs of %d calls per side (bridge's server %s)\n", runs, n, server)
	fmt.Printf("  %-8s %9s %9s\n", "", "p50", "p99")
	for _, s := range []struct {
		name string
		ms   []float64
	}{{"bridge", bridge}, {"direct", direct}, {"rule", times["rule"]}} {
		if len(s.ms) > 0 {
			fmt.Printf("  %-8s %6.3f ms %6.3f ms\n", s.name, timing.Pct(s.ms, 50), timing.Pct(s.ms, 99))
		}
	}
	b50, b99, d50, d99 := timing.Pct(bridge, 50), timing.Pct(bridge, 99), timing.Pct(direct, 50), timing.Pct(direct, 99)
	fmt.Printf("  bridge - direct: p50 %+.3f ms, p99 %+.3f ms; ratio p50 %.2f, p99 %.2f\n", b50-d50, b99-d99, b50/d50, b99/d99)
	if r := times["rule"]; len(r) > 0 {
		fmt.Printf("  rule - bridge: p50 %+.1f us, p99 %+.1f us\n", (timing.Pct(r, 50)-b50)*1000, (timing.Pct(r, 99)-b99)*1000)
	}
	return nil
}
