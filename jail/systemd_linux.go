package jail

// Started by a user on cgroup v2, crucible may ask the user's systemd for a
// delegated scope (package owncgroup decides, package systemdscope asks).
// When that fails, the cgroup layer's errors start with why.

// scopeWhy is why asking systemd for a scope failed, or "".
var scopeWhy string

// SystemdScopeFailed records why asking systemd for a scope failed: the
// cgroup layer's fix then starts with it. err's text must name no host
// path.
func SystemdScopeFailed(err error) {
	scopeWhy = "asking your systemd for a delegated cgroup scope failed: " + err.Error()
}
