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
// The copy then asks the user's systemd for a delegated cgroup scope,
// where it should (package systemdscope: a D-Bus client, no package to link
// in here): it is the copy, and the jails it starts, that the scope holds.
package asuser

import "slices"

// commands are crucible's commands that build jails, or report on them.
var commands = []string{"exec", "run", "serve", "tools", "doctor"}

// Jails says whether the command line args (os.Args, with the program's
// name) runs a command that builds jails.
func Jails(args []string) bool {
	return len(args) > 1 && slices.Contains(commands, args[1])
}
