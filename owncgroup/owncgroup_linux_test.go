package owncgroup

import "testing"

func TestHostAsk(t *testing.T) {
	all := []string{"cpuset", "cpu", "io", "memory", "pids"}
	user := host{euid: 1000, v2: "/sys/fs/cgroup", rootCtl: all, manager: "/run/user/1000/systemd/private"}
	if !user.ask() {
		t.Errorf("a user in a session scope, with a manager, on cgroup v2: want it to ask")
	}
	for name, edit := range map[string]func(*host){
		"root":                           func(h *host) { h.euid = 0 },
		"no cgroup v2":                   func(h *host) { h.v2 = "" },
		"a hybrid host's bare v2":        func(h *host) { h.v2, h.rootCtl = "/sys/fs/cgroup/unified", []string{"hugetlb"} },
		"v2 without pids":                func(h *host) { h.rootCtl = []string{"cpu", "memory"} },
		"delegated already":              func(h *host) { h.delegated = true },
		"no user manager to ask for one": func(h *host) { h.manager = "" },
	} {
		h := user
		edit(&h)
		if h.ask() {
			t.Errorf("%s: want it not to ask", name)
		}
	}
	for dir, want := range map[string]bool{
		"/sys/fs/cgroup/a/crucible-supervisor": true,
		"/sys/fs/cgroup/a/crucible-42.scope":   true,
		"/sys/fs/cgroup/a/crucible-42":         false, // a jail's
		"/sys/fs/cgroup/a/session-2.scope":     false,
	} {
		if got := Delegated(dir); got != want {
			t.Errorf("Delegated(%s) = %v, want %v", dir, got, want)
		}
	}
}
