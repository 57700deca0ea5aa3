package jail

import (
	"bytes"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// containerRuntime names the container this process runs in, as far as
// the usual marks tell ("docker", "podman", "kubernetes", or the value of
// init's container= variable: "lxc", ...); "" when none shows. A
// container's runtime blocks what a jail needs in ways of its own, with
// fixes of its own.
func containerRuntime() string {
	switch {
	case exists("/.dockerenv"):
		return "docker"
	case exists("/run/.containerenv"):
		return "podman"
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		return "kubernetes"
	}
	if b, err := os.ReadFile("/proc/1/environ"); err == nil {
		for kv := range bytes.SplitSeq(b, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("container=")); ok && len(v) > 0 {
				return string(v)
			}
		}
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// What a container's runtime may block, for runtimeFix.
const (
	blockedSyscalls = "syscalls" // unshare, mount, open_tree: a seccomp or AppArmor profile, or no CAP_SYS_ADMIN
	blockedTun      = "tun"      // no /dev/net/tun in the container
)

// runtimeFix is how the runtime named lets the container do what blocked
// is, or "" for a runtime this does not know.
func runtimeFix(runtime, blocked string) string {
	switch {
	case blocked == blockedSyscalls && (runtime == "docker" || runtime == "podman"):
		return "the container's runtime refuses them: run it with --security-opt seccomp=unconfined --security-opt apparmor=unconfined --cap-add SYS_ADMIN (its default profiles refuse unshare, mount and open_tree), or --privileged"
	case blocked == blockedSyscalls && runtime == "kubernetes":
		return "the pod's runtime refuses them: give the container securityContext: {seccompProfile: {type: Unconfined}, appArmorProfile: {type: Unconfined}, capabilities: {add: [SYS_ADMIN]}}, or privileged: true"
	case blocked == blockedTun && (runtime == "docker" || runtime == "podman"):
		return "run the container with --device /dev/net/tun"
	case blocked == blockedTun && runtime == "kubernetes":
		return "mount the host's /dev/net/tun into the container (a hostPath volume of type CharDevice)"
	}
	return ""
}

// mountAPIFix is the fix for open_tree failing with err, in runtime ("":
// not in a container): an old kernel lacks the call, a container's runtime
// refuses it.
func mountAPIFix(err error, runtime string) string {
	if errors.Is(err, unix.ENOSYS) {
		return "use Linux 5.12 or later"
	}
	if fix := runtimeFix(runtime, blockedSyscalls); fix != "" {
		return fix
	}
	if runtime != "" {
		return "the " + runtime + " container refuses open_tree: allow it in the container's seccomp profile, and give it CAP_SYS_ADMIN"
	}
	return "a seccomp or LSM policy refuses open_tree to crucible: allow it"
}
