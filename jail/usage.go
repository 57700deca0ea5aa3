package jail

import (
	"sync/atomic"
	"time"
)

// Usage is what the inits of the jails this process ran have cost on their
// own, counted as each is reaped: CPU time (user and system) and page
// faults, without the command's. The command's own cost is not counted
// here: a command that its jail's end kills (a pool ends a jail as soon as
// its result is in) is charged to no process's rusage, only to its cgroup.
// The supervisor's side is this process's own, which getrusage reports.
type Usage struct {
	Jails      int64         // jails reaped
	InitCPU    time.Duration // init's own, with any orphan it reaped
	InitFaults int64
}

var usage struct{ jails, initCPU, initFaults atomic.Int64 }

// TotalUsage is the Usage of every jail this process has reaped so far.
func TotalUsage() Usage {
	return Usage{Jails: usage.jails.Load(), InitCPU: time.Duration(usage.initCPU.Load()), InitFaults: usage.initFaults.Load()}
}

// addUsage counts one reaped jail: init's whole cost (its own and what it
// reaped) less the command's, where init reported it (it does once it has
// reaped the command).
func addUsage(initCPU time.Duration, initFaults int64, cmdCPU time.Duration, cmdFaults int64) {
	usage.jails.Add(1)
	usage.initCPU.Add(int64(max(initCPU-cmdCPU, 0)))
	usage.initFaults.Add(max(initFaults-cmdFaults, 0))
}
