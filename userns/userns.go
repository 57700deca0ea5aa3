// Package userns gives Crucible, started by an unprivileged user, a user
// namespace of its own in which it is root: there it may mount the tmpfs
// workspaces, bind them into running jails, and enter a jail's network
// namespace to make its tun device, as it does when started by root. Every
// jail is a namespace nested in this one, so what the jail may do on the
// host is still what the user may do, and no more.
//
// The ids of that namespace come from the user's range in /etc/subuid and
// /etc/subgid, mapped by the setuid helpers newuidmap and newgidmap (package
// uidmap), as rootless Podman does: the command in a jail then runs as a host
// id that is not the user's own. Without a range, or without the helpers,
// the namespace maps only the user's own id, which the jail's command then
// runs as.
package userns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Range is a run of ids mapped into a user namespace: Inside..Inside+Count-1
// there are Outside..Outside+Count-1 in the parent namespace.
type Range struct {
	Inside, Outside, Count uint32
}

// contains says whether id, as seen inside, is in r.
func (r Range) contains(id uint32) bool {
	return id >= r.Inside && id-r.Inside < r.Count
}

// Map is a user namespace's uid_map or gid_map.
type Map []Range

// Mapped says whether id, as seen inside, has an id outside.
func (m Map) Mapped(id uint32) bool {
	for _, r := range m {
		if r.contains(id) {
			return true
		}
	}
	return false
}

// Outside is the id outside that id inside maps to.
func (m Map) Outside(id uint32) (uint32, bool) {
	for _, r := range m {
		if r.contains(id) {
			return r.Outside + (id - r.Inside), true
		}
	}
	return 0, false
}

// parseMap reads a uid_map or gid_map: lines of three numbers.
func parseMap(b []byte) (Map, error) {
	var m Map
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("malformed id map line %q", sc.Text())
		}
		var r [3]uint32
		for i, s := range f {
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("malformed id map line %q", sc.Text())
			}
			r[i] = uint32(n)
		}
		m = append(m, Range{Inside: r[0], Outside: r[1], Count: r[2]})
	}
	return m, sc.Err()
}

// Own returns this process's uid and gid maps.
func Own() (uids, gids Map, err error) {
	for _, p := range []struct {
		file string
		m    *Map
	}{{"/proc/self/uid_map", &uids}, {"/proc/self/gid_map", &gids}} {
		b, err := os.ReadFile(p.file)
		if err != nil {
			return nil, nil, err
		}
		if *p.m, err = parseMap(b); err != nil {
			return nil, nil, err
		}
	}
	return uids, gids, nil
}

// Mode says how Enter left this process, for doctor.
type Mode struct {
	Entered bool   // this process is the copy, root in a namespace of its own
	Range   bool   // ids of the user's subordinate range are mapped
	Why     string // not entered, or entered without a range: why
}

var mode Mode

// Current is how Enter left this process.
func Current() Mode { return mode }

// initial is the map of the initial user namespace: every id is itself.
var initial = Range{Inside: 0, Outside: 0, Count: 1<<32 - 1}

// Initial says whether m is the initial user namespace's map.
func (m Map) Initial() bool { return len(m) == 1 && m[0] == initial }

// HostUID is the uid that this process's effective uid is in the parent
// user namespace: the user's own uid when Crucible runs in a namespace of
// its own, the effective uid otherwise. Names that must not collide between
// users on the host (a directory under /tmp, say) use it.
func HostUID() int {
	euid := os.Geteuid()
	uids, _, err := Own()
	if err != nil || uids.Initial() {
		return euid
	}
	if out, ok := uids.Outside(uint32(euid)); ok {
		return int(out)
	}
	return euid
}

// HostRoot says whether uid, as this process sees it, is root of the host:
// 0 in the host's user namespace; in ours (see Enter), 0 is the user.
func HostRoot(uid uint32) bool {
	uids, _, err := Own()
	if err != nil || uids.Initial() {
		return uid == 0
	}
	out, ok := uids.Outside(uid)
	return ok && out == 0
}

// Subordinate is a user's range of ids in /etc/subuid or /etc/subgid.
type Subordinate struct{ Start, Count uint32 }

// subordinate finds the first range of the user (by name or by id) in the
// text of /etc/subuid or /etc/subgid that holds at least need ids.
func subordinate(b []byte, name string, id int, need uint32) (Subordinate, bool) {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(f) != 3 || (f[0] != name && f[0] != strconv.Itoa(id)) || f[0] == "" {
			continue
		}
		start, err1 := strconv.ParseUint(f[1], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || count < uint64(need) || start+count > 1<<32-1 {
			continue
		}
		return Subordinate{Start: uint32(start), Count: uint32(count)}, true
	}
	return Subordinate{}, false
}

// errNoRange is why a user's namespace maps only the user's own id.
var errNoRange = errors.New("no range for this user in /etc/subuid and /etc/subgid")

// nameOf is the name of id in file, /etc/passwd or /etc/group (whose
// lines are name:password:id:...), or "". Read here rather than through
// os/user, which would link this binary against the C library.
func nameOf(file string, id int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 4)
		if len(f) >= 3 && f[2] == strconv.Itoa(id) {
			return f[0]
		}
	}
	return ""
}
