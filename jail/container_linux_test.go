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
		{unix.EPERM, "docker", "--security-opt seccomp=unconfined"},
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
