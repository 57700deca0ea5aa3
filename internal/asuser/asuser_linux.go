package asuser

import (
	"os"

	"github.com/cruciblehq/crucible/userns"
)

// This init runs in every process of this binary, before the jail's own
// processes reach their hooks (jail/internal/child, lang/js/worker): none of
// those has a command word in os.Args[1] (init's stages have no arguments,
// the worker's first is a flag), so none of them gets past Jails.
func init() {
	if !Jails(os.Args) || os.Geteuid() == 0 {
		return
	}
	if code, _ := userns.Enter(true); code >= 0 {
		os.Exit(code)
	}
	// The copy (whose os.Args[1] is this program's name, so it never gets
	// here) settles in the command line's call to Enter, after the heavy
	// packages' inits, which so run while the id maps are written; then it
	// asks the user's systemd for a cgroup scope, if it should.
}
