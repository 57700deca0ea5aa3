package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// These are the commands' own tests: their flags, usage, config search and
// refusals, and what exec and run make of a jail's outcome. The suites that
// drive the whole binary (attacks, real clients, containers, rootless,
// packages) are in package e2e.
func TestMain(m *testing.M) {
	// The tester's own crucible.yaml (CRUCIBLE_CONFIG, ~/.config) is no
	// test's: each test that wants one names it, or sets these itself.
	_ = os.Setenv("XDG_CONFIG_HOME", "/nonexistent")
	_ = os.Unsetenv("CRUCIBLE_CONFIG")
	os.Exit(m.Run())
}

// requireRoot skips tests that build real jails unless running as root, the
// way CI runs them (where it fails instead).
func requireRoot(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
}

// run runs the crucible CLI in process and returns its exit code and output.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// jsonRun runs the CLI, whose args ask for --json, and decodes the result.
// It stops the test at once, with the reason, when the jail could not be set
// up.
func jsonRun(t *testing.T, stdin string, args ...string) *sandbox.Result {
	t.Helper()
	code, out, errs := run(t, stdin, args...)
	if code == sandbox.ExitSetup {
		t.Fatalf("%q: the jail was not set up:\n%s\n%s", args, out, errs)
	}
	var r sandbox.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%q: exit %d, no JSON result: %v\nstdout: %s\nstderr: %s", args, code, err, out, errs)
	}
	if code != r.ExitCode {
		t.Errorf("crucible exited %d, the result says %d", code, r.ExitCode)
	}
	return &r
}
