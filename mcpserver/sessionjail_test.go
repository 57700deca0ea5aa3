package mcpserver

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// After a session's execution, a jail with the session's workspace is
// readied for its next program, and /metrics says so: one session holding
// one, ready (what an operator, and bench/serve, wait for). The session's
// next execution then runs in its workspace.
func TestSessionJailMetrics(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	s := newServer(t, nil)
	gauge := func(fams map[string]*dto.MetricFamily, name string) float64 {
		f := fams[name]
		if f == nil || len(f.Metric) != 1 {
			t.Fatalf("/metrics has no %s", name)
		}
		return f.Metric[0].GetGauge().GetValue()
	}
	fams, _ := scrape(t, s.OpsHandler())
	if held, ready := gauge(fams, "crucible_session_jails"), gauge(fams, "crucible_session_jails_ready"); held != 0 || ready != 0 {
		t.Fatalf("before any execution: %v held, %v ready", held, ready)
	}
	cs := connect(t, s)
	if _, out := execute(t, cs, map[string]any{"code": "return 1"}); out == nil || string(out.Result) != "1" {
		t.Fatalf("first execution: %+v", out)
	}
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		fams, _ := scrape(t, s.OpsHandler())
		held, ready := gauge(fams, "crucible_session_jails"), gauge(fams, "crucible_session_jails_ready")
		if held == 1 && ready == 1 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("after the session's execution: %v held, %v ready; want 1 and 1", held, ready)
		}
	}
	if _, out := execute(t, cs, map[string]any{"code": "return 2"}); out == nil || string(out.Result) != "2" {
		t.Fatalf("second execution: %+v", out)
	}
}
