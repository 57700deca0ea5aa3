package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

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
	for _, heavy := range []string{"github.com/evanw/esbuild/", "modernc.org/libc ", "gvisor.dev/gvisor/pkg/tcpip ",
		"github.com/prometheus/", "gopkg.in/yaml", "github.com/modelcontextprotocol/go-sdk/mcp ",
		"github.com/cruciblehq/crucible/lang/js ", "github.com/cruciblehq/crucible/config "} {
		if strings.Contains(string(out), "init "+heavy) {
			t.Errorf("%s initialized before the jail's child ran", strings.TrimSpace(heavy))
		}
	}
}
