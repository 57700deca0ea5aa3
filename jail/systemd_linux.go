package jail

import "os"

// Started by a user on cgroup v2, crucible may ask the user's systemd for a
// delegated scope (package owncgroup decides, package systemdscope asks).
// When that fails, the cgroup layer's errors start with why.
// envScopeWhy carries to the user namespace's copy of crucible (package
// userns) why the scope could not be had, for the cgroup layer's errors.
const envScopeWhy = "CRUCIBLE_SYSTEMD_SCOPE_WHY"

// scopeWhy is why asking systemd for a scope failed, or "".
var scopeWhy = func() string {
	why := os.Getenv(envScopeWhy)
	_ = os.Unsetenv(envScopeWhy) // the jails' processes never see it
	return why
}()

// SystemdScopeFailed records why asking systemd for a scope failed: the
// cgroup layer's fix then starts with it, here and in the user namespace's
// copy of this process, which gets it through its environment. err's text
// must name no host path.
func SystemdScopeFailed(err error) {
	scopeWhy = "asking your systemd for a delegated cgroup scope failed: " + err.Error()
	_ = os.Setenv(envScopeWhy, scopeWhy)
}
