//go:build !race

package jail

// childEnv is the environment of the jail's own processes (never the
// command's): nothing of the supervisor's. GOMAXPROCS=1: they need no
// parallelism, and each P may cost a thread, which the pids limit counts
// (see MinPids), on a many-core host as many as it has cores.
var childEnv = []string{"GOMAXPROCS=1"}
