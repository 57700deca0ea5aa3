package jail

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A user's jails need a cgroup v2 subtree that the user may write, with
// memory, pids and cpu enabled for it: on a systemd host, systemd's to give
// (Delegate=yes). Started from a terminal or by an app, crucible sits in a
// cgroup that systemd made for something else (a session or an app's
// scope) and that it must not write to. So, as rootless container runtimes
// do, it asks the user's systemd over D-Bus for a transient scope of its
// own, delegated, holding this process, and moves itself into a leaf of it
// (SupervisorCgroup): the processes it starts are born there, and the
// scope's other children are the jails' cgroups (findCgroupParents). This
// file decides whether to ask; package systemdscope asks, so that this
// package needs no D-Bus library.

// envScopeWhy carries to the user namespace's copy of crucible (package
// userns) why the scope could not be had, for the cgroup layer's errors.
const envScopeWhy = "CRUCIBLE_SYSTEMD_SCOPE_WHY"

// scopeWhy is why asking systemd for a scope failed, or "".
var scopeWhy = func() string {
	why := os.Getenv(envScopeWhy)
	_ = os.Unsetenv(envScopeWhy) // the jails' processes never see it
	return why
}()

// scopeHost is what decides whether to ask: this process's ids and
// cgroup, and whether a user manager listens.
type scopeHost struct {
	euid      int
	v2        string   // where cgroup v2 is mounted, or ""
	rootCtl   []string // the controllers at the root of cgroup v2
	delegated bool     // this process's cgroup is delegated to it already (delegatedCgroup)
	manager   string   // the user manager's private socket, or ""
}

// ask reports whether to ask the user's systemd for a scope. Not as root,
// who may write any cgroup; not where cgroup v2 lacks the controllers (a
// hybrid host's are v1's, which no user manager delegates); not when this
// process's cgroup is delegated to it already; and only with a user manager
// to ask.
func (h scopeHost) ask() bool {
	return h.euid != 0 && h.v2 != "" && hasAll(h.rootCtl, cgroupControllers) && !h.delegated && h.manager != ""
}

func probeScopeHost() scopeHost {
	h := scopeHost{euid: os.Geteuid()}
	for _, mnt := range []string{cgroupRoot, cgroupRoot + "/unified"} {
		if _, v2 := cgroupMount(mnt); v2 {
			h.v2 = mnt
			break
		}
	}
	if h.v2 == "" {
		return h
	}
	if b, err := os.ReadFile(filepath.Join(h.v2, "cgroup.controllers")); err == nil {
		h.rootCtl = strings.Fields(string(b))
	}
	own, err := ownCgroups()
	if err != nil {
		return h
	}
	h.delegated = delegatedCgroup(filepath.Join(h.v2, own[""]))
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = "/run/user/" + strconv.Itoa(os.Getuid())
	}
	if fi, err := os.Stat(filepath.Join(dir, "systemd", "private")); err == nil && fi.Mode().Type() == os.ModeSocket {
		h.manager = filepath.Join(dir, "systemd", "private")
	}
	return h
}

// delegatedCgroup reports whether dir is delegated to this process: our
// own leaf, a scope we asked for, or a unit that systemd marked delegated
// (newer versions set a delegate xattr, trusted.* from the system manager,
// user.* from a user's; 252's user manager does not, and crucible then
// asks for a scope of its own beside it).
func delegatedCgroup(dir string) bool {
	base := filepath.Base(dir)
	if base == SupervisorCgroup || (strings.HasPrefix(base, "crucible-") && strings.HasSuffix(base, ".scope")) {
		return true
	}
	return xattrDelegated(dir)
}

// xattrDelegated reports whether systemd marked dir delegated.
func xattrDelegated(dir string) bool {
	for _, attr := range []string{"user.delegate", "trusted.delegate"} {
		b := make([]byte, 8)
		if n, err := unix.Getxattr(dir, attr, b); err == nil && string(b[:n]) == "1" {
			return true
		}
	}
	return false
}

// WantSystemdScope says whether this process should ask the user's
// systemd for a scope (scopeHost.ask): if so, it returns the user manager's
// private socket and the cgroup v2 mount; else "", "". Package
// systemdscope asks.
func WantSystemdScope() (manager, v2 string) {
	if os.Geteuid() == 0 {
		return "", "" // before any probe: root's start pays nothing
	}
	h := probeScopeHost()
	if !h.ask() {
		return "", ""
	}
	return h.manager, h.v2
}

// OwnCgroups maps each cgroup v1 controller (and "" for v2) to this
// process's path in its hierarchy.
func OwnCgroups() (map[string]string, error) { return ownCgroups() }

// OwnCgroupV2 is this process's cgroup v2 path, or "".
func OwnCgroupV2() string {
	own, _ := ownCgroups()
	return own[""]
}

// SystemdScopeFailed records why asking systemd for a scope failed: the
// cgroup layer's fix then starts with it, here and in the user namespace's
// copy of this process, which gets it through its environment. err's text
// must name no host path.
func SystemdScopeFailed(err error) {
	scopeWhy = "asking your systemd for a delegated cgroup scope failed: " + err.Error()
	_ = os.Setenv(envScopeWhy, scopeWhy)
}
