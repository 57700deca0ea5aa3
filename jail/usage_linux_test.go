package jail

import (
	"context"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// A command that spends at least 2 s of CPU, by its own clock (init takes
// far less, on any machine fit to run jails, even under the race detector):
// init
// reports it, and init's own cost is counted without it: some, and less.
func TestUsage(t *testing.T) {
	testenv.NeedRoot(t, "the jail")
	testenv.NeedTool(t, "python3")
	before := TotalUsage()
	s := spec("python3", "-c", "import time\nwhile time.process_time() < 2: pass")
	s.Timeout = time.Minute
	r, err := Run(context.Background(), s)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	after := TotalUsage()
	initCPU := after.InitCPU - before.InitCPU
	if after.Jails != before.Jails+1 || initCPU <= 0 || initCPU >= 2*time.Second || after.InitFaults == before.InitFaults {
		t.Errorf("init's own: %v of CPU, %d faults, %d jails; want some CPU, below the command's 2s, one jail",
			initCPU, after.InitFaults-before.InitFaults, after.Jails-before.Jails)
	}
}
