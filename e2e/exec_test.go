package e2e

import (
	"strings"
	"testing"
)

// The command that exec runs is the jail's user (1000), with no capability,
// no new privileges, seccomp on, and an environment of the jail's own.
func TestExecIdentity(t *testing.T) {
	requireRoot(t)
	r := jailSh(t, `id -u; id -g; hostname; cat /proc/self/status | grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)|^NoNewPrivs|^Seccomp:'; env | sort`)
	want := []string{"1000\n1000\nsandbox\n", "CapInh:\t0000000000000000", "CapPrm:\t0000000000000000",
		"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000",
		"NoNewPrivs:\t1", "Seccomp:\t2", "HOME=/workspace", "PATH=/usr/local/bin"}
	for _, w := range want {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("missing %q in:\n%s\nstderr: %s", w, r.Stdout, r.Stderr)
		}
	}
}
