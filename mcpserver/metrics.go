package mcpserver

import (
	"bytes"
	"errors"
	"maps"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// metrics are the server's Prometheus metrics, written in the text format
// (0.0.4) by hand: Prometheus's client library, with its dependencies,
// cost every start of this binary (the jail's init and workers are this
// binary) over a hundred page faults in package inits, for five families.
type metrics struct {
	servers []string // the configured servers: the only server labels
	clients []string // the named clients, and stdio: the only client labels

	mu         sync.Mutex
	executions counterVec
	byClient   counterVec
	violations counterVec
	toolCalls  counterVec
	egress     counterVec
	duration   histogram
	funcs      []funcMetric // read when scraped
}

// counterVec is a counter by label values; its keys are the rendered
// label sets ({a="x",b="y"}), which sort deterministically.
type counterVec struct {
	name, help string
	labels     []string
	values     map[string]float64
}

type histogram struct {
	name, help string
	bounds     []float64 // ascending; the +Inf bucket is counts[len(bounds)]
	counts     []uint64  // per bucket, not cumulative
	sum        float64
	count      uint64
}

type funcMetric struct {
	name, help, typ string
	f               func() float64
	// Or, for a family with one label, its value by the label's.
	label string
	by    func() map[string]float64
}

func newMetrics(servers, clients []string) *metrics {
	vec := func(name, help string, labels ...string) counterVec {
		return counterVec{name: name, help: help, labels: labels, values: map[string]float64{}}
	}
	bounds := []float64{.002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	return &metrics{
		servers:    servers,
		clients:    append(slices.Clone(clients), "stdio"),
		byClient:   vec("crucible_client_executions_total", "Executions by client: a named client (clients), stdio, or other (an anonymous token).", "client"),
		executions: vec("crucible_executions_total", "Executions by outcome: ok, failed (the program failed or was stopped), refused (busy, rate limited, bad arguments), error (the sandbox could not run it).", "outcome"),
		violations: vec("crucible_violations_total", "Operations the sandbox refused, by kind.", "kind"),
		toolCalls:  vec("crucible_tool_calls_total", "Tool calls made by programs, by server and outcome (ok, error).", "server", "outcome"),
		egress:     vec("crucible_egress_bytes_total", "Bytes that programs' network connections carried, by direction: out (sent by the program) and in.", "direction"),
		duration: histogram{name: "crucible_execution_duration_seconds", help: "Time from an execute call's arrival to its answer.",
			bounds: bounds, counts: make([]uint64, len(bounds)+1)},
	}
}

// relabel adds servers and clients, a reload's, to the labels the metrics
// know; those known before stay, with their series.
func (m *metrics) relabel(servers, clients []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range servers {
		if !slices.Contains(m.servers, s) {
			m.servers = append(m.servers, s)
		}
	}
	for _, c := range clients {
		if !slices.Contains(m.clients, c) {
			m.clients = append(m.clients, c)
		}
	}
}

// gauge registers a gauge read when scraped.
func (m *metrics) gauge(name, help string, f func() float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.funcs = append(m.funcs, funcMetric{name: name, help: help, typ: "gauge", f: f})
}

// counter registers a counter read when scraped.
func (m *metrics) counter(name, help string, f func() float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.funcs = append(m.funcs, funcMetric{name: name, help: help, typ: "counter", f: f})
}

// counterBy registers a counter with one label, its values by the label's,
// read when scraped.
func (m *metrics) counterBy(name, help, label string, f func() map[string]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.funcs = append(m.funcs, funcMetric{name: name, help: help, typ: "counter", label: label, by: f})
}

// add adds v to the series of the label values; the caller holds m.mu.
func (c *counterVec) add(v float64, values ...string) {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range c.labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name + `="` + labelEscaper.Replace(values[i]) + `"`)
	}
	b.WriteByte('}')
	c.values[b.String()] += v
}

// execution counts one execute call of client.
func (m *metrics) execution(client string, out *executeOut, err error, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.clients, client) {
		client = "other" // an anonymous token: one label for them all
	}
	m.byClient.add(1, client)
	h := &m.duration
	h.counts[sort.SearchFloat64s(h.bounds, took.Seconds())]++ // the first bound >= the value
	h.sum += took.Seconds()
	h.count++
	switch {
	case err != nil:
		outcome := "refused"
		if errors.Is(err, errRun) {
			outcome = "error"
		}
		m.executions.add(1, outcome)
		return
	case out.ExitCode != 0 || out.Error != nil:
		m.executions.add(1, "failed")
	default:
		m.executions.add(1, "ok")
	}
	for _, v := range out.Violations {
		m.violations.add(float64(max(v.Count, 1)), v.Kind)
	}
	if n := out.Network; n != nil {
		m.egress.add(float64(n.BytesOut), "out")
		m.egress.add(float64(n.BytesIn), "in")
	}
	for _, c := range out.ToolCalls {
		outcome := "ok"
		if !c.OK {
			outcome = "error"
		}
		server := c.Server
		if !slices.Contains(m.servers, server) {
			server = "other" // the program named it: no label of its making
		}
		m.toolCalls.add(1, server, outcome)
	}
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// family is one metric family as written: samples are lines without the
// family's name (a suffix, labels, a value).
type family struct {
	name, help, typ string
	samples         []string
}

func (f *family) add(suffix, labels string, v float64) {
	f.samples = append(f.samples, suffix+labels+" "+strconv.FormatFloat(v, 'g', -1, 64))
}

func (m *metrics) families() []family {
	m.mu.Lock()
	var fams []family
	for _, c := range []*counterVec{&m.executions, &m.byClient, &m.violations, &m.toolCalls, &m.egress} {
		f := family{name: c.name, help: c.help, typ: "counter"}
		for _, k := range slices.Sorted(maps.Keys(c.values)) {
			f.add("", k, c.values[k])
		}
		fams = append(fams, f)
	}
	h := &m.duration
	f := family{name: h.name, help: h.help, typ: "histogram"}
	var n uint64
	for i, c := range h.counts {
		n += c
		le := "+Inf"
		if i < len(h.bounds) {
			le = strconv.FormatFloat(h.bounds[i], 'g', -1, 64)
		}
		f.add("_bucket", `{le="`+le+`"}`, float64(n))
	}
	f.add("_sum", "", h.sum)
	f.add("_count", "", float64(h.count))
	fams = append(fams, f)
	funcs := slices.Clone(m.funcs)
	m.mu.Unlock()

	// The funcs take locks of their own: call them outside m.mu.
	for _, fm := range funcs {
		f := family{name: fm.name, help: fm.help, typ: fm.typ}
		if fm.by == nil {
			f.add("", "", fm.f())
		} else {
			values := fm.by()
			for _, k := range slices.Sorted(maps.Keys(values)) {
				f.add("", "{"+fm.label+`="`+labelEscaper.Replace(k)+`"}`, values[k])
			}
		}
		fams = append(fams, f)
	}
	fams = append(fams, runtimeFamilies()...)
	slices.SortFunc(fams, func(a, b family) int { return strings.Compare(a.name, b.name) })
	return fams
}

// runtimeFamilies are the usual go_ and process_ metrics, read when scraped;
// those whose source is missing (no /proc) are left out.
func runtimeFamilies() []family {
	var fams []family
	one := func(name, typ, help string, v float64) {
		f := family{name: name, help: help, typ: typ}
		f.add("", "", v)
		fams = append(fams, f)
	}
	one("go_goroutines", "gauge", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	// ReadMemStats, not runtime/metrics: that package's init (~0.07 ms, 95
	// allocations) would run in every process of the binary, the jail's own
	// included, before anything of ours; this stops the world for a moment
	// once per scrape instead.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	one("go_memstats_heap_alloc_bytes", "gauge", "Number of heap bytes allocated and currently in use.", float64(ms.HeapAlloc))
	one("go_memstats_sys_bytes", "gauge", "Number of bytes obtained from system.", float64(ms.Sys))
	one("go_sched_gomaxprocs_threads", "gauge", "The current runtime.GOMAXPROCS setting.", float64(runtime.GOMAXPROCS(0)))
	var gc debug.GCStats
	debug.ReadGCStats(&gc)
	fams = append(fams, family{name: "go_gc_duration_seconds", typ: "summary", help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.",
		samples: []string{"_sum " + strconv.FormatFloat(gc.PauseTotal.Seconds(), 'g', -1, 64), "_count " + strconv.FormatInt(gc.NumGC, 10)}})

	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		one("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpu.Seconds())
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		one("process_max_fds", "gauge", "Maximum number of open file descriptors.", float64(lim.Cur))
	}
	if d, err := os.Open("/proc/self/fd"); err == nil {
		names, err := d.Readdirnames(-1)
		_ = d.Close()
		if err == nil {
			one("process_open_fds", "gauge", "Number of open file descriptors.", float64(len(names)-1)) // less the one reading them
		}
	}
	// /proc/self/stat: the fields after the command's closing parenthesis
	// start at the third (state); see proc_pid_stat(5).
	stat, err := os.ReadFile("/proc/self/stat")
	if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 {
		fields := strings.Fields(string(stat[i+1:]))
		field := func(n int) float64 {
			if n-3 >= len(fields) {
				return 0
			}
			v, _ := strconv.ParseFloat(fields[n-3], 64)
			return v
		}
		one("go_threads", "gauge", "Number of OS threads in the process.", field(20))
		one("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", field(23))
		one("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", field(24)*float64(os.Getpagesize()))
		if boot := bootTime(); boot > 0 {
			// The start is in clock ticks since boot; USER_HZ is 100 on Linux.
			one("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", boot+field(22)/100)
		}
	}
	return fams
}

// bootTime is the btime line of /proc/stat, or 0.
func bootTime() float64 {
	b, _ := os.ReadFile("/proc/stat")
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			t, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return t
		}
	}
	return 0
}

func (m *metrics) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var b bytes.Buffer
		for _, f := range m.families() {
			if len(f.samples) == 0 {
				continue // as a label set that never happened: no family
			}
			b.WriteString("# HELP " + f.name + " " + helpEscaper.Replace(f.help) + "\n# TYPE " + f.name + " " + f.typ + "\n")
			for _, s := range f.samples {
				b.WriteString(f.name + s + "\n")
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(b.Bytes())
	})
}
