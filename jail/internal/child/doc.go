// Package child is the inside of package jail: the processes that the
// supervisor starts by re-executing this binary (the jail's init, which
// builds the root and reaps, and the stage that drops every privilege and
// execs the command), and the protocol they speak with the supervisor.
// They run from this package's init, before the binary's other packages
// initialize; see child_linux.go. Nothing here runs on the host side.
package child
