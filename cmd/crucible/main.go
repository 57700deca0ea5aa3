// Command crucible runs untrusted code in a fail-closed Linux sandbox.
package main

import (
	"os"

	"github.com/cruciblehq/crucible/internal/cli"
)

// The jail's own processes and the embedded engine's worker are this binary
// too, but never get to main: they start from the inits of packages
// jail/internal/child and lang/js/worker, before the packages they do not
// need initialize (see main_test.go).
func main() {
	os.Exit(cli.Main())
}
