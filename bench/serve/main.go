// Command serve measures `execute` of `return 1` through `crucible serve`,
// end to end, with the official Go SDK client, against the warm pool's own
// figure in this process, in one run. The rows:
//
//   - pool: sandbox.Pool.Run in this process (size 2), the baseline;
//   - stdio: a client that starts `crucible serve` (CommandTransport);
//   - http stateless: a 2026-07-28 client of `crucible serve --http` (each
//     call a fresh workspace, so a warm jail);
//   - http session: one 2025-11-25 session; its first execution makes the
//     session's workspace and every later one runs in it, on the warm jail
//     the server readied with it after the last one (in a new jail when
//     that is not ready yet);
//   - http session, first call: a new 2025-11-25 session per execution
//     (connecting is not timed), so that each call is a fresh workspace;
//   - http session, ts and js: another such session, whose programs
//     alternate between TypeScript and JavaScript;
//   - crucible run: the same program, cold, the whole process;
//   - stdio / http refused: execute with empty code, refused before any
//     jail: the transport's and the SDK's own cost.
//
// Three phases, each alternating the rows -runs times: latency (one call
// at a time, each started when the pools are full again), sequential
// throughput (calls back to back), and throughput with -conc callers. The
// CPU time and page faults per execution, of the process that does the
// work (the server with its reaped children, or this one for the pool),
// are taken over the sequential phase, jail builds included.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/bench/internal/timing"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/sandbox"
)

const code = "return 1\n"

// serveConfig turns the rate limit off (10/s per client by default) and
// lets every caller of the benchmark run at once.
const serveConfig = "serve:\n  rate: 0\n  max_concurrent: 8\n  pool: 2\n"

// pooled is the warm jails a server with cfg keeps when full: serve.pool
// for each language whose runtime is here (ts and js always, py with
// python3), as the server decides it.
func pooled(cfg *config.Config) int {
	n := 0
	for _, l := range []string{"ts", "js", "py"} {
		if _, err := sandbox.Program(cfg, l, nil, "-"); err == nil {
			n += cfg.Serve.Pool
		}
	}
	return n
}

func main() {
	crucible := flag.String("crucible", "/tmp/crucible", "the crucible binary")
	n := flag.Int("n", 50, "executions per row in each run")
	runs := flag.Int("runs", 4, "runs per row and phase, alternating the rows")
	conc := flag.Int("conc", 2, "callers at once in the concurrent phase")
	flag.Parse()
	if err := bench(*crucible, *n, *runs, *conc); err != nil {
		fmt.Fprintln(os.Stderr, "bench/serve:", err)
		os.Exit(1)
	}
}

// row is one way of running an execution.
type row struct {
	name string
	// call runs one execution, checks its result, and returns the
	// sandbox's own duration_ms for it (-1 if none).
	call func(ctx context.Context, caller int) (int64, error)
	// ready waits until the warm jails are all there.
	ready func() error
	// usage reads the CPU time and page faults so far of the process
	// doing the work; nil when call reports them itself.
	usage func() (usage, error)

	lat       []time.Duration
	inner     []float64 // duration_ms, as the sandbox measured it
	seq, par  []float64 // executions/s per run
	used      usage     // over the sequential phase
	usedCalls int
}

// usage is CPU time and minor page faults.
type usage struct {
	cpu    time.Duration
	faults int64
}

func (u usage) sub(v usage) usage { return usage{u.cpu - v.cpu, u.faults - v.faults} }
func (u usage) add(v usage) usage { return usage{u.cpu + v.cpu, u.faults + v.faults} }

func bench(crucible string, n, runs, conc int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfgPath := filepath.Join(dir, "crucible.yaml")
	progPath := filepath.Join(dir, "one.ts")
	if err := os.WriteFile(cfgPath, []byte(serveConfig), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(progPath, []byte(code), 0o644); err != nil {
		return err
	}

	// The baseline: a pool in this process, as bench/runtimes has it.
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	pool, err := sandbox.NewPool(cfg, "ts", sandbox.PoolOptions{Size: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	poolRow := &row{name: "pool (in process)",
		call: func(ctx context.Context, _ int) (int64, error) {
			x, err := pool.Run(ctx, []byte(code), "execute.ts")
			if err != nil {
				return 0, err
			}
			if x.Error != nil || string(x.Result) != "1" {
				return 0, fmt.Errorf("pool: result %s, error %v", x.Result, x.Error)
			}
			return x.DurationMS, nil
		},
		ready: func() error {
			return waitFor(func() (bool, error) { return pool.Stats().Ready == 2, nil })
		},
		usage: selfUsage,
	}

	// stdio: the client starts the server.
	metricsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	stdioCmd := exec.Command(crucible, "serve", "--config", cfgPath, "--metrics", metricsAddr)
	stdioCmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-serve", Version: "1"}, nil)
	stdio, err := client.Connect(ctx, &mcp.CommandTransport{Command: stdioCmd}, nil)
	if err != nil {
		return fmt.Errorf("crucible serve (stdio): %w", err)
	}
	defer func() { _ = stdio.Close() }()
	stdioPid := stdioCmd.Process.Pid
	if err := waitHealthy("http://" + metricsAddr); err != nil {
		return err
	}

	// HTTP: one server, stateless callers and session callers.
	httpAddr, err := freeAddr()
	if err != nil {
		return err
	}
	token := make([]byte, 24)
	_, _ = rand.Read(token)
	tok := hex.EncodeToString(token)
	httpCmd := exec.Command(crucible, "serve", "--config", cfgPath, "--http", httpAddr)
	httpCmd.Env = append(os.Environ(), "CRUCIBLE_TOKEN="+tok)
	httpCmd.Stderr = os.Stderr
	if err := httpCmd.Start(); err != nil {
		return err
	}
	defer stop(httpCmd)
	base := "http://" + httpAddr
	if err := waitHealthy(base); err != nil {
		return err
	}
	hc := &http.Client{Transport: bearer{tok, &http.Transport{MaxIdleConnsPerHost: 16}}}
	connect := func(version string) (*mcp.ClientSession, error) {
		var o *mcp.ClientSessionOptions
		if version != "" {
			o = &mcp.ClientSessionOptions{ProtocolVersion: version}
		}
		return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, o)
	}
	stateless := make([]*mcp.ClientSession, conc)
	sessions := make([]*mcp.ClientSession, conc)
	mixed := make([]*mcp.ClientSession, conc)
	for i := range conc {
		if stateless[i], err = connect(""); err != nil {
			return fmt.Errorf("http, stateless: %w", err)
		}
		defer func() { _ = stateless[i].Close() }()
		if sessions[i], err = connect("2025-11-25"); err != nil {
			return fmt.Errorf("http, session: %w", err)
		}
		defer func() { _ = sessions[i].Close() }()
		if mixed[i], err = connect("2025-11-25"); err != nil {
			return fmt.Errorf("http, session ts and js: %w", err)
		}
		defer func() { _ = mixed[i].Close() }()
	}
	if v := sessions[0].InitializeResult().ProtocolVersion; v != "2025-11-25" {
		return fmt.Errorf("http, session: protocol %s, not 2025-11-25", v)
	}

	// Every pool full, Python's too: waiting for fewer could start a call
	// while the TypeScript pool still builds.
	full := pooled(cfg)
	serverReady := func(url string) func() error {
		return func() error {
			return waitFor(func() (bool, error) {
				r, sessions, err := poolReady(url)
				return r >= full && sessions, err
			})
		}
	}
	stdioReady, httpReady := serverReady("http://"+metricsAddr), serverReady(base)
	execute := func(sess func(caller int) *mcp.ClientSession) func(context.Context, int) (int64, error) {
		return func(ctx context.Context, caller int) (int64, error) {
			return callExecute(ctx, sess(caller), code, "ts")
		}
	}
	next := make([]int, conc) // of "http session, ts and js": each caller's count, which picks its language
	alternate := func(ctx context.Context, caller int) (int64, error) {
		next[caller]++ // a caller's calls follow one another
		return callExecute(ctx, mixed[caller], code, []string{"ts", "js"}[next[caller]%2])
	}
	refused := func(sess *mcp.ClientSession) func(context.Context, int) (int64, error) {
		return func(ctx context.Context, _ int) (int64, error) {
			r, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": " "}})
			if err != nil {
				return 0, err
			}
			if !r.IsError {
				return 0, errors.New("empty code was not refused")
			}
			return -1, nil
		}
	}
	var fresh *mcp.ClientSession // the session of "http session, first call"
	rows := []*row{
		poolRow,
		{name: "stdio", call: execute(func(int) *mcp.ClientSession { return stdio }), ready: stdioReady, usage: procUsage(stdioPid)},
		{name: "http stateless", call: execute(func(i int) *mcp.ClientSession { return stateless[i] }), ready: httpReady, usage: procUsage(httpCmd.Process.Pid)},
		{name: "http session", call: execute(func(i int) *mcp.ClientSession { return sessions[i] }), ready: httpReady, usage: procUsage(httpCmd.Process.Pid)},
		{name: "http session, ts and js", call: alternate, ready: httpReady, usage: procUsage(httpCmd.Process.Pid)},
		{name: "http session, first call", call: execute(func(int) *mcp.ClientSession { return fresh }),
			ready: func() error {
				if fresh != nil {
					_ = fresh.Close()
				}
				var err error
				if fresh, err = connect("2025-11-25"); err != nil {
					return err
				}
				return httpReady()
			}},
		{name: "crucible run (cold)", ready: func() error { return nil }},
		{name: "stdio refused", call: refused(stdio), ready: func() error { return nil }},
		{name: "http refused", call: refused(stateless[0]), ready: func() error { return nil }},
	}
	cold := rows[slices.IndexFunc(rows, func(r *row) bool { return r.name == "crucible run (cold)" })]
	var coldMu sync.Mutex // its callers add up their processes' usage
	cold.call = func(ctx context.Context, _ int) (int64, error) {
		u, ms, err := runCold(ctx, crucible, progPath)
		coldMu.Lock()
		cold.used = cold.used.add(u)
		cold.usedCalls++
		coldMu.Unlock()
		return ms, err
	}
	defer func() {
		if fresh != nil {
			_ = fresh.Close()
		}
	}()
	order := make([]string, len(rows))
	byName := map[string]*row{}
	for i, r := range rows {
		order[i] = r.name
		byName[r.name] = r
	}
	for _, r := range rows { // a check that each works, and a warm-up
		if err := r.ready(); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		if _, err := r.call(ctx, 0); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}

	var failed error
	fail := func(r *row, err error) {
		if failed == nil && err != nil {
			failed = fmt.Errorf("%s: %w", r.name, err)
		}
	}
	// Latency: one at a time, each with the warm jails all there.
	timing.Alternate(order, runs, func(name string) {
		r := byName[name]
		for i := 0; i < n && failed == nil; i++ {
			if err := r.ready(); err != nil {
				fail(r, err)
				return
			}
			t := time.Now()
			ms, err := r.call(ctx, 0)
			d := time.Since(t)
			if err != nil {
				fail(r, err)
				return
			}
			r.lat = append(r.lat, d)
			if ms >= 0 {
				r.inner = append(r.inner, float64(ms))
			}
		}
	})
	if failed != nil {
		return failed
	}
	// Throughput, one caller, then conc callers; the first also counts
	// the work's CPU and page faults, from pools full to pools full.
	cold.used, cold.usedCalls = usage{}, 0
	for _, callers := range []int{1, conc} {
		timing.Alternate(order, runs, func(name string) {
			r := byName[name]
			if failed != nil || name == "http session, first call" || strings.HasSuffix(name, "refused") {
				return
			}
			fail(r, r.ready())
			var before usage
			if r.usage != nil && callers == 1 {
				var err error
				before, err = r.usage()
				fail(r, err)
			}
			t := time.Now()
			var wg sync.WaitGroup
			var mu sync.Mutex
			for c := range callers {
				wg.Go(func() {
					for i := c; i < n; i += callers {
						_, err := r.call(ctx, c)
						mu.Lock()
						fail(r, err)
						mu.Unlock()
						if err != nil {
							return
						}
					}
				})
			}
			wg.Wait()
			rate := float64(n) / time.Since(t).Seconds()
			if callers == 1 {
				r.seq = append(r.seq, rate)
				fail(r, r.ready()) // the refills are the executions' work too
				if r.usage != nil {
					after, err := r.usage()
					fail(r, err)
					r.used = r.used.add(after.sub(before))
					r.usedCalls += n
				}
			} else {
				r.par = append(r.par, rate)
			}
		})
		if failed != nil {
			return failed
		}
	}
	report(rows, n, runs, conc)
	return nil
}

// report prints the table: latency, throughput, work per execution.
func report(rows []*row, n, runs, conc int) {
	base := rows[0]
	slices.Sort(base.lat)
	b50, b99 := timing.Pct(base.lat, 50), timing.Pct(base.lat, 99)
	bseq := median(base.seq)
	fmt.Printf("execute of %q, %d runs of %d per row, alternating; latency one at a time with the pools full\n", strings.TrimSpace(code), runs, n)
	fmt.Printf("%-26s %9s %9s %9s %8s %8s %7s %7s %9s %9s %8s %9s\n",
		"row", "p50", "p99", "min", "jail p50", "ratio50", "ratio99", "+p50", "seq/s", fmt.Sprintf("%d at once", conc), "ratio/s", "CPU, faults / exec")
	for _, r := range rows {
		slices.Sort(r.lat)
		p50, p99 := timing.Pct(r.lat, 50), timing.Pct(r.lat, 99)
		jail := "-"
		if len(r.inner) > 0 {
			slices.Sort(r.inner)
			jail = fmt.Sprintf("%.0f ms", timing.Pct(r.inner, 50))
		}
		seq, par, ratio, work := "-", "-", "-", "-"
		if len(r.seq) > 0 {
			seq = fmt.Sprintf("%.1f", median(r.seq))
			ratio = fmt.Sprintf("%.2f", median(r.seq)/bseq)
		}
		if len(r.par) > 0 {
			par = fmt.Sprintf("%.1f", median(r.par))
		}
		if r.usedCalls > 0 {
			work = fmt.Sprintf("%.1f ms, %d", ms(r.used.cpu)/float64(r.usedCalls), r.used.faults/int64(r.usedCalls))
		}
		fmt.Printf("%-26s %9s %9s %9s %8s %8.2f %7.2f %+7.2f %9s %9s %8s %9s\n", r.name,
			fmtMS(p50), fmtMS(p99), fmtMS(r.lat[0]), jail,
			float64(p50)/float64(b50), float64(p99)/float64(b99), ms(p50-b50), seq, par, ratio, work)
	}
	fmt.Println("ratios and +p50 (ms) are against the pool in process; jail p50 is the sandbox's duration_ms;")
	fmt.Println("CPU and faults: the server process with its reaped children (the pool row: this process), over the sequential phase, jail builds included")
}

// callExecute runs code with execute on sess and checks that it returned 1.
func callExecute(ctx context.Context, sess *mcp.ClientSession, src, language string) (int64, error) {
	r, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": src, "language": language}})
	if err != nil {
		return 0, err
	}
	var out struct {
		Result     json.RawMessage `json:"result"`
		DurationMS int64           `json:"duration_ms"`
	}
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || r.IsError || string(out.Result) != "1" {
		return 0, fmt.Errorf("execute: %.300s", b)
	}
	return out.DurationMS, nil
}

// runCold runs `crucible run --json FILE` and returns the process's own
// CPU time and page faults, and the sandbox's duration_ms.
func runCold(ctx context.Context, crucible, file string) (usage, int64, error) {
	cmd := exec.CommandContext(ctx, crucible, "run", "--json", file)
	out, err := cmd.Output()
	if err != nil {
		return usage{}, 0, fmt.Errorf("crucible run: %w", err)
	}
	var r struct {
		Result     json.RawMessage `json:"result"`
		DurationMS int64           `json:"duration_ms"`
	}
	if err := json.Unmarshal(out, &r); err != nil || string(r.Result) != "1" {
		return usage{}, 0, fmt.Errorf("crucible run: %.300s", out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return usage{tv(ru.Utime) + tv(ru.Stime), ru.Minflt}, r.DurationMS, nil
}

// selfUsage is this process's CPU time and page faults, with its reaped
// children's (the jails).
func selfUsage() (usage, error) {
	var self, kids syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return usage{}, err
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids); err != nil {
		return usage{}, err
	}
	return usage{tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime), self.Minflt + kids.Minflt}, nil
}

func tv(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }

// procUsage reads pid's CPU time and page faults, with its reaped
// children's, from /proc/PID/stat (in clock ticks of 10 ms: USER_HZ).
func procUsage(pid int) func() (usage, error) {
	return func() (usage, error) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return usage{}, err
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // f[0] is field 3, state
		num := func(field int) int64 {
			v, _ := strconv.ParseInt(f[field-3], 10, 64)
			return v
		}
		// utime, stime, cutime, cstime; minflt, cminflt.
		ticks := num(14) + num(15) + num(16) + num(17)
		return usage{time.Duration(ticks) * 10 * time.Millisecond, num(10) + num(11)}, nil
	}
}

// poolReady scrapes a server's count of warm jails from /metrics, and
// says whether each session that holds a warm jail of its own has it ready.
func poolReady(base string) (int, bool, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = resp.Body.Close() }()
	v := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		for _, name := range []string{"crucible_pool_ready", "crucible_session_jails", "crucible_session_jails_ready"} {
			if s, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				f, err := strconv.ParseFloat(s, 64)
				if err != nil {
					return 0, false, err
				}
				v[name] = f
			}
		}
	}
	if _, ok := v["crucible_pool_ready"]; !ok {
		return 0, false, errors.New("no crucible_pool_ready in /metrics")
	}
	return int(v["crucible_pool_ready"]), v["crucible_session_jails_ready"] >= v["crucible_session_jails"], nil
}

// waitFor polls ok every 5 ms, for 30 s at most.
func waitFor(ok func() (bool, error)) error {
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if done, err := ok(); err != nil || done {
			return err
		}
	}
	return errors.New("the warm jails were not all ready after 30 s")
}

func waitHealthy(base string) error {
	return waitFor(func() (bool, error) {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// freeAddr is a loopback address with a port free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// stop ends a server as Ctrl-C would, and kills it if it takes long.
func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// bearer adds the token to every request.
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return timing.Pct(s, 50)
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func fmtMS(d time.Duration) string { return fmt.Sprintf("%.2f ms", ms(d)) }
