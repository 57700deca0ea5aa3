// Package asuser starts crucible as a user who is not root: for the
// commands that build jails, it runs this program again in a user
// namespace of its own (userns.Enter), and this process only waits for
// that copy and passes on its exit code.
//
// It does so from its init, which Go runs before those of the heavy
// packages (the MCP SDK, the engine, the network stack, Prometheus'
// client): the process that waits then costs little more than a Go
// runtime's start, where the whole binary's inits would cost it as much
// again as the copy's. Go orders inits by import path among the packages
// whose imports are ready, so this package imports only light ones; a
// test in cmd/crucible keeps it so.
//
// When the user's systemd must be asked for a delegated cgroup scope
// first (owncgroup.WantScope), which takes a D-Bus client, it does
// nothing: the command line asks, then enters (package cli).
package asuser

import "slices"

// commands are crucible's commands that build jails, or report on them.
var commands = []string{"exec", "run", "serve", "tools", "doctor"}

// Jails says whether the command line args (os.Args, with the program's
// name) runs a command that builds jails.
func Jails(args []string) bool {
	return len(args) > 1 && slices.Contains(commands, args[1])
}
