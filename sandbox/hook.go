package sandbox

import (
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang/js/worker"
)

// Hook runs this process as one of the jail's own, when it is one: the
// jail's init and the command's launcher (the binary re-executes itself to
// build a jail), or the embedded engine's worker. Then it never returns.
// Call it first thing in main and in the TestMain of every package whose
// tests build jails; in any other process it returns at once.
func Hook() {
	// The jail's processes first: the worker runs inside a jail, started
	// by them.
	jail.Hook()
	worker.Hook()
}
