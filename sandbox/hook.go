package sandbox

import "github.com/cruciblehq/crucible/lang/js/worker"

// Hook runs this process as the embedded engine's worker, when it is one
// (the binary re-executes itself as the worker, inside a jail), and then
// never returns. Call it first thing in main and in the TestMain of every
// package whose tests build jails; in any other process it returns at
// once. The jail's own processes never get this far: they run from the
// init of package jail/internal/child.
func Hook() {
	worker.Hook()
}
