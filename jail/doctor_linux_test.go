package jail

import (
	"runtime"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/owncgroup"
	"golang.org/x/sys/unix"
)

// Mount tables, as /proc/self/mountinfo shows them.
const (
	// A docker container's by default, on a cgroup v1 host: each
	// hierarchy mounted read-only (its superblock is the host's, rw).
	dockerV1 = `1176 1175 0:92 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755
1177 1176 0:29 /docker/4f1e /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime master:11 - cgroup cgroup rw,cpu,cpuacct
1178 1176 0:32 /docker/4f1e /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:14 - cgroup cgroup rw,memory
1179 1176 0:36 /docker/4f1e /sys/fs/cgroup/pids ro,nosuid,nodev,noexec,relatime master:18 - cgroup cgroup rw,pids
`
	// A container (with a /.dockerenv) whose v1 hierarchies are mounted
	// read-write, each cgroup in them root's.
	rwV1 = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 31 0:31 / /sys/fs/cgroup/cpuset ro,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified ro,relatime - cgroup2 cgroup2 rw
`
	// A docker container's, or a pod's, on a cgroup v2 host.
	dockerV2 = "1180 1175 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate,memory_recursiveprot\n"
	// A systemd host's on cgroup v2.
	rwV2 = "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
)

// The remedy doctor gives for missing cgroups fits the host it runs on: a
// v1 host gets no systemd delegation (which cannot help there), a v2 host no
// v1 recipe, a read-only mount the container runtime's setting and a
// read-write one a delegated subtree, whatever the container marker says,
// and none of them the --allow-degraded alternative, which doctor adds
// once by itself.
func TestCgroupFix(t *testing.T) {
	ours := []string{"memory", "pids", "cpu"}
	v1Recipe := []string{"/sys/fs/cgroup/$c/crucible-1001", "chown -R 1001", "cgroup.procs", "run crucible as root"}
	for _, tc := range []struct {
		name      string
		host      cgroupHost
		mounts    string // mountinfo
		want, not []string
	}{
		{"v1 only, as a user", cgroupHost{uid: 1001, v1: ours}, "",
			v1Recipe, []string{"systemd", "Delegate"}},
		{"v2 mounted without controllers beside v1 (hybrid), as a user", cgroupHost{uid: 1001, v2: []string{}, v1: ours}, "",
			v1Recipe, []string{"systemd", "Delegate"}},
		{"v2 offering them, as a user", cgroupHost{uid: 1000, v2: []string{"cpuset", "cpu", "io", "memory", "pids"}, v2Unified: true}, "",
			[]string{"asks for a delegated scope itself", "loginctl enable-linger 1000", "systemd-run --user --scope -p Delegate=yes", "run crucible as root"}, []string{"chown", "user@.service"}},
		{"v2 without cpu, as a user", cgroupHost{uid: 1000, v2: []string{"memory", "pids"}, v2Unified: true}, "",
			[]string{"user@.service", "Delegate=memory pids cpu", "asks your systemd for a delegated scope itself"}, []string{"chown"}},
		{"no controllers, as a user", cgroupHost{uid: 1000}, "",
			[]string{"mount the memory, pids and cpu controllers"}, []string{"systemd", "chown"}},
		{"v1, as root", cgroupHost{v1: ours}, "",
			[]string{"writable"}, []string{"run crucible as root", "systemd"}},
		{"v2 offering them, as root", cgroupHost{v2: ours, v2Unified: true}, "",
			[]string{"writable"}, []string{"run crucible as root", "chown"}},
		{"no controllers, as root", cgroupHost{}, "",
			[]string{"mount the memory, pids and cpu controllers"}, []string{"run crucible as root"}},
		// A read-only mount in a container: the runtime decides, for
		// root and any other user.
		{"v1 read-only in a docker container, as a user", cgroupHost{uid: 65532, v1: ours, runtime: "docker"}, dockerV1,
			[]string{"read-only", "--privileged"}, []string{"chown", "run crucible as root"}},
		{"v1 read-only in a docker container, as root", cgroupHost{v1: ours, runtime: "docker"}, dockerV1,
			[]string{"read-only", "--privileged"}, []string{"chown"}},
		{"v2 read-only in a pod, as a user", cgroupHost{uid: 65532, v2: ours, v2Unified: true, runtime: "kubernetes"}, dockerV2,
			[]string{"cgroup_writable", "cgroup2-mount-hierarchy-rw"}, []string{"systemd", "chown"}},
		{"v2 read-only, in no container known", cgroupHost{uid: 1000, v2: ours, v2Unified: true}, dockerV2,
			[]string{"mounted read-only here: have it mounted read-write"}, []string{"systemd", "chown", "--privileged"}},
		// Read-write, in a container or not: a subtree delegated to us.
		{"v1 read-write in a docker container, as a user", cgroupHost{uid: 1001, v1: ours, runtime: "docker"}, rwV1,
			v1Recipe, []string{"read-only", "--privileged", "systemd"}},
		{"v2 read-write in a docker container, as a user", cgroupHost{uid: 1000, v2: ours, v2Unified: true, runtime: "docker"}, rwV2,
			[]string{"systemd-run --user --scope -p Delegate=yes"}, []string{"read-only", "--privileged", "chown"}},
		{"v2 read-write without cpu in a pod, as a user", cgroupHost{uid: 1000, v2: []string{"memory", "pids"}, v2Unified: true, runtime: "kubernetes"}, rwV2,
			[]string{"Delegate=memory pids cpu"}, []string{"read-only", "privileged", "chown"}},
	} {
		tc.host.readOnly = cgroupReadOnly(tc.mounts, tc.host.kind())
		fix := tc.host.fix()
		for _, w := range tc.want {
			if !strings.Contains(fix, w) {
				t.Errorf("%s: fix %q lacks %q", tc.name, fix, w)
			}
		}
		for _, n := range append(tc.not, "--allow-degraded") {
			if strings.Contains(fix, n) {
				t.Errorf("%s: fix %q has %q", tc.name, fix, n)
			}
		}
	}

	// Where asking systemd for a scope failed, the fix says so first.
	scopeWhy := "asking your systemd for a delegated cgroup scope failed: the user manager did not start the scope in time"
	h := cgroupHost{uid: 1000, v2: ours, v2Unified: true, scopeWhy: scopeWhy}
	if fix := h.fix(); !strings.HasPrefix(fix, scopeWhy+"; run crucible as root") {
		t.Errorf("fix %q: want it to start with why the scope failed, then the remedies", fix)
	}
}

// Read-only is the mount's own option or its superblock's, of the
// hierarchy the jails would go in, and of the mount on top.
func TestCgroupReadOnly(t *testing.T) {
	for _, tc := range []struct {
		name, mounts string
		kind         cgroupKind
		want         bool
	}{
		{"docker's v1", dockerV1, cgroupV1, true},
		{"v1 read-write beside a read-only cpuset and v2", rwV1, cgroupV1, false},
		{"a hybrid host's read-only v2 without controllers", rwV1, cgroupV2Bare, true},
		{"docker's v2", dockerV2, cgroupV2, true},
		{"systemd's v2", rwV2, cgroupV2, false},
		{"v2 whose superblock is read-only", "35 24 0:30 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 ro,nsdelegate\n", cgroupV2, true},
		{"v2 read-only, seen from v1", dockerV2, cgroupV1, false},
		{"read-only, then mounted over read-write", dockerV2 + rwV2, cgroupV2, false},
		{"read-only elsewhere than /sys/fs/cgroup", "35 24 0:30 / /mnt - rw - cgroup2 cgroup2 ro\n36 24 0:32 / /mnt/memory ro - cgroup cgroup rw,memory\n", cgroupV1, false},
		{"no controllers", dockerV1, cgroupNone, false},
		{"garbage", "- - - - - - -\n1 2\n\n", cgroupV2, false},
	} {
		if got := cgroupReadOnly(tc.mounts, tc.kind); got != tc.want {
			t.Errorf("%s: read-only %v, want %v", tc.name, got, tc.want)
		}
	}
}

func FuzzCgroupReadOnly(f *testing.F) {
	for _, s := range []string{dockerV1, rwV1, dockerV2, rwV2, "1 2 3 4 5 6 - a b c\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, mounts string) {
		for k := cgroupNone; k <= cgroupV2Bare; k++ {
			cgroupReadOnly(mounts, k)
		}
	})
}

// On this machine's real mount table, and in a mount namespace where the
// hierarchy the jails would go in is remounted read-only, the probe tells
// what the kernel does: statfs's ST_RDONLY.
func TestCgroupReadOnlyMounted(t *testing.T) {
	h := probeCgroupHost()
	dirs := map[cgroupKind][]string{cgroupV1: {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpu"}}
	for _, mnt := range []string{owncgroup.Root, owncgroup.Root + "/unified"} {
		if _, v2 := owncgroup.Mount(mnt); v2 {
			dirs[cgroupV2], dirs[cgroupV2Bare] = []string{mnt}, []string{mnt}
			break
		}
	}
	if h.kind() == cgroupNone {
		t.Skip("no cgroup hierarchy holds memory, pids and cpu here")
	}
	if want := readOnlyByStatfs(t, dirs[h.kind()]); h.readOnly != want {
		t.Errorf("read-only %v on this machine, statfs says %v", h.readOnly, want)
	}

	testenv.NeedRoot(t, "remounting a cgroup hierarchy read-only in a mount namespace")
	got := make(chan cgroupHost, 1)
	go func() {
		// Never unlocked: the thread, in a mount namespace of its own,
		// ends with this goroutine, and the namespace with it.
		runtime.LockOSThread()
		err := unix.Unshare(unix.CLONE_NEWNS)
		if err == nil {
			err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		}
		for _, d := range dirs[h.kind()] {
			if err == nil {
				err = unix.Mount("", d, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "")
			}
		}
		if err != nil {
			t.Errorf("remounting read-only in a mount namespace: %v", err)
			got <- cgroupHost{}
			return
		}
		if !readOnlyByStatfs(t, dirs[h.kind()]) {
			t.Error("remounted read-only, statfs says read-write")
		}
		got <- probeCgroupHost()
	}()
	ro := <-got
	ro.runtime = "docker"
	if !ro.readOnly || !strings.Contains(ro.fix(), "--privileged") {
		t.Errorf("remounted read-only: read-only %v, fix %q", ro.readOnly, ro.fix())
	}
	h.runtime = "docker"
	if !h.readOnly && strings.Contains(h.fix(), "--privileged") {
		t.Errorf("read-write in a docker container: fix %q", h.fix())
	}
}

// readOnlyByStatfs reports whether any of dirs is on a read-only mount.
func readOnlyByStatfs(t *testing.T, dirs []string) bool {
	ro := false
	for _, d := range dirs {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err != nil {
			t.Errorf("statfs: %v", err) // not Fatal: called from a goroutine of its own too
		}
		ro = ro || st.Flags&unix.ST_RDONLY != 0
	}
	return ro
}
