// Package child is the inside of package jail: the processes that the
// supervisor starts by re-executing this binary, and the protocol they
// speak with it. The jail's init builds the root, starts the command from
// a thread that first drops every privilege for itself (startCommand), and
// reaps; a rootless jail adds an exec stage, this binary again, to drop
// them in a nested user namespace. They run from this package's init,
// before the binary's other packages initialize; see child_linux.go.
// Nothing here runs on the host side.
package child
