//go:build !race

package jail

// childEnv is the environment of the jail's own processes (never the
// command's): empty, so nothing of the supervisor's reaches the jail.
var childEnv = []string{}
