package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/cli"
)

// doctor as a normal user (nobody, who has no cgroup of its own) says
// plainly that serve, run and exec cannot execute anything, gives the
// cgroup fix once, and one that fits the host: where memory is a cgroup v1
// controller, systemd's v2 delegation cannot help.
func TestDoctorAsUser(t *testing.T) {
	requireRoot(t) // to become nobody
	bin := publicCrucible(t)
	code, out, errs := runAs(t, bin, nobody, "doctor")
	if code != cli.ExitFail {
		t.Fatalf("doctor as nobody: exit %d, want 1\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "crucible serve, run and exec cannot execute anything as uid 65534") ||
		!strings.Contains(out, "as root of a user namespace of its own") {
		t.Errorf("doctor as nobody does not say that nothing can execute:\n%s", out)
	}
	if n := strings.Count(out, "cgroups: "); n != 1 {
		t.Errorf("the cgroup fix is given %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "--allow-degraded cgroup"); n != 1 {
		t.Errorf("--allow-degraded cgroup is proposed %d times, want once:\n%s", n, out)
	}
	if memoryOnV1() && strings.Contains(out, "Delegate=") {
		t.Errorf("the memory controller is on cgroup v1, yet doctor proposes v2 delegation:\n%s", out)
	}
	// Read-write hierarchies, in a container (this one may have a
	// /.dockerenv) or not: the fix is a cgroup delegated to the user,
	// not a runtime's setting for read-only ones.
	_, fix, _ := strings.Cut(out, "\ncgroups: ")
	fix, _, _ = strings.Cut(fix, "\n")
	if !cgroupReadOnly() && (strings.Contains(fix, "read-only") || !strings.Contains(fix, "chown") && !strings.Contains(fix, "delegate")) {
		t.Errorf("the cgroup hierarchies are read-write, yet doctor does not give a cgroup delegated to nobody:\n%s", out)
	}
}

// cgroupReadOnly reports whether a cgroup hierarchy is mounted read-only.
func cgroupReadOnly() bool {
	b, _ := os.ReadFile("/proc/self/mounts")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasPrefix(f[2], "cgroup") && strings.HasPrefix(f[3]+",", "ro,") {
			return true
		}
	}
	return false
}

// memoryOnV1 reports whether the memory controller is mounted as cgroup v1:
// a controller is in one hierarchy only, so v2 cannot then have it.
func memoryOnV1() bool {
	b, _ := os.ReadFile("/proc/self/mounts")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[2] == "cgroup" && strings.Contains(","+f[3]+",", ",memory,") {
			return true
		}
	}
	return false
}
