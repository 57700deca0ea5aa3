package sandbox

import (
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"golang.org/x/sys/unix"
)

// A result larger than the output limit is cut in the jail; the caller is
// told that, and which limit, not that the channel held broken JSON (which
// reads as a crash). A result under the limit still comes back whole.
func TestResultOverLimit(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	cfg := config.Default()
	cfg.Sandbox.MaxOutput = 64 * config.KiB
	for _, tc := range []struct{ lang, big, small string }{
		{"ts", `return "x".repeat(100 << 10)`, `return "x".repeat(10 << 10)`},
		{"py", "import crucible\ncrucible.result = 'x' * (100 << 10)\n", "import crucible\ncrucible.result = 'x' * (10 << 10)\n"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			if tc.lang == "py" && unix.Access(cfg.Runtimes.Python, unix.X_OK) != nil {
				testenv.Missing(t, "needs python3 at runtimes.python (apt-get install python3)")
			}
			run := func(src string) *Result { return runOneShot(t, cfg, tc.lang, src, Options{}) }
			res := run(tc.big)
			if res.Error == nil || !strings.Contains(res.Error.Message, "sandbox.max_output") || !strings.Contains(res.Error.Message, "64KiB") {
				t.Fatalf("a result over the limit: error %+v, want one naming sandbox.max_output and 64KiB", res.Error)
			}
			if strings.Contains(res.Error.Message, "JSON") || res.Result != nil {
				t.Errorf("a result over the limit: error %q, result %d bytes", res.Error.Message, len(res.Result))
			}
			if !slices.Contains(res.LimitsHit, "output") {
				t.Errorf("limits_hit %v, want output", res.LimitsHit)
			}
			res = run(tc.small)
			if res.Error != nil || len(res.Result) != 10<<10+2 {
				t.Errorf("a result under the limit: error %+v, result %d bytes", res.Error, len(res.Result))
			}
		})
	}
}
