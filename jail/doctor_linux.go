package jail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/jail/internal/child"
	"golang.org/x/sys/unix"
)

// Diagnose checks each kernel feature the jail needs, then builds one real
// jail, so that "ok" everywhere means executions will work.
func Diagnose(ctx context.Context) []Check {
	var cs []Check
	add := func(c Check) { cs = append(cs, c) }

	who := Check{Feature: "privileges", Status: StatusOK, Required: true}
	if os.Geteuid() == 0 {
		who.Detail = "running as root: the jail maps to unprivileged host ids"
	} else {
		who.Detail = fmt.Sprintf("running as uid %d: rootless mode (the jail runs as you)", os.Geteuid())
	}
	add(who)

	userns := Check{Feature: "user namespaces", Required: true}
	if err := probeNamespaces(); err != nil {
		userns.Status, userns.Detail = StatusMissing, err.Error()+"; "+usernsSysctls()
		userns.Fix = "sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1; on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for crucible); or run as root"
	} else {
		userns.Status, userns.Detail = StatusOK, "user, pid, mount, net, ipc, uts and cgroup namespaces can be created"
	}
	add(userns)

	mnt := Check{Feature: "mount API", Required: true, Status: StatusOK, Detail: "open_tree, move_mount, mount_setattr, pivot_root"}
	if fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLOEXEC); err != nil {
		mnt.Status, mnt.Detail, mnt.Fix = StatusMissing, "open_tree: "+err.Error(), "use Linux 5.12 or later"
	} else {
		unix.Close(fd)
	}
	add(mnt)

	sc := Check{Feature: "seccomp filter", Required: true, Status: StatusOK, Detail: "seccomp-bpf available"}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		sc.Status, sc.Detail, sc.Fix = StatusMissing, "prctl(PR_GET_SECCOMP): "+err.Error(), child.Fix("seccomp")
	}
	add(sc)

	notify := Check{Feature: "seccomp user notification", Required: true, Degradable: LayerSeccompNotify, Status: StatusOK,
		Detail: "denied syscalls are reported as violations"}
	if b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail"); err != nil || !bytes.Contains(b, []byte("user_notif")) {
		notify.Status, notify.Detail, notify.Fix = StatusMissing, "the kernel lacks SECCOMP_RET_USER_NOTIF", child.Fix(LayerSeccompNotify)
	}
	add(notify)

	ll := Check{Feature: "Landlock", Required: true, Degradable: LayerLandlock}
	if abi := child.LandlockABI(); abi > 0 {
		ll.Status, ll.Detail = StatusOK, fmt.Sprintf("ABI %d", abi)
		if abi < 6 {
			ll.Detail += " (signal and abstract-socket scoping need ABI 6)"
		}
	} else {
		ll.Status, ll.Detail, ll.Fix = StatusMissing, "not enabled in this kernel", child.Fix(LayerLandlock)
	}
	add(ll)

	cg := Check{Feature: "cgroups", Required: true, Degradable: LayerCgroup}
	if p, err := cgroupParents(); err != nil {
		cg.Status, cg.Detail, cg.Fix = StatusMissing, err.Error(), cgroupFix()
	} else if c, err := newCgroup(cgroupLimits{Memory: 64 << 20, Pids: 16, CPUs: 1}); err != nil {
		cg.Status, cg.Detail, cg.Fix = StatusMissing, err.Error(), cgroupFix()
	} else {
		c.destroy()
		cg.Status, cg.Detail = StatusOK, "cgroup v1: memory, pids, cpu"
		if p.v2 {
			cg.Detail = "cgroup v2: memory, pids, cpu"
		}
	}
	add(cg)

	tun := Check{Feature: "network (tun)", Status: StatusOK}
	const need = " (only needed for network rules: network.allow, --allow-net)"
	if fi, err := os.Stat("/dev/net/tun"); err != nil {
		tun.Status, tun.Detail, tun.Fix = StatusMissing, "/dev/net/tun is absent", "modprobe tun"+need
	} else {
		tun.Detail = fmt.Sprintf("/dev/net/tun present, mode %04o", fi.Mode().Perm())
		if os.Geteuid() != 0 {
			tun.Status, tun.Fix = StatusMissing, "run crucible as root: only root can create a jail's tun device"+need
		}
	}
	add(tun)

	run := Check{Feature: "jail", Required: true}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var degraded []string
	for _, c := range cs {
		if c.Status != StatusOK && c.Degradable != "" {
			degraded = append(degraded, c.Degradable)
		}
	}
	var out bytes.Buffer
	r, err := Run(ctx, &Spec{Args: []string{"/bin/sh", "-c", "echo ok"}, Env: []string{"PATH=/usr/bin:/bin"},
		TmpSize: 1 << 20, WorkspaceSize: 1 << 20, Memory: 64 << 20, Pids: 16, CPUs: 1, MaxOutput: 1 << 10,
		Timeout: 10 * time.Second, Stdout: &out, AllowDegraded: degraded})
	var se *SetupError
	switch {
	case errors.As(err, &se):
		run.Status, run.Detail, run.Fix = StatusMissing, se.Layer+": "+se.Msg, se.Fix
		if se.Detail != "" {
			run.Detail += " (" + se.Detail + ")" // doctor's report is the operator's
		}
	case err != nil:
		run.Status, run.Detail = StatusMissing, err.Error()
	case r.ExitCode != 0 || strings.TrimSpace(out.String()) != "ok":
		run.Status, run.Detail = StatusMissing, fmt.Sprintf("a test command exited %d", r.ExitCode)
	default:
		run.Status, run.Detail = StatusOK, fmt.Sprintf("built a jail and ran /bin/sh in %s", r.Duration.Round(time.Millisecond))
		if len(degraded) > 0 {
			run.Detail += " (without " + strings.Join(degraded, ", ") + ")"
		}
	}
	add(run)
	return cs
}

func probeNamespaces() error {
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{argProbe}, Env: childEnv,
		SysProcAttr: namespaceAttr(os.Geteuid() != 0)}
	if err := cmd.Run(); err != nil {
		var se *SetupError
		errors.As(startError(err), &se)
		return errors.New(se.Msg)
	}
	return nil
}

func usernsSysctls() string {
	var parts []string
	for _, k := range []string{"user/max_user_namespaces", "kernel/unprivileged_userns_clone", "kernel/apparmor_restrict_unprivileged_userns"} {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			parts = append(parts, strings.ReplaceAll(k, "/", ".")+"="+strings.TrimSpace(string(b)))
		}
	}
	return strings.Join(parts, ", ")
}
