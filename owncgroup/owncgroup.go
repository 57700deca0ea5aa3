// Package owncgroup knows this process's cgroups, and decides whether
// crucible, started by a user, should ask the user's systemd for a cgroup
// of its own (package owncgroup/systemdscope asks).
//
// A user's jails need a cgroup v2 subtree that the user may write, with
// memory, pids and cpu enabled for it: on a systemd host, systemd's to give
// (Delegate=yes). Started from a terminal or by an app, crucible sits in a
// cgroup that systemd made for something else (a session or an app's
// scope) and that it must not write to. So, as rootless container runtimes
// do, it asks the user's systemd over D-Bus for a transient scope of its
// own, delegated, holding this process, and moves itself into a leaf of it
// (Leaf): the processes it starts are born there, and the scope's other
// children are the jails' cgroups (package jail).
//
// It links no D-Bus, so that package jail may import it: the asking is
// its subpackage's, which only the command line imports.
package owncgroup

// Leaf is the leaf of a delegated cgroup that holds crucible's own
// processes: cgroup v2 lets a cgroup hold processes or delegate
// controllers to its children, not both.
const Leaf = "crucible-supervisor"

// Root is where the cgroup hierarchies are mounted.
const Root = "/sys/fs/cgroup"

// Controllers are the controllers every jail is bounded by.
var Controllers = []string{"memory", "pids", "cpu"}

// scopeWhy is why asking systemd for a scope failed, or "".
var scopeWhy string

// ScopeFailed records why asking the user's systemd for a scope failed
// (package systemdscope's Join calls it): package jail's fix for missing
// cgroups then starts with it. err's text must name no host path.
func ScopeFailed(err error) {
	scopeWhy = "asking your systemd for a delegated cgroup scope failed: " + err.Error()
}

// ScopeWhy is why asking systemd for a scope failed (ScopeFailed), or ""
// when it was not asked or did not fail.
func ScopeWhy() string { return scopeWhy }

// HasAll says whether have holds every controller in want.
func HasAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}
