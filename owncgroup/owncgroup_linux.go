package owncgroup

import (
	"bufio"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"github.com/cruciblehq/crucible/userns"
)

// Paths maps each cgroup v1 controller (and "" for v2) to this process's
// path in its hierarchy.
func Paths() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			m[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m, sc.Err()
}

// V2 is this process's cgroup v2 path, or "".
func V2() string {
	own, _ := Paths()
	return own[""]
}

// The file system types of cgroup v1 and v2 (linux/magic.h).
const (
	cgroupSuperMagic  = 0x27e0eb
	cgroup2SuperMagic = 0x63677270
)

// Mount says whether dir is a cgroup v1 or a cgroup v2 mount.
func Mount(dir string) (v1, v2 bool) {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return false, false
	}
	return st.Type == cgroupSuperMagic, st.Type == cgroup2SuperMagic
}

// host is what decides whether to ask for a scope: this process's ids and
// cgroup, and whether a user manager listens.
type host struct {
	euid      int      // on the host: the user's, in the user namespace's copy of crucible
	v2        string   // where cgroup v2 is mounted, or ""
	rootCtl   []string // the controllers at the root of cgroup v2
	delegated bool     // this process's cgroup is delegated to it already (Delegated)
	manager   string   // the user manager's private socket, or ""
}

// ask reports whether to ask the user's systemd for a scope. Not as root,
// who may write any cgroup; not where cgroup v2 lacks the controllers (a
// hybrid host's are v1's, which no user manager delegates); not when this
// process's cgroup is delegated to it already; and only with a user manager
// to ask.
func (h host) ask() bool {
	return h.euid != 0 && h.v2 != "" && HasAll(h.rootCtl, Controllers) && !h.delegated && h.manager != ""
}

func probeHost() host {
	h := host{euid: userns.HostUID()}
	for _, mnt := range []string{Root, Root + "/unified"} {
		if _, v2 := Mount(mnt); v2 {
			h.v2 = mnt
			break
		}
	}
	if h.v2 == "" {
		return h
	}
	if b, err := os.ReadFile(path.Join(h.v2, "cgroup.controllers")); err == nil {
		h.rootCtl = strings.Fields(string(b))
	}
	own, err := Paths()
	if err != nil {
		return h
	}
	h.delegated = Delegated(path.Join(h.v2, own[""]))
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = "/run/user/" + strconv.Itoa(h.euid)
	}
	if fi, err := os.Stat(path.Join(dir, "systemd", "private")); err == nil && fi.Mode().Type() == os.ModeSocket {
		h.manager = path.Join(dir, "systemd", "private")
	}
	return h
}

// Delegated reports whether dir is delegated to this process: our own
// leaf, a scope we asked for, or a unit that systemd marked delegated
// (newer versions set a delegate xattr, trusted.* from the system manager,
// user.* from a user's; 252's user manager does not, and crucible then
// asks for a scope of its own beside it).
func Delegated(dir string) bool {
	base := path.Base(dir)
	if base == Leaf || (strings.HasPrefix(base, "crucible-") && strings.HasSuffix(base, ".scope")) {
		return true
	}
	for _, attr := range []string{"user.delegate", "trusted.delegate"} {
		b := make([]byte, 8)
		if n, err := syscall.Getxattr(dir, attr, b); err == nil && string(b[:n]) == "1" {
			return true
		}
	}
	return false
}

// WantScope says whether this process should ask the user's systemd for a
// scope (host.ask): if so, it returns the user manager's private socket
// and the cgroup v2 mount; else "", "". Crucible started by a user asks
// from the copy of itself that runs as root of its own user namespace
// (userns.Enter), on the user's behalf.
func WantScope() (manager, v2 string) {
	if os.Geteuid() == 0 && !userns.Current().Entered {
		return "", "" // before any probe: root's start pays nothing
	}
	h := probeHost()
	if !h.ask() {
		return "", ""
	}
	return h.manager, h.v2
}
