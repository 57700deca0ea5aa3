package main

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/lang/js"
)

// heavyInits are packages whose inits an early hook must come before: the
// engine, the network stack, the MCP SDK, Prometheus' client, YAML, D-Bus,
// and runtime/metrics, whose init is early (it needs only the runtime) and
// not free: 0.07 ms and 95 allocations in every process, for /metrics'
// sake. Each ends in a space or a slash, as inittrace's package names do.
var heavyInits = []string{"github.com/evanw/esbuild/", "modernc.org/libc ", "gvisor.dev/gvisor/pkg/tcpip ",
	"github.com/prometheus/", "go.yaml.in/yaml/v3 ", "github.com/modelcontextprotocol/go-sdk/mcp ",
	"github.com/cruciblehq/crucible/lang/js ", "github.com/cruciblehq/crucible/config ", "github.com/godbus/dbus/v5 ",
	"runtime/metrics "}

// The jail's children run from the init of package jail/internal/child,
// which must come before the heavy packages' inits in this binary: each
// child would otherwise pay for them (about 400 page faults and 1-4 ms per
// process). Go orders inits by import path among the packages whose imports
// are ready, so one new import in package child can quietly undo this.
func TestChildHookRunsEarly(t *testing.T) {
	cmd := &exec.Cmd{Path: os.Args[0], Args: []string{"crucible-jail-probe"}, Env: []string{"GODEBUG=inittrace=1"}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the probe: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "init os @") {
		t.Fatalf("no init trace:\n%s", out)
	}
	for _, heavy := range heavyInits {
		if strings.Contains(string(out), "init "+heavy) {
			t.Errorf("%s initialized before the jail's child ran", strings.TrimSpace(heavy))
		}
	}
}

// The engine's worker runs from the init of package lang/js/worker, as soon
// as the packages it imports have initialized, and before the packages of
// this binary it does not need that sort after it: each TypeScript or
// JavaScript execution would otherwise pay for them. Those that sort before
// the engine's last dependencies (gVisor's stack, YAML) initialize first
// all the same; the ones checked here are those that would come after, and
// one new import in the engine can bring them before. Without arguments the
// worker stops at once (exit 2), so the trace ends where the worker began.
func TestWorkerHookRunsEarly(t *testing.T) {
	cmd := &exec.Cmd{Path: os.Args[0], Args: []string{js.Worker}, Env: []string{"GODEBUG=inittrace=1"}}
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "crucible-js: bad arguments") {
		t.Fatalf("the worker without arguments: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "init github.com/cruciblehq/crucible/lang/js/engine @") {
		t.Fatalf("no init trace, or the engine did not initialize:\n%s", out)
	}
	for _, heavy := range []string{"github.com/prometheus/client_golang/prometheus ", "github.com/modelcontextprotocol/go-sdk/mcp ",
		"github.com/cruciblehq/crucible/toolbridge ", "github.com/cruciblehq/crucible/egress ", "github.com/cruciblehq/crucible/sandbox "} {
		if strings.Contains(string(out), "init "+heavy) {
			t.Errorf("%s initialized before the worker ran", strings.TrimSpace(heavy))
		}
	}
}

// A user's crucible enters its user namespace from the init of package
// internal/asuser, and the process that did then only waits for the copy:
// it must not pay for the heavy packages' inits first, or each cold
// command as a user costs a second whole start of this binary (about 550
// page faults and 8 ms here). Its init does nothing as root or for this
// test binary's arguments, but its place in the order is the same.
func TestAsUserHookRunsEarly(t *testing.T) {
	cmd := &exec.Cmd{Path: os.Args[0], Args: []string{os.Args[0], "-test.run=^$"}, Env: []string{"GODEBUG=inittrace=1"}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the test binary, running no test: %v\n%s", err, out)
	}
	trace := string(out)
	hook := strings.Index(trace, "init github.com/cruciblehq/crucible/internal/asuser @")
	if hook < 0 {
		t.Fatalf("no init of package asuser in the trace:\n%s", out)
	}
	// And package jail, and path/filepath, whose late inits would make it
	// wait for dozens more.
	for _, heavy := range slices.Concat(heavyInits, []string{"github.com/cruciblehq/crucible/jail ", "path/filepath "}) {
		if i := strings.Index(trace, "init "+heavy); i >= 0 && i < hook {
			t.Errorf("%s initialized before package asuser's init", strings.TrimSpace(heavy))
		}
	}
}
