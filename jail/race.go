//go:build race

package jail

// childEnv is the environment of the jail's own processes (never the
// command's). Under the race detector a Go process sleeps a second at exit
// unless told not to, and init exits once per execution. GOMAXPROCS=1: see
// norace.go.
var childEnv = []string{"GORACE=atexit_sleep_ms=0", "GOMAXPROCS=1"}
