package mcpserver

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg        *prometheus.Registry
	executions *prometheus.CounterVec
	duration   prometheus.Histogram
	violations *prometheus.CounterVec
	toolCalls  *prometheus.CounterVec
	egress     *prometheus.CounterVec
	servers    []string // the configured servers: the only server labels
}

func newMetrics(servers []string) *metrics {
	m := &metrics{
		servers: servers,
		reg:     prometheus.NewRegistry(),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crucible_executions_total",
			Help: "Executions by outcome: ok, failed (the program failed or was stopped), refused (busy, rate limited, bad arguments), error (the sandbox could not run it).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "crucible_execution_duration_seconds",
			Help:    "Time from an execute call's arrival to its answer.",
			Buckets: []float64{.002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		violations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crucible_violations_total",
			Help: "Operations the sandbox refused, by kind.",
		}, []string{"kind"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crucible_tool_calls_total",
			Help: "Tool calls made by programs, by server and outcome (ok, error).",
		}, []string{"server", "outcome"}),
		egress: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crucible_egress_bytes_total",
			Help: "Bytes that programs' network connections carried, by direction: out (sent by the program) and in.",
		}, []string{"direction"}),
	}
	m.reg.MustRegister(m.executions, m.duration, m.violations, m.toolCalls, m.egress,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// gauge registers a gauge read when scraped.
func (m *metrics) gauge(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// counter registers a counter read when scraped.
func (m *metrics) counter(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
}

// execution counts one execute call.
func (m *metrics) execution(out *executeOut, err error, took time.Duration) {
	m.duration.Observe(took.Seconds())
	switch {
	case err != nil:
		outcome := "refused"
		if errors.Is(err, errRun) {
			outcome = "error"
		}
		m.executions.WithLabelValues(outcome).Inc()
		return
	case out.ExitCode != 0 || out.Error != nil:
		m.executions.WithLabelValues("failed").Inc()
	default:
		m.executions.WithLabelValues("ok").Inc()
	}
	for _, v := range out.Violations {
		m.violations.WithLabelValues(v.Kind).Add(float64(max(v.Count, 1)))
	}
	if n := out.Network; n != nil {
		m.egress.WithLabelValues("out").Add(float64(n.BytesOut))
		m.egress.WithLabelValues("in").Add(float64(n.BytesIn))
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
		m.toolCalls.WithLabelValues(server, outcome).Inc()
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
