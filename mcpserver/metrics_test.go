package mcpserver

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// scrape gets /metrics from h and parses it with Prometheus's own parser,
// checking the content type and that the families come sorted by name.
func scrape(t *testing.T, h http.Handler) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	body := rec.Body.String()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("Prometheus cannot parse /metrics: %v\n%s", err, body)
	}
	var names []string
	for line := range strings.Lines(body) {
		if name, ok := strings.CutPrefix(line, "# HELP "); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	if !slices.IsSorted(names) || len(names) != len(fams) {
		t.Errorf("families out of order or without HELP: %q", names)
	}
	return fams, body
}

// value is the one sample of fam with the given label values (name=value
// pairs), or NaN.
func value(fams map[string]*dto.MetricFamily, fam string, labels ...string) float64 {
	f := fams[fam]
	if f == nil {
		return math.NaN()
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(labels)/2 {
			continue
		}
		for i, l := range m.Label {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				continue next
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.Counter.GetValue()
		case dto.MetricType_GAUGE:
			return m.Gauge.GetValue()
		case dto.MetricType_UNTYPED:
			return m.Untyped.GetValue()
		}
	}
	return math.NaN()
}

// The metrics of a server that ran programs, as Prometheus reads them:
// every family with its type and help, the counts of what ran, a
// histogram whose buckets add up, and the process's own metrics.
func TestMetricsScrape(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	s := newServer(t, nil)
	url := serveHTTP(t, s)
	cs := connect(t, s)
	want := map[string]float64{}
	kinds := map[string]float64{}
	for _, code := range []string{`return 1`, `return 2`, `throw new Error("no")`, "py:import ctypes\nprint(ctypes.CDLL(None).ptrace(16, 1, 0, 0))"} {
		args := map[string]any{"code": code}
		if py, ok := strings.CutPrefix(code, "py:"); ok {
			args = map[string]any{"language": "py", "code": py}
		}
		_, out := execute(t, cs, args)
		if out == nil {
			t.Fatalf("%s: no result", code)
		}
		if out.ExitCode == 0 && out.Error == nil {
			want["ok"]++
		} else {
			want["failed"]++
		}
		for _, v := range out.Violations {
			kinds[v.Kind] += float64(max(v.Count, 1))
		}
	}
	if len(kinds) == 0 {
		t.Error("ptrace was no violation")
	}
	if res, _ := execute(t, cs, map[string]any{"code": " "}); !res.IsError {
		t.Error("empty code ran")
	}
	want["refused"]++

	// Through the server's own handler, as served.
	resp, err := opsGet(t, url, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(served), `crucible_executions_total{outcome="failed"} 1`) {
		t.Errorf("GET /metrics: %d\n%s", resp.StatusCode, served)
	}

	fams, body := scrape(t, s.stats.handler())
	types := map[string]dto.MetricType{
		"crucible_executions_total": dto.MetricType_COUNTER, "crucible_violations_total": dto.MetricType_COUNTER,
		"crucible_execution_duration_seconds": dto.MetricType_HISTOGRAM, "crucible_executions_running": dto.MetricType_GAUGE,
		"crucible_workspaces": dto.MetricType_GAUGE, "go_goroutines": dto.MetricType_GAUGE, "go_threads": dto.MetricType_GAUGE,
		"go_memstats_heap_alloc_bytes": dto.MetricType_GAUGE, "go_memstats_sys_bytes": dto.MetricType_GAUGE,
		"go_sched_gomaxprocs_threads": dto.MetricType_GAUGE, "go_gc_duration_seconds": dto.MetricType_SUMMARY,
		"process_cpu_seconds_total": dto.MetricType_COUNTER, "process_resident_memory_bytes": dto.MetricType_GAUGE,
		"process_virtual_memory_bytes": dto.MetricType_GAUGE, "process_open_fds": dto.MetricType_GAUGE,
		"process_max_fds": dto.MetricType_GAUGE, "process_start_time_seconds": dto.MetricType_GAUGE,
	}
	for name, typ := range types {
		if f := fams[name]; f == nil || f.GetType() != typ || f.GetHelp() == "" {
			t.Errorf("%s: %v, want a %v with help", name, f, typ)
		}
	}
	if h := fams["crucible_executions_total"].GetHelp(); !strings.HasPrefix(h, "Executions by outcome: ok, failed") {
		t.Errorf("help %q", h)
	}
	for outcome, n := range want {
		if got := value(fams, "crucible_executions_total", "outcome", outcome); got != n {
			t.Errorf("executions %s: %v, want %v", outcome, got, n)
		}
	}
	for kind, n := range kinds {
		if got := value(fams, "crucible_violations_total", "kind", kind); got != n {
			t.Errorf("violations %s: %v, want %v", kind, got, n)
		}
	}
	if got := value(fams, "crucible_executions_running"); got != 0 {
		t.Errorf("running %v", got)
	}
	if got := value(fams, "crucible_workspaces"); got != 1 {
		t.Errorf("workspaces %v", got)
	}
	if f := fams["crucible_pool_misses_total"]; f.GetType() != dto.MetricType_COUNTER || len(f.GetMetric()) != 3 {
		t.Errorf("pool misses: %v; want a counter per pooled language: js, py, ts", f)
	}
	for _, l := range []string{"ts", "js", "py"} {
		if got, want := value(fams, "crucible_pool_misses_total", "language", l), s.gens.current().views[""].poolFor(l).Stats().Misses[l]; got != float64(want) {
			t.Errorf("pool misses of %s: %v, want %d", l, got, want)
		}
	}

	h := fams["crucible_execution_duration_seconds"].Metric[0].Histogram
	b := h.GetBucket()
	if h.GetSampleCount() != 5 || h.GetSampleSum() <= 0 || len(b) != 16 || b[0].GetUpperBound() != .002 || b[14].GetUpperBound() != 300 || !math.IsInf(b[15].GetUpperBound(), 1) || b[15].GetCumulativeCount() != 5 {
		t.Errorf("histogram: %v", h)
	}
	for i := 1; i < len(b); i++ {
		if b[i].GetCumulativeCount() < b[i-1].GetCumulativeCount() {
			t.Errorf("buckets not cumulative: %v", b)
		}
	}
	if !strings.Contains(body, `crucible_execution_duration_seconds_bucket{le="+Inf"} 5`+"\n") {
		t.Errorf("no +Inf bucket:\n%s", body)
	}

	now := float64(time.Now().Unix())
	for name, ok := range map[string]func(float64) bool{
		"go_goroutines":                 func(v float64) bool { return v > 1 },
		"go_threads":                    func(v float64) bool { return v >= 1 },
		"go_memstats_heap_alloc_bytes":  func(v float64) bool { return v > 1<<10 },
		"process_cpu_seconds_total":     func(v float64) bool { return v > 0 },
		"process_resident_memory_bytes": func(v float64) bool { return v > 1<<20 },
		"process_open_fds":              func(v float64) bool { return v >= 3 },
		"process_start_time_seconds":    func(v float64) bool { return v <= now+1 && v > now-3600 },
	} {
		if v := value(fams, name); !ok(v) {
			t.Errorf("%s = %v", name, v)
		}
	}
}

// A label value or help text with the format's own characters (a server's
// name comes from the operator's configuration) stays one sample, read
// back as it was; and the metrics may be updated and scraped at once.
func TestMetricsEscaping(t *testing.T) {
	hostile := "a\"} 1\nevil_total 2\n\\n\\\"{x=\"y"
	m := newMetrics([]string{hostile}, []string{"ci"})
	m.gauge("crucible_test_gauge", "Help with a \\ backslash\nand a new line.", func() float64 { return 1.5 })
	out := &executeOut{Violations: []sandbox.Violation{{Kind: hostile, Count: 3}},
		ToolCalls: []sandbox.ToolCall{{Server: hostile, OK: true}, {Server: "minted", OK: false}}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				m.execution("ci", out, nil, 3*time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			rec := httptest.NewRecorder()
			m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		}
	})
	wg.Wait()

	fams, body := scrape(t, m.handler())
	if fams["evil_total"] != nil || strings.Contains(body, "\nevil_total") {
		t.Errorf("a label value wrote a sample of its own:\n%s", body)
	}
	if got := value(fams, "crucible_violations_total", "kind", hostile); got != 3*400 {
		t.Errorf("violations of the hostile kind: %v\n%s", got, body)
	}
	if got := value(fams, "crucible_tool_calls_total", "server", hostile, "outcome", "ok"); got != 400 {
		t.Errorf("tool calls of the hostile server: %v\n%s", got, body)
	}
	if got := value(fams, "crucible_tool_calls_total", "server", "other", "outcome", "error"); got != 400 {
		t.Errorf("tool calls of an unknown server: %v\n%s", got, body)
	}
	if got := fams["crucible_test_gauge"].GetHelp(); got != "Help with a \\ backslash\nand a new line." {
		t.Errorf("help read back as %q", got)
	}
	if got := value(fams, "crucible_executions_total", "outcome", "ok"); got != 400 {
		t.Errorf("executions %v", got)
	}
	h := fams["crucible_execution_duration_seconds"].Metric[0].Histogram
	if h.GetSampleCount() != 400 || math.Abs(h.GetSampleSum()-1.2) > 1e-9 || h.GetBucket()[0].GetCumulativeCount() != 0 || h.GetBucket()[1].GetCumulativeCount() != 400 {
		t.Errorf("histogram: %v", h)
	}
	// The same state, the same text: nothing in it depends on map order.
	if _, again := scrape(t, m.handler()); stripRuntime(again) != stripRuntime(body) {
		t.Errorf("two scrapes differ:\n%s\n---\n%s", body, again)
	}
}

// stripRuntime drops the go_ and process_ lines, which change by themselves.
func stripRuntime(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.Contains(line, " go_") && !strings.Contains(line, " process_") && !strings.HasPrefix(line, "go_") && !strings.HasPrefix(line, "process_") {
			b.WriteString(line)
		}
	}
	return b.String()
}
