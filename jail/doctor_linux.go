package jail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/jail/internal/child"
	"github.com/cruciblehq/crucible/owncgroup"
	"github.com/cruciblehq/crucible/userns"
	"golang.org/x/sys/unix"
)

// Diagnose checks each kernel feature the jail needs, then builds one real
// jail, so that "ok" everywhere means executions will work.
func Diagnose(ctx context.Context) []Check {
	runtime := containerRuntime()
	who := privileges()
	if runtime != "" {
		who.Detail += "; in a " + runtime + " container"
	}
	cs := []Check{who, namespacesCheck(runtime)}
	if c, ok := readAppArmor().check(); ok {
		cs = append(cs, c)
	}
	cs = append(cs, mountCheck(runtime), procCheck(runtime, procCovered()), seccompCheck(), notifyCheck(),
		landlockCheck(), cgroupCheck(), tunCheck(runtime))
	var degraded []string
	for _, c := range cs {
		if c.Status != StatusOK && c.Degradable != "" {
			degraded = append(degraded, c.Degradable)
		}
	}
	return append(cs, jailCheck(ctx, degraded))
}

func namespacesCheck(runtime string) Check {
	ns := Check{Feature: "user namespaces", Required: true}
	if err := probeNamespaces(); err != nil {
		ns.Status, ns.Detail = StatusMissing, err.Error()+"; "+usernsSysctls()
		ns.Fix = usernsFix
		if fix := runtimeFix(runtime, blockedSyscalls); fix != "" {
			ns.Fix = fix
		}
	} else {
		ns.Status, ns.Detail = StatusOK, "user, pid, mount, net, ipc, uts and cgroup namespaces can be created"
	}
	return ns
}

func mountCheck(runtime string) Check {
	mnt := Check{Feature: "mount API", Required: true, Status: StatusOK, Detail: "open_tree, move_mount, mount_setattr, pivot_root"}
	if fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLOEXEC); err != nil {
		mnt.Status, mnt.Detail, mnt.Fix = StatusMissing, "open_tree: "+err.Error(), mountAPIFix(err, runtime)
	} else {
		unix.Close(fd)
	}
	return mnt
}

func seccompCheck() Check {
	sc := Check{Feature: "seccomp filter", Required: true, Status: StatusOK, Detail: "seccomp-bpf available"}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		sc.Status, sc.Detail, sc.Fix = StatusMissing, "prctl(PR_GET_SECCOMP): "+err.Error(), child.Fix("seccomp")
	}
	return sc
}

func notifyCheck() Check {
	notify := Check{Feature: "seccomp user notification", Required: true, Degradable: LayerSeccompNotify, Status: StatusOK,
		Detail: "denied syscalls are reported as violations"}
	if b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail"); err != nil || !bytes.Contains(b, []byte("user_notif")) {
		notify.Status, notify.Detail, notify.Fix = StatusMissing, "the kernel lacks SECCOMP_RET_USER_NOTIF", child.Fix(LayerSeccompNotify)
	}
	return notify
}

func landlockCheck() Check {
	ll := Check{Feature: "Landlock", Required: true, Degradable: LayerLandlock}
	if abi := child.LandlockABI(); abi > 0 {
		ll.Status, ll.Detail = StatusOK, fmt.Sprintf("ABI %d", abi)
		if abi < 6 {
			ll.Detail += " (signal and abstract-socket scoping need ABI 6)"
		}
	} else {
		ll.Status, ll.Detail, ll.Fix = StatusMissing, "not enabled in this kernel", child.Fix(LayerLandlock)
	}
	return ll
}

// cgroupCheck makes, and removes, a cgroup as a jail's.
func cgroupCheck() Check {
	cg := Check{Feature: "cgroups", Required: true, Degradable: LayerCgroup}
	if p, err := cgroupParents(); err != nil {
		cg.Status, cg.Detail, cg.Fix = StatusMissing, err.Error(), probeCgroupHost().fix()
	} else if c, err := newCgroup(cgroupLimits{Memory: 64 << 20, Pids: 16, CPUs: 1}); err != nil {
		cg.Status, cg.Detail, cg.Fix = StatusMissing, err.Error(), probeCgroupHost().fix()
	} else {
		c.destroy()
		cg.Status, cg.Detail = StatusOK, "cgroup v1: memory, pids, cpu"
		if p.v2 {
			cg.Detail = "cgroup v2: memory, pids, cpu"
			if scope := filepath.Base(p.dirs[0]); owncgroup.Delegated(p.dirs[0]) && strings.HasSuffix(scope, ".scope") {
				cg.Detail += ", in " + scope + ", which your systemd delegates"
			}
		}
	}
	return cg
}

func tunCheck(runtime string) Check {
	tun := Check{Feature: "network (tun)", Status: StatusOK}
	const need = " (only needed for network rules: network.allow, --allow-net)"
	if fi, err := os.Stat("/dev/net/tun"); err != nil {
		tun.Status, tun.Detail, tun.Fix = StatusMissing, "/dev/net/tun is absent", "modprobe tun"+need
		if fix := runtimeFix(runtime, blockedTun); fix != "" {
			tun.Fix = fix + need
		}
	} else {
		tun.Detail = fmt.Sprintf("/dev/net/tun present, mode %04o", fi.Mode().Perm())
		if !jailIDs().privileged {
			tun.Status, tun.Fix = StatusMissing, ownNamespaceFix()+need
		} else if fix := tunFix(); fix != "" {
			tun.Status, tun.Fix = StatusMissing, fix+need
		}
	}
	return tun
}

// jailCheck builds a real jail, without the layers in degraded (which
// the checks before found missing and may be), and runs a shell in it.
func jailCheck(ctx context.Context, degraded []string) Check {
	run := Check{Feature: "jail", Required: true}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
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
	return run
}

// privileges says as whom crucible runs, and so as whom its jails do.
func privileges() Check {
	c := Check{Feature: "privileges", Status: StatusOK}
	ids, mode := jailIDs(), userns.Current()
	uid := userns.HostUID()
	switch {
	case mode.Entered:
		c.Detail = fmt.Sprintf("running as uid %d, as root of a user namespace of its own", uid)
		if ids.single() {
			c.Detail += " that maps your id alone (" + mode.Why + "): a jail's command runs as you, with your groups"
			c.Fix = "for jails with ids of their own: as root, install newuidmap (package uidmap) and give the user a range: usermod --add-subuids 100000-165535 --add-subgids 100000-165535 USER"
		} else {
			uids, _, _ := userns.Own()
			root, _ := uids.Outside(uint32(ids.base))
			cmd, _ := uids.Outside(uint32(ids.base + SandboxUID))
			c.Detail += fmt.Sprintf(": a jail's root and command are host uids %d and %d, from /etc/subuid", root, cmd)
		}
	case os.Geteuid() == 0:
		c.Detail = "running as root: the jail maps to unprivileged host ids"
	default:
		c.Status, c.Fix = StatusMissing, ownNamespaceFix()
		c.Detail = fmt.Sprintf("running as uid %d, without a user namespace of its own (%s): crucible serve cannot execute, and exec and run have no network", uid, mode.Why)
	}
	return c
}

// tunFix is the remedy for a /dev/net/tun that this process cannot open,
// or "" if it can, or if it is absent (doctor's business).
func tunFix() string {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return ""
	}
	if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
		return ""
	}
	if fi, err := os.Stat("/dev/net/tun"); err == nil && fi.Mode().Perm()&0o006 != 0o006 {
		// Root of a user namespace of our own is not root of the
		// device, which belongs to the host's: only its mode lets us in.
		return fmt.Sprintf("/dev/net/tun is mode %04o: as root, chmod 0666 /dev/net/tun (the mode udev gives it: a tun device a user makes belongs to that user's own namespaces)", fi.Mode().Perm())
	}
	if rt := containerRuntime(); rt != "" {
		return runtimeFix(rt, blockedTun)
	}
	return ""
}

// usernsFix is the remedy for user namespaces that cannot be made.
const usernsFix = "sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1; on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for crucible); or run as root"

// ownNamespaceFix is the remedy for a crucible, started by a user, that
// could not become root of a user namespace of its own.
func ownNamespaceFix() string {
	return "let crucible make a user namespace of its own (crucible doctor says why it could not: " + usernsFix + ")"
}

func probeNamespaces() error {
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{argProbe}, Env: childEnv,
		SysProcAttr: namespaceAttr(jailIDs())}
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

// cgroupHost is what the remedy for missing cgroups depends on: who runs
// crucible, and where the memory, pids and cpu controllers are.
type cgroupHost struct {
	uid       int      // effective; 0 is root
	v2        []string // the controllers this process's cgroup v2 offers
	v2Unified bool     // /sys/fs/cgroup itself is cgroup v2: there is no v1
	v1        []string // ours mounted as cgroup v1 under /sys/fs/cgroup
	readOnly  bool     // the hierarchy kind picks is mounted read-only (cgroupReadOnly)
	runtime   string   // the container's runtime, if any (containerRuntime)
	scopeWhy  string   // why asking systemd for a scope failed, or "" (owncgroup.ScopeWhy)
}

// cgroupKind is where the controllers are, in the order findCgroupParents
// looks for them.
type cgroupKind int

const (
	cgroupNone   cgroupKind = iota // neither v2 nor v1 has them all
	cgroupV2                       // this process's cgroup v2 offers them all
	cgroupV1                       // each is mounted as cgroup v1
	cgroupV2Bare                   // v2 only, and this process's cgroup lacks some
)

func (h cgroupHost) kind() cgroupKind {
	switch {
	case owncgroup.HasAll(h.v2, owncgroup.Controllers):
		return cgroupV2
	case owncgroup.HasAll(h.v1, owncgroup.Controllers):
		// Also a hybrid host's: its v2 hierarchy has no controllers, which
		// are all v1's, so systemd's v2 delegation cannot help there.
		return cgroupV1
	case h.v2Unified:
		return cgroupV2Bare
	}
	return cgroupNone
}

// cgroupFixes are the remedies for missing cgroups, by where the
// controllers are: as root, and as another user, whose uid stands for
// {uid}. None offers --allow-degraded: doctor adds that, once.
var cgroupFixes = map[cgroupKind]struct{ root, user string }{
	cgroupNone: {
		root: "mount the memory, pids and cpu controllers (cgroup v2 at /sys/fs/cgroup, or each as cgroup v1 under it)",
		user: "have root mount the memory, pids and cpu controllers (cgroup v2 at /sys/fs/cgroup, or each as cgroup v1 under it), then run crucible doctor again",
	},
	cgroupV2: {
		root: "make this process's cgroup v2 writable (in a container: give it a cgroup namespace of its own, mounted read-write)",
		user: "run crucible as root, or under your systemd user manager (log in, or as root: loginctl enable-linger {uid}), which crucible asks for a delegated scope itself, or start it in a cgroup delegated to you: systemd-run --user --scope -p Delegate=yes crucible ...",
	},
	cgroupV2Bare: {
		root: "enable memory, pids and cpu for crucible's cgroup: add them to the cgroup.subtree_control of each cgroup above it, from /sys/fs/cgroup down",
		user: "run crucible as root, or have systemd delegate memory, pids and cpu to you (as root: systemctl edit user@.service, add [Service] Delegate=memory pids cpu, then log in again); crucible then asks your systemd for a delegated scope itself",
	},
	cgroupV1: {
		root: "make the cgroup v1 hierarchies of memory, pids and cpu under /sys/fs/cgroup writable (in a container: mount them read-write)",
		user: "run crucible as root, or, as root, give uid {uid} a cgroup of its own in each v1 controller: " +
			"for c in memory pids cpu; do mkdir -p /sys/fs/cgroup/$c/crucible-{uid} && chown -R {uid} /sys/fs/cgroup/$c/crucible-{uid}; done; " +
			"then, as uid {uid}, start crucible from a shell moved into them: for c in memory pids cpu; do echo $$ > /sys/fs/cgroup/$c/crucible-{uid}/cgroup.procs; done",
	},
}

// fix is the remedy for missing cgroups on h.
func (h cgroupHost) fix() string {
	f := cgroupFixes[h.kind()]
	// No host's fix (mkdir, chown, systemd) reaches a read-only mount,
	// whoever crucible runs as: a container's runtime says how to have it
	// read-write. A read-write one that we may not write, in a container
	// or not, wants a subtree delegated to us, below.
	if h.readOnly && h.kind() != cgroupNone {
		if fix := runtimeFix(h.runtime, blockedCgroup); fix != "" {
			return fix
		}
		return "the cgroup filesystem is mounted read-only here: have it mounted read-write, then run crucible doctor again"
	}
	if h.uid == 0 {
		return f.root
	}
	fix := strings.ReplaceAll(f.user, "{uid}", strconv.Itoa(h.uid))
	if h.scopeWhy != "" {
		fix = h.scopeWhy + "; " + fix
	}
	return fix
}

// probeCgroupHost describes this host's cgroups as findCgroupParents sees
// them, whether or not this process may write to them.
func probeCgroupHost() cgroupHost {
	_, unified := owncgroup.Mount(owncgroup.Root)
	h := cgroupHost{uid: userns.HostUID(), v2Unified: unified, runtime: containerRuntime(), scopeWhy: owncgroup.ScopeWhy()}
	own, _ := owncgroup.Paths()
	if p, ok := own[""]; ok {
		for _, mnt := range []string{owncgroup.Root, owncgroup.Root + "/unified"} {
			if _, v2 := owncgroup.Mount(mnt); v2 {
				b, _ := os.ReadFile(filepath.Join(mnt, p, "cgroup.controllers"))
				h.v2 = strings.Fields(string(b))
				break
			}
		}
	}
	for _, c := range owncgroup.Controllers {
		if v1, _ := owncgroup.Mount(filepath.Join(owncgroup.Root, c)); v1 && own[c] != "" {
			h.v1 = append(h.v1, c)
		}
	}
	// thread-self: this thread's mount namespace, which every thread of
	// ours shares but for one that a test moved into one of its own.
	b, _ := os.ReadFile("/proc/thread-self/mountinfo")
	h.readOnly = cgroupReadOnly(string(b), h.kind())
	return h
}

// cgroupReadOnly reports whether mountinfo (the text of
// /proc/self/mountinfo) has the hierarchy that kind puts the jails in
// mounted read-only, by the mount's own options or its superblock's: v2 at
// /sys/fs/cgroup or /sys/fs/cgroup/unified, or any of memory, pids and cpu
// as v1 under /sys/fs/cgroup. A container's runtime mounts them so; a
// marker such as /.dockerenv says nothing of it.
func cgroupReadOnly(mountinfo string, kind cgroupKind) bool {
	ro := map[string]bool{} // by controller, "" for v2: the last mount's, which is on top
	for line := range strings.Lines(mountinfo) {
		// ID parent major:minor root mountpoint options [optional...] - fstype source superoptions
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		sep := 6 + slices.Index(f[6:], "-") // past the root and mount point, which may be "-"
		if sep < 6 || len(f) < sep+4 {
			continue
		}
		dir, fstype, super := f[4], f[sep+1], strings.Split(f[sep+3], ",")
		readOnly := slices.Contains(strings.Split(f[5], ","), "ro") || slices.Contains(super, "ro")
		switch {
		case fstype == "cgroup2" && (dir == owncgroup.Root || dir == owncgroup.Root+"/unified"):
			ro[""] = readOnly
		case fstype == "cgroup" && strings.HasPrefix(dir, owncgroup.Root+"/"):
			for _, c := range owncgroup.Controllers {
				if slices.Contains(super, c) {
					ro[c] = readOnly
				}
			}
		}
	}
	switch kind {
	case cgroupV2, cgroupV2Bare:
		return ro[""]
	case cgroupV1:
		return slices.ContainsFunc(owncgroup.Controllers, func(c string) bool { return ro[c] })
	}
	return false
}
