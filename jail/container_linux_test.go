package jail

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// doctor's fix for a mount API that fails says what fails it: an old
// kernel (ENOSYS), a container's runtime by its own settings, or a policy
// on the host; never "a newer kernel" for a refusal.
func TestMountAPIFix(t *testing.T) {
	for _, c := range []struct {
		err           error
		runtime, want string
	}{
		{unix.ENOSYS, "", "Linux 5.12"},
		{unix.ENOSYS, "docker", "Linux 5.12"},
		{unix.EPERM, "docker", "--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined --cap-add SYS_ADMIN"},
		{unix.EPERM, "podman", "--security-opt seccomp=unconfined"},
		{unix.EPERM, "kubernetes", "seccompProfile: {type: Unconfined}"},
		{unix.EPERM, "lxc", "the lxc container refuses open_tree"},
		{unix.EPERM, "", "a seccomp or LSM policy refuses open_tree"},
	} {
		if got := mountAPIFix(c.err, c.runtime); !strings.Contains(got, c.want) {
			t.Errorf("%v in %q: fix %q, want it to say %q", c.err, c.runtime, got, c.want)
		}
		if c.err == unix.EPERM && strings.Contains(mountAPIFix(c.err, c.runtime), "Linux 5.12") {
			t.Errorf("EPERM in %q: told to upgrade the kernel", c.runtime)
		}
	}
	if runtimeFix("docker", blockedTun) != "run the container with --device /dev/net/tun" || runtimeFix("", blockedTun) != "" {
		t.Error("tun fixes")
	}
}

// /proc covered by a container's runtime forbids a jail's procfs: doctor
// names the paths and the runtime's setting.
func TestProcCheck(t *testing.T) {
	if c := procCheck("docker", nil); c.Status != StatusOK {
		t.Errorf("nothing covered: %+v", c)
	}
	covered := []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/sys", "/proc/timer_list"}
	for runtime, want := range map[string]string{"docker": "--security-opt systempaths=unconfined", "kubernetes": "procMount: Unmasked", "": "unmount what covers"} {
		c := procCheck(runtime, covered)
		if c.Status != StatusMissing || !c.Required || !strings.Contains(c.Fix, want) || !strings.Contains(c.Detail, "5 paths of /proc are covered (/proc/acpi, /proc/kcore, /proc/keys, /proc/sys, ...)") {
			t.Errorf("%q: %+v", runtime, c)
		}
	}
	// This test's own machine: whatever covers /proc here is listed.
	for _, p := range procCovered() {
		if !strings.HasPrefix(p, "/proc/") {
			t.Errorf("procCovered: %q", p)
		}
	}
}
