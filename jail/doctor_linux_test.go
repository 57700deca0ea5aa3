package jail

import (
	"strings"
	"testing"
)

// The remedy doctor gives for missing cgroups fits the host it runs on: a
// v1 host gets no systemd delegation (which cannot help there), a v2 host no
// v1 recipe, and none of them the --allow-degraded alternative, which
// doctor adds once by itself.
func TestCgroupFix(t *testing.T) {
	ours := []string{"memory", "pids", "cpu"}
	v1Recipe := []string{"/sys/fs/cgroup/$c/crucible-1001", "chown -R 1001", "cgroup.procs", "run crucible as root"}
	for _, tc := range []struct {
		name      string
		host      cgroupHost
		want, not []string
	}{
		{"v1 only, as a user", cgroupHost{uid: 1001, v1: ours},
			v1Recipe, []string{"systemd", "Delegate"}},
		{"v2 mounted without controllers beside v1 (hybrid), as a user", cgroupHost{uid: 1001, v2: []string{}, v1: ours},
			v1Recipe, []string{"systemd", "Delegate"}},
		{"v2 offering them, as a user", cgroupHost{uid: 1000, v2: []string{"cpuset", "cpu", "io", "memory", "pids"}, v2Unified: true},
			[]string{"asks for a delegated scope itself", "loginctl enable-linger 1000", "systemd-run --user --scope -p Delegate=yes", "run crucible as root"}, []string{"chown", "user@.service"}},
		{"v2 without cpu, as a user", cgroupHost{uid: 1000, v2: []string{"memory", "pids"}, v2Unified: true},
			[]string{"user@.service", "Delegate=memory pids cpu", "asks your systemd for a delegated scope itself"}, []string{"chown"}},
		{"no controllers, as a user", cgroupHost{uid: 1000},
			[]string{"mount the memory, pids and cpu controllers"}, []string{"systemd", "chown"}},
		{"v1, as root", cgroupHost{v1: ours},
			[]string{"writable"}, []string{"run crucible as root", "systemd"}},
		{"v2 offering them, as root", cgroupHost{v2: ours, v2Unified: true},
			[]string{"writable"}, []string{"run crucible as root", "chown"}},
		{"no controllers, as root", cgroupHost{},
			[]string{"mount the memory, pids and cpu controllers"}, []string{"run crucible as root"}},
		// In a container the runtime decides, for root and any other user.
		{"v1 in a docker container, as a user", cgroupHost{uid: 65532, v1: ours, runtime: "docker"},
			[]string{"read-only", "--privileged"}, []string{"chown", "run crucible as root"}},
		{"v2 in a pod, as a user", cgroupHost{uid: 65532, v2: ours, v2Unified: true, runtime: "kubernetes"},
			[]string{"cgroup_writable", "cgroup2-mount-hierarchy-rw"}, []string{"systemd", "chown"}},
	} {
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
	defer func(why string) { scopeWhy = why }(scopeWhy)
	scopeWhy = "asking your systemd for a delegated cgroup scope failed: the user manager did not start the scope in time"
	h := cgroupHost{uid: 1000, v2: ours, v2Unified: true}
	if fix := h.fix(); !strings.HasPrefix(fix, scopeWhy+"; run crucible as root") {
		t.Errorf("fix %q: want it to start with why the scope failed, then the remedies", fix)
	}
}
