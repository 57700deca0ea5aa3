package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/cli"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

func TestMain(m *testing.M) {
	if os.Getenv("CRUCIBLE_TEST_CLI") == "1" {
		// The test binary as the crucible command, as main runs it: for the
		// tests that need it as a separate process (crucible serve's
		// clients, and every test that runs it as another user).
		os.Exit(cli.Main())
	}
	// The tester's own crucible.yaml (CRUCIBLE_CONFIG, ~/.config) is no
	// test's: each test that wants one names it, or sets these itself.
	_ = os.Setenv("XDG_CONFIG_HOME", "/nonexistent")
	_ = os.Unsetenv("CRUCIBLE_CONFIG")
	if _, set := os.LookupEnv("GORACE"); !set {
		k, v, _ := strings.Cut(quickExit, "=")
		_ = os.Setenv(k, v)
	}
	os.Exit(m.Run())
}

// quickExit spares a process built with the race detector the second it
// sleeps before it exits 0. Every crucible these tests start (a server, a
// command run as a user or in a container, the conformance suite's) is a
// copy of this test binary: TestMain puts it in the environment that they
// inherit, and a test that gives one an environment of its own adds it.
// Without it the package took ~17 s longer. The jail's own processes are
// told already (jail.childEnv).
const quickExit = "GORACE=atexit_sleep_ms=0"

// parallel: the tests that call t.Parallel spend most of their time waiting
// (a timeout, a tool server's hang, a connection's idle limit, a client's
// hang-up) or spin one core, and share nothing with another test: each has
// its own directories, servers, ports and marks, and checks only what is
// its own. Go runs them together once every other test of the package is
// done, so that this package, the longest in CI, ends sooner. A test that
// sets the environment (t.Setenv) or checks the whole host (every jail
// cgroup, every process) must not be one of them.

// requireRoot skips tests that build real jails unless running as root, the
// way CI runs them (where it fails instead).
func requireRoot(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
}

// hostWorkspace is a host directory to hand a jail as its workspace: owned by
// an unprivileged user (nobody), since one owned by root is refused, and
// writable by all, since where it cannot be idmapped the command writes as
// host uid 2000001000.
func hostWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.Chown(ws, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	return ws
}

// embeddedYAML pins TypeScript and JavaScript to the embedded engine, for
// the tests of it: the default, auto, is Deno where one is found, as here
// once npm install has put one in node_modules.
const embeddedYAML = "runtimes:\n  engine: embedded\n"

// onEmbedded are the flags of a run on the embedded engine: a
// configuration of embeddedYAML and extra.
func onEmbedded(t *testing.T, extra string) []string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "crucible.yaml")
	if err := os.WriteFile(cfg, []byte(embeddedYAML+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", cfg}
}

// run runs the crucible CLI in process and returns its exit code and output.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Run(context.Background(), args, cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// jsonRun runs the CLI, whose args ask for --json, and decodes the result.
// It stops the test at once, with the reason, when the jail could not be set
// up: an attack that never ran proves nothing.
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

// violated reports whether the result records a denied syscall by name.
func violated(r *sandbox.Result, syscall string) bool {
	for _, v := range r.Violations {
		if v.Kind == "syscall" && v.Syscall == syscall && v.Count > 0 {
			return true
		}
	}
	return false
}

func hasLimit(r *sandbox.Result, l string) bool {
	for _, x := range r.LimitsHit {
		if x == l {
			return true
		}
	}
	return false
}
