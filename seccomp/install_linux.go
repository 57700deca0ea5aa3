package seccomp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Install sets no_new_privs and attaches prog to the calling thread, on top of
// any filter already there. With [NewListener] it returns the listener for the
// filter's [Notify] syscalls (close-on-exec, to be handed to [Serve]);
// otherwise it returns -1.
//
// Both the filter and no_new_privs apply to the calling OS thread only, and
// are inherited by the children it forks and the programs it executes. The
// caller must therefore hold runtime.LockOSThread from before Install until it
// executes the jailed program from that same thread; other threads of the Go
// runtime stay unfiltered.
func Install(prog []Instruction, flags InstallFlags) (listener int, err error) {
	if len(prog) == 0 || len(prog) > maxInsns {
		return -1, fmt.Errorf("installing seccomp filter: %d instructions, want 1..%d", len(prog), maxInsns)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	// The kernel refuses a filter from a thread without CAP_SYS_ADMIN unless
	// no_new_privs is set, so that a filter cannot confuse a setuid program.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("setting no_new_privs: %w", err)
	}
	fd, err := setFilter(filter, flags)
	if err != nil {
		return -1, fmt.Errorf("installing seccomp filter: %w", err)
	}
	if flags&NewListener == 0 {
		return -1, nil
	}
	return fd, nil
}
