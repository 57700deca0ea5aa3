package jail

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

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
	blockedProc     = "proc"     // paths of /proc covered, so that no user namespace may mount a procfs
	blockedCgroup   = "cgroup"   // the cgroup filesystem mounted read-only
)

// dockerSettings are the docker run (and podman run) settings under which
// a jail can be built in the container: its default seccomp and AppArmor
// profiles refuse unshare, mount and open_tree, CAP_SYS_ADMIN is needed to
// mount, and the paths it covers in /proc forbid a procfs of the jail's.
const dockerSettings = "--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined --cap-add SYS_ADMIN"

// runtimeFix is how the runtime named lets the container do what blocked
// is, or "" for a runtime this does not know.
func runtimeFix(runtime, blocked string) string {
	switch {
	case (blocked == blockedSyscalls || blocked == blockedProc) && (runtime == "docker" || runtime == "podman"):
		return "the container's runtime refuses them: run it with " + dockerSettings + " (its default profiles refuse unshare, mount and open_tree, and it covers paths of /proc), or --privileged"
	case blocked == blockedSyscalls && runtime == "kubernetes":
		return "the pod's runtime refuses them: give the container securityContext: {seccompProfile: {type: Unconfined}, appArmorProfile: {type: Unconfined}, capabilities: {add: [SYS_ADMIN]}, procMount: Unmasked}, or privileged: true"
	case blocked == blockedProc && runtime == "kubernetes":
		return "give the container securityContext: {procMount: Unmasked} (with hostUsers: false), or privileged: true"
	case blocked == blockedCgroup && (runtime == "docker" || runtime == "podman"):
		return "the runtime mounts the cgroup filesystem read-only: run the container with --privileged"
	case blocked == blockedCgroup && runtime == "kubernetes":
		return "the runtime mounts the cgroup filesystem read-only: where it offers a writable one, ask for it (containerd: cgroup_writable = true in the runtime's options; CRI-O: the annotation io.kubernetes.cri-o.cgroup2-mount-hierarchy-rw), else make the container privileged: true"
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

// procCovered lists the mount points below /proc in our mount namespace: a
// container's runtime covers paths there (/proc/kcore, /proc/sys, ...), and
// the kernel then lets no user namespace mount a procfs of its own, which
// every jail does.
func procCovered() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var covered []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], "/proc/") {
			covered = append(covered, f[4])
		}
	}
	return covered
}

// procCheck is doctor's /proc row.
func procCheck(runtime string, covered []string) Check {
	c := Check{Feature: "procfs", Required: true, Status: StatusOK, Detail: "no path of /proc is covered: a jail can mount a /proc of its own"}
	if len(covered) == 0 {
		return c
	}
	shown := covered
	if len(shown) > 4 {
		shown = append(shown[:4:4], "...")
	}
	c.Status = StatusMissing
	c.Detail = fmt.Sprintf("%d paths of /proc are covered (%s): the kernel lets no user namespace mount a procfs then", len(covered), strings.Join(shown, ", "))
	c.Fix = runtimeFix(runtime, blockedProc)
	if c.Fix == "" {
		c.Fix = "unmount what covers paths of /proc in crucible's mount namespace"
	}
	return c
}
