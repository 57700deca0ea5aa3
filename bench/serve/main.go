// Command serve measures `execute` of a program that returns 1, through
// `crucible serve`, end to end with the official Go SDK client, against a
// warm pool in this process, in one run: what issue 28 asks of the server.
//
// Latency rows, one call at a time, in ts, js and py (py when python3 is
// here), each row's ratio against the in-process row of its language:
//
//   - pool (in process): sandbox.Pool.Do of a ts pool and of a py pool
//     (size 2, no workspace), js by Pool.Do on the ts pool: the baselines;
//   - stdio session: later calls in the one session of a client that starts
//     `crucible serve` (CommandTransport), all in the session's workspace;
//   - stdio handle: calls in it that pass back the workspace handle of an
//     earlier result;
//   - http first call: a new 2025-11-25 session per call (connecting is
//     not timed), so a fresh workspace;
//   - http session: later calls in one 2025-11-25 session;
//   - http stateless: a 2026-07-28 client, a fresh workspace per call;
//   - http handle: that client, passing back the handle of an earlier
//     result;
//   - "100 ms apart": calls in a session 100 ms after the last one ended,
//     instead of once the pools are full again;
//   - crucible run / crucible exec (cold): a new process and a new jail per
//     call, `return 1` and /bin/true;
//   - stdio / http refused: execute with blank code, refused before any
//     jail: the transport's and the SDK's own cost.
//
// The calls of the other rows that run a program each start once the
// pools that serve them are full (a server's crucible_pool_ready, from
// /metrics). The CPU time and page
// faults per execution are of the process that does the work (the server
// with its reaped children; this one for the in-process pool; the cold
// command's own), from a row's first call until its pools are full again.
//
// Then bursts, ts over HTTP: calls back to back in one session, and -conc
// sessions each calling back to back; the latency of each call, beside the
// rate at which the server's pools handed out jails (each then rebuilt) and
// a cold run's p50, which no call should exceed.
package main

import (
	"bufio"
	"cmp"
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

	"github.com/cruciblehq/crucible/bench/internal/hello"
	"github.com/cruciblehq/crucible/bench/internal/timing"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/sandbox"
)

// sources are the programs, by language, each of which returns 1.
var sources = map[string]string{
	"ts": "return 1\n",
	"js": "return 1\n",
	"py": "import crucible\ncrucible.result = 1\n",
}

// files name the programs as the server does.
var files = map[string]string{"ts": "execute.ts", "js": "execute.js", "py": "execute.py"}

// serveConfig turns the rate limit off (10/s per client by default) and
// lets every caller of the benchmark run at once; the pool is the
// default's.
const serveConfig = hello.Embedded + "serve:\n  rate: 0\n  max_concurrent: 8\n  pool: 2\n  ops_public: true\n"

// spaced is the pause between the calls of a "100 ms apart" row.
const spaced = 100 * time.Millisecond

// baselineSize is the in-process pools' size, serve.pool's default.
const baselineSize = 2

func main() {
	crucible := flag.String("crucible", "/tmp/crucible", "the crucible binary")
	n := flag.Int("n", 20, "calls per row in each run (per caller, in a burst)")
	runs := flag.Int("runs", 3, "runs per row, alternating the rows")
	conc := flag.Int("conc", 8, "sessions calling at once in the concurrent burst")
	flag.Parse()
	if err := bench(*crucible, *n, *runs, *conc); err != nil {
		fmt.Fprintln(os.Stderr, "bench/serve:", err)
		os.Exit(1)
	}
}

// row is one way of running an execution, in the latency phase.
type row struct {
	name string
	// base is the row this one's ratio is against: the in-process pool of
	// its language (itself, for that row); nil for none.
	base *row
	// prepare, if not nil, does the untimed work before call i of a run.
	prepare func(ctx context.Context, i int) error
	// call runs one execution, checks its result, and returns the
	// sandbox's own duration_ms for it (-1 if none).
	call func(ctx context.Context) (int64, error)
	// ready waits until the warm jails the calls take are all there.
	ready func() error
	// gap, if not 0, is the pause between calls, instead of ready.
	gap time.Duration
	// usage reads the CPU time and page faults so far of the process
	// doing the work.
	usage func() (usage, error)

	lat       []time.Duration
	inner     []float64 // duration_ms, as the sandbox measured it
	used      usage
	usedCalls int
}

// usage is CPU time and minor page faults.
type usage struct {
	cpu    time.Duration
	faults int64
}

func (u usage) sub(v usage) usage { return usage{u.cpu - v.cpu, u.faults - v.faults} }
func (u usage) add(v usage) usage { return usage{u.cpu + v.cpu, u.faults + v.faults} }

// per is u per one of n, as "1.2 ms, 345".
func (u usage) per(n int) string {
	n = max(n, 1)
	return fmt.Sprintf("%.1f ms, %.0f", ms(u.cpu)/float64(n), float64(u.faults)/float64(n))
}

// scale is u times f.
func (u usage) scale(f float64) usage {
	return usage{time.Duration(float64(u.cpu) * f), int64(float64(u.faults) * f)}
}

func bench(crucible string, n, runs, conc int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Readable to a -crucible that runs as another user (bench/rootless.sh).
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "crucible.yaml")
	progPath := filepath.Join(dir, "one.ts")
	if err := os.WriteFile(cfgPath, []byte(serveConfig), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(progPath, []byte(sources["ts"]), 0o644); err != nil {
		return err
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	langs := []string{"ts", "js"}
	if hasPython(cfg) {
		langs = append(langs, "py")
	}
	bases, closePools, err := baselines(cfg, langs)
	if err != nil {
		return err
	}
	defer closePools()
	var g rig
	defer g.close()
	if err := g.start(ctx, crucible, cfgPath, pooled(cfg)); err != nil {
		return err
	}

	rows := g.rows(langs, bases)
	cold := coldRow("crucible run (cold)", crucible, "1", "run", "--json", "--config", cfgPath, progPath)
	rows = append(rows, cold,
		coldRow("crucible exec (cold)", crucible, "", "exec", "--json", "--", "/bin/true"),
		refusedRow("stdio refused", g.stdio, g.stdio.sess),
		refusedRow("http refused", g.web, g.stateless))
	for _, r := range rows { // a check that each works, and a warm-up
		if err := r.measure(ctx, 1); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		r.lat, r.inner, r.used, r.usedCalls = nil, nil, usage{}, 0
	}
	if err := latency(ctx, rows, n, runs); err != nil {
		return err
	}
	bursts, err := g.web.bursts(ctx, conc, &g.cleanup)
	if err != nil {
		return err
	}
	if err := burstPhase(ctx, g.web, bursts, n, runs); err != nil {
		return err
	}
	report(rows, n, runs)
	for _, s := range []*server{g.stdio, g.web} {
		fmt.Printf("%s: its CPU and faults leave out this benchmark's reads of /metrics, %.2f ms and %.1f faults each\n",
			s.name, ms(s.perScrape.cpu)/calibrationScrapes, float64(s.perScrape.faults)/calibrationScrapes)
	}
	reportBursts(bursts, cold)
	return nil
}

// rig is what the server rows run on: the two servers, and the HTTP
// sessions that outlive a call.
type rig struct {
	stdio, web         *server
	session, stateless *mcp.ClientSession
	cleanup            []func() // in reverse, at close
}

// start starts the servers, each of which keeps full warm jails when its
// pools are full, and connects the sessions.
func (g *rig) start(ctx context.Context, crucible, cfgPath string, full int) error {
	var err error
	if g.stdio, err = startStdio(ctx, crucible, cfgPath, &g.cleanup); err != nil {
		return err
	}
	if g.web, err = startHTTP(crucible, cfgPath, &g.cleanup); err != nil {
		return err
	}
	for _, s := range []*server{g.stdio, g.web} {
		s.full = full
		if err := s.calibrate(); err != nil {
			return err
		}
	}
	if g.session, err = g.web.session(ctx, "2025-11-25", &g.cleanup); err != nil {
		return fmt.Errorf("http, session: %w", err)
	}
	if g.stateless, err = g.web.session(ctx, "2026-07-28", &g.cleanup); err != nil {
		return fmt.Errorf("http, stateless: %w", err)
	}
	return nil
}

func (g *rig) close() {
	for _, f := range slices.Backward(g.cleanup) {
		f()
	}
}

// rows are the latency rows of each language: its baseline, then the
// server's.
func (g *rig) rows(langs []string, bases map[string]*row) []*row {
	var rows []*row
	for _, l := range langs {
		b := bases[l]
		rows = append(rows, b,
			execRow("stdio session", l, b, g.stdio, in(g.stdio.sess)),
			spacedRow(execRow("stdio session 100 ms apart", l, b, g.stdio, in(g.stdio.sess))),
			handleRow("stdio handle", l, b, g.stdio, g.stdio.sess),
			firstCallRow(l, b, g.web, &g.cleanup),
			execRow("http session", l, b, g.web, in(g.session)),
			spacedRow(execRow("http session 100 ms apart", l, b, g.web, in(g.session))),
			execRow("http stateless", l, b, g.web, in(g.stateless)),
			handleRow("http handle", l, b, g.web, g.stateless))
	}
	return rows
}

// latency runs each row n times a run, runs times, alternating the rows,
// so that drift in the machine's speed hits all alike.
func latency(ctx context.Context, rows []*row, n, runs int) error {
	order := make([]string, len(rows))
	byName := map[string]*row{}
	for i, r := range rows {
		order[i] = r.name
		byName[r.name] = r
	}
	var failed error
	timing.Alternate(order, runs, func(name string) {
		if failed == nil {
			if err := byName[name].measure(ctx, n); err != nil {
				failed = fmt.Errorf("%s: %w", name, err)
			}
		}
	})
	return failed
}

// measure runs n of r's calls one at a time, each once r is ready (or gap
// after the last), and adds up their latency and the work they took, from
// the first call until the pools are full again: the refills are the
// executions' work too.
func (r *row) measure(ctx context.Context, n int) error {
	var before usage
	for i := range n {
		if r.prepare != nil {
			if err := r.prepare(ctx, i); err != nil {
				return err
			}
		}
		if r.gap > 0 && i > 0 {
			time.Sleep(r.gap)
		} else if err := r.ready(); err != nil {
			return err
		}
		if i == 0 {
			var err error
			if before, err = r.usage(); err != nil {
				return err
			}
		}
		t := time.Now()
		ms, err := r.call(ctx)
		d := time.Since(t)
		if err != nil {
			return err
		}
		r.lat = append(r.lat, d)
		if ms >= 0 {
			r.inner = append(r.inner, float64(ms))
		}
	}
	if err := r.ready(); err != nil {
		return err
	}
	after, err := r.usage()
	if err != nil {
		return err
	}
	r.used = r.used.add(after.sub(before))
	r.usedCalls += n
	return nil
}

// baselines are the in-process rows, by language: a ts pool (js on it
// too) and a py pool, as the server keeps them but in this process, and
// without a workspace. A row waits for both pools full, as a server's rows
// wait for all of the server's.
func baselines(cfg *config.Config, langs []string) (map[string]*row, func(), error) {
	var pools []*sandbox.Pool
	closeAll := func() {
		for _, p := range pools {
			p.Close()
		}
	}
	byLang := map[string]*sandbox.Pool{}
	for _, l := range langs {
		if l == "js" {
			continue // the ts pool's
		}
		p, err := sandbox.NewPool(cfg, l, sandbox.PoolOptions{Size: baselineSize})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		pools = append(pools, p)
		byLang[l] = p
	}
	byLang["js"] = byLang["ts"]
	ready := func() error {
		return waitFor(func() (bool, error) {
			for _, p := range pools {
				if p.Stats().Ready < baselineSize {
					return false, nil
				}
			}
			return true, nil
		})
	}
	rows := map[string]*row{}
	for _, l := range langs {
		p, job := byLang[l], sandbox.Job{Source: []byte(sources[l]), File: files[l], Language: l}
		r := &row{name: "pool (in process), " + l, ready: ready, usage: selfUsage,
			call: func(ctx context.Context) (int64, error) {
				x, err := p.Do(ctx, job)
				if err != nil {
					return 0, err
				}
				if x.Error != nil || string(x.Result) != "1" {
					return 0, fmt.Errorf("pool: result %s, error %v", x.Result, x.Error)
				}
				return x.DurationMS, nil
			}}
		r.base = r
		rows[l] = r
	}
	return rows, closeAll, nil
}

// target is where a call goes: a session, and the workspace handle it
// passes back ("" for none).
type target func() (*mcp.ClientSession, string)

// in is the calls of session sess, without a handle.
func in(sess *mcp.ClientSession) target {
	return func() (*mcp.ClientSession, string) { return sess, "" }
}

// execRow is calls of the program in language on server s, each to where
// to says.
func execRow(name, language string, base *row, s *server, to target) *row {
	return &row{name: name + ", " + language, base: base, ready: s.ready, usage: s.usage,
		call: func(ctx context.Context) (int64, error) {
			sess, handle := to()
			ms, _, err := callExecute(ctx, sess, language, handle)
			return ms, err
		}}
}

// spacedRow makes r's calls 100 ms apart, as a model's would be.
func spacedRow(r *row) *row {
	r.gap = spaced
	return r
}

// handleRow is calls on sess that pass back the workspace handle of an
// earlier result. Each run gets a handle of its own, untimed: a client
// holds 32 workspaces at most, the least recently used deleted past that,
// and a run of the stateless rows makes more.
func handleRow(name, language string, base *row, s *server, sess *mcp.ClientSession) *row {
	var handle string
	r := execRow(name, language, base, s, func() (*mcp.ClientSession, string) { return sess, handle })
	r.prepare = func(ctx context.Context, i int) error {
		if i > 0 {
			return nil
		}
		var err error
		_, handle, err = callExecute(ctx, sess, language, "")
		return err
	}
	return r
}

// firstCallRow is the first call of a new 2025-11-25 session, each call;
// connecting (and closing the last session) is not timed.
func firstCallRow(language string, base *row, s *server, cleanup *[]func()) *row {
	var sess *mcp.ClientSession
	r := execRow("http first call", language, base, s, func() (*mcp.ClientSession, string) { return sess, "" })
	r.prepare = func(ctx context.Context, _ int) error {
		if sess != nil {
			_ = sess.Close()
		}
		var err error
		sess, err = s.connect(ctx, "2025-11-25")
		return err
	}
	*cleanup = append(*cleanup, func() {
		if sess != nil {
			_ = sess.Close()
		}
	})
	return r
}

// coldRow runs `crucible ARGS` per call, each process timed whole, its
// own CPU time and page faults added up; its result must be want ("" for
// none, only exit 0).
func coldRow(name, crucible, want string, args ...string) *row {
	var total usage
	return &row{name: name, ready: none,
		usage: func() (usage, error) { return total, nil },
		call: func(ctx context.Context) (int64, error) {
			u, ms, err := runCold(ctx, crucible, want, args...)
			total = total.add(u)
			return ms, err
		}}
}

// refusedRow is execute with blank code: refused before any jail.
func refusedRow(name string, s *server, sess *mcp.ClientSession) *row {
	return &row{name: name, ready: none, usage: s.usage,
		call: func(ctx context.Context) (int64, error) {
			r, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": " "}})
			if err != nil {
				return 0, err
			}
			if !r.IsError {
				return 0, errors.New("empty code was not refused")
			}
			return -1, nil
		}}
}

func none() error { return nil }

// report prints the latency table.
func report(rows []*row, n, runs int) {
	fmt.Printf("latency: %d runs of %d calls per row, alternating; each call with the pools full, or 100 ms after the last\n", runs, n)
	fmt.Printf("%-36s %9s %9s %9s %8s %7s %7s %18s\n",
		"row", "p50", "p99", "min", "jail p50", "ratio50", "+p50", "CPU, faults / exec")
	for _, r := range rows {
		slices.Sort(r.lat)
	}
	var over []string
	for _, r := range rows {
		p50 := timing.Pct(r.lat, 50)
		jail := "-"
		if len(r.inner) > 0 {
			slices.Sort(r.inner)
			jail = fmt.Sprintf("%.0f ms", timing.Pct(r.inner, 50))
		}
		ratio, plus := "-", "-"
		if r.base != nil {
			b50 := timing.Pct(r.base.lat, 50)
			x := float64(p50) / float64(b50)
			ratio, plus = fmt.Sprintf("%.2f", x), fmt.Sprintf("%+.2f", ms(p50-b50))
			if r.base != r && x > 1.3 {
				over = append(over, r.name)
			}
		}
		fmt.Printf("%-36s %9s %9s %9s %8s %7s %7s %18s\n", r.name,
			fmtMS(p50), fmtMS(timing.Pct(r.lat, 99)), fmtMS(r.lat[0]), jail, ratio, plus, r.used.per(r.usedCalls))
	}
	fmt.Println("ratio50 and +p50 (ms): against the in-process pool of the row's language (js: on the ts pool); jail p50: the sandbox's duration_ms")
	fmt.Println("CPU, faults / exec: of the server with its reaped children (pool rows: this process; cold rows: the command), pools refilled included")
	fmt.Printf("goal p50 ≤ 1.3× the pool's; over it, %d rows: %s\n", len(over), cmp.Or(strings.Join(over, "; "), "none"))
}

// burst is calls back to back, from one session or several at once.
type burst struct {
	name     string
	sessions []*mcp.ClientSession
	lat      []time.Duration
	jails    []float64 // jails the pools handed out per second, per run
	waited   int64     // calls that found no jail ready
	taken    int64     // calls the pools saw
}

// bursts are one session and conc sessions calling back to back.
func (s *server) bursts(ctx context.Context, conc int, cleanup *[]func()) ([]*burst, error) {
	sessions := make([]*mcp.ClientSession, conc)
	for i := range sessions {
		var err error
		if sessions[i], err = s.session(ctx, "2025-11-25", cleanup); err != nil {
			return nil, fmt.Errorf("http, burst: %w", err)
		}
	}
	return []*burst{
		{name: "http session, back to back", sessions: sessions[:1]},
		{name: fmt.Sprintf("%d http sessions, back to back", conc), sessions: sessions},
	}, nil
}

// burstPhase runs each burst runs times, alternating them.
func burstPhase(ctx context.Context, s *server, bursts []*burst, n, runs int) error {
	order := make([]string, len(bursts))
	byName := map[string]*burst{}
	for i, b := range bursts {
		order[i] = b.name
		byName[b.name] = b
	}
	var failed error
	timing.Alternate(order, runs, func(name string) {
		if failed == nil {
			if err := byName[name].run(ctx, s, n); err != nil {
				failed = fmt.Errorf("%s: %w", name, err)
			}
		}
	})
	return failed
}

// run makes n calls of ts back to back in each of b's sessions at once,
// with the pools full at the start, and reads how many jails the server's
// pools handed out meanwhile, and how many calls found none ready.
func (b *burst) run(ctx context.Context, s *server, n int) error {
	if err := s.ready(); err != nil {
		return err
	}
	m0, err := s.scrape()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	t := time.Now()
	for _, sess := range b.sessions {
		wg.Go(func() {
			for range n {
				t := time.Now()
				_, _, err := callExecute(ctx, sess, "ts", "")
				d := time.Since(t)
				mu.Lock()
				b.lat = append(b.lat, d)
				if failed == nil {
					failed = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(t).Seconds()
	if failed != nil {
		return failed
	}
	m1, err := s.scrape()
	if err != nil {
		return err
	}
	taken := m1["crucible_pool_warm_total"] + m1["crucible_pool_cold_total"] - m0["crucible_pool_warm_total"] - m0["crucible_pool_cold_total"]
	b.jails = append(b.jails, taken/took)
	b.taken += int64(taken)
	b.waited += int64(m1["crucible_pool_cold_total"] - m0["crucible_pool_cold_total"])
	return nil
}

// reportBursts prints the bursts' table; cold is the row whose p50 no call
// should exceed.
func reportBursts(bursts []*burst, cold *row) {
	c50 := timing.Pct(cold.lat, 50) // sorted by report
	fmt.Printf("\nbursts, ts over HTTP, calls back to back from the pools full; a cold build: %s p50 %s\n", cold.name, fmtMS(c50))
	fmt.Printf("%-36s %6s %9s %9s %9s %8s %7s %s\n",
		"burst", "calls", "p50", "p99", "max", "jails/s", "waited", "max ≤ cold")
	for _, b := range bursts {
		slices.Sort(b.lat)
		top, under := b.lat[len(b.lat)-1], "yes"
		if top > c50 {
			under = "no"
		}
		fmt.Printf("%-36s %6d %9s %9s %9s %8.1f %6.0f%% %s\n", b.name, len(b.lat),
			fmtMS(timing.Pct(b.lat, 50)), fmtMS(timing.Pct(b.lat, 99)), fmtMS(top), median(b.jails),
			100*float64(b.waited)/float64(max(b.taken, 1)), under)
	}
	fmt.Println("jails/s: jails the server's pools handed out per second (crucible_pool_warm_total + _cold_total), one a call, each rebuilt:")
	fmt.Println("the build rate the calls ran at, and the calls' rate;")
	fmt.Println("waited: the calls that found no jail ready (crucible_pool_cold_total); the goal on the developers' VM is p99 ≤ 10 ms")
}

// server is a `crucible serve` under test.
type server struct {
	name string
	base string // where its /metrics and /healthz are (and /mcp, over HTTP)
	pid  int
	full int // its warm jails, every pool full
	// scrapes counts this benchmark's reads of /metrics, and perScrape
	// is what calibrationScrapes of them cost the server.
	scrapes   int
	perScrape usage
	// connect opens a session of the protocol version given (2026-07-28
	// is stateless); nil over stdio.
	connect func(ctx context.Context, version string) (*mcp.ClientSession, error)
	sess    *mcp.ClientSession // over stdio, the one session
}

var client = mcp.NewClient(&mcp.Implementation{Name: "bench-serve", Version: "1"}, nil)

// startStdio starts `crucible serve` as a client does, its metrics on a
// port of their own.
func startStdio(ctx context.Context, crucible, cfgPath string, cleanup *[]func()) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(crucible, "serve", "--config", cfgPath, "--metrics", addr)
	cmd.Stderr = os.Stderr
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("crucible serve (stdio): %w", err)
	}
	*cleanup = append(*cleanup, func() { _ = sess.Close() })
	s := &server{name: "stdio", base: "http://" + addr, pid: cmd.Process.Pid, sess: sess}
	return s, waitHealthy(s.base)
}

// startHTTP starts `crucible serve --http` with a token of its own.
func startHTTP(crucible, cfgPath string, cleanup *[]func()) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	token := make([]byte, 24)
	_, _ = rand.Read(token)
	tok := hex.EncodeToString(token)
	cmd := exec.Command(crucible, "serve", "--config", cfgPath, "--http", addr)
	cmd.Env = append(os.Environ(), "CRUCIBLE_TOKEN="+tok)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	*cleanup = append(*cleanup, func() { stop(cmd) })
	s := &server{name: "http", base: "http://" + addr, pid: cmd.Process.Pid}
	hc := &http.Client{Transport: bearer{tok, &http.Transport{MaxIdleConnsPerHost: 16}}}
	s.connect = func(ctx context.Context, version string) (*mcp.ClientSession, error) {
		return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: hc},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
	}
	return s, waitHealthy(s.base)
}

// session connects to an HTTP server, closed at cleanup, and checks that
// the version is the one asked for.
func (s *server) session(ctx context.Context, version string, cleanup *[]func()) (*mcp.ClientSession, error) {
	sess, err := s.connect(ctx, version)
	if err != nil {
		return nil, err
	}
	*cleanup = append(*cleanup, func() { _ = sess.Close() })
	got := ""
	if ir := sess.InitializeResult(); ir != nil {
		got = ir.ProtocolVersion
	}
	if got != version {
		return nil, fmt.Errorf("protocol %q, not %s", got, version)
	}
	return sess, nil
}

// ready waits until the server's pools are all full: waiting for fewer
// could start a ts call while the ts pool still builds.
func (s *server) ready() error {
	return waitFor(func() (bool, error) {
		m, err := s.scrape()
		return m["crucible_pool_ready"] >= float64(s.full), err
	})
}

// usage is the server's CPU time and page faults, without what this
// benchmark's reads of /metrics cost it: a row's calls poll it while the
// pools refill, several times a call, and each costs the server ~0.5 ms
// of CPU, a fair share of an execution's.
func (s *server) usage() (usage, error) {
	u, err := procUsage(s.pid)
	return u.sub(s.perScrape.scale(float64(s.scrapes) / calibrationScrapes)), err
}

// calibrationScrapes are the reads of /metrics that calibrate times.
const calibrationScrapes = 500

// calibrate measures what reading /metrics costs the server, with its
// pools full and nothing else to do.
func (s *server) calibrate() error {
	if err := s.ready(); err != nil {
		return err
	}
	before, err := procUsage(s.pid)
	if err != nil {
		return err
	}
	for range calibrationScrapes {
		if _, err := s.scrape(); err != nil {
			return err
		}
	}
	after, err := procUsage(s.pid)
	s.perScrape, s.scrapes = after.sub(before), 0
	return err
}

// scrape reads the server's unlabelled metrics, and counts the read.
func (s *server) scrape() (map[string]float64, error) {
	s.scrapes++
	return scrape(s.base)
}

// pooled is the warm jails a server with cfg keeps when full: serve.pool
// for each of its pools, ts (which serves js too) and py when python3 is
// here, as the server decides it.
func pooled(cfg *config.Config) int {
	n := cfg.Serve.Pool
	if hasPython(cfg) {
		n += cfg.Serve.Pool
	}
	return n
}

// hasPython says whether py programs can run here, as the server asks it.
func hasPython(cfg *config.Config) bool {
	_, err := sandbox.Program(cfg, "py", nil, "-")
	return err == nil
}

// callExecute runs the program of language with execute on sess (in the
// workspace of handle, if not ""), checks that it returned 1, and returns
// the sandbox's duration_ms and the workspace's handle.
func callExecute(ctx context.Context, sess *mcp.ClientSession, language, handle string) (int64, string, error) {
	args := map[string]any{"code": sources[language], "language": language}
	if handle != "" {
		args["workspace"] = handle
	}
	r, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: args})
	if err != nil {
		return 0, "", err
	}
	var out struct {
		Result     json.RawMessage `json:"result"`
		DurationMS int64           `json:"duration_ms"`
		Workspace  string          `json:"workspace"`
	}
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || r.IsError || string(out.Result) != "1" {
		return 0, "", fmt.Errorf("execute: %.300s", b)
	}
	if handle != "" && out.Workspace != handle {
		return 0, "", fmt.Errorf("execute: ran in workspace %q, not %q", out.Workspace, handle)
	}
	return out.DurationMS, out.Workspace, nil
}

// runCold runs `crucible ARGS` (with --json) and returns the process's
// own CPU time and page faults, and the sandbox's duration_ms; it must
// exit 0, with the result want if that is not "".
func runCold(ctx context.Context, crucible, want string, args ...string) (usage, int64, error) {
	cmd := exec.CommandContext(ctx, crucible, args...)
	out, err := cmd.Output()
	if err != nil {
		return usage{}, 0, fmt.Errorf("crucible %s: %w", args[0], err)
	}
	var r struct {
		ExitCode   int             `json:"exit_code"`
		Result     json.RawMessage `json:"result"`
		DurationMS int64           `json:"duration_ms"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.ExitCode != 0 || (want != "" && string(r.Result) != want) {
		return usage{}, 0, fmt.Errorf("crucible %s: %.300s", args[0], out)
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
func procUsage(pid int) (usage, error) {
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

// scrape reads a server's unlabelled metrics from /metrics.
func scrape(base string) (map[string]float64, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics: %s: %w", name, err)
		}
		m[name] = f
	}
	if _, ok := m["crucible_pool_ready"]; !ok {
		return nil, errors.New("no crucible_pool_ready in /metrics")
	}
	return m, sc.Err()
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
