package sandbox

// A TypeScript or JavaScript execution's command is this binary, run as the
// embedded engine's worker inside the jail: linked here, the worker's
// package takes over any binary that runs executions when it is run as the
// worker, from its init and before main (the jail's own processes likewise
// start from the init of package jail/internal/child).
import _ "github.com/cruciblehq/crucible/lang/js/worker"
