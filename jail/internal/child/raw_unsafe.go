//go:build linux

package child

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func landlockCreateRuleset(attr *unix.LandlockRulesetAttr, size int, flags int) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), uintptr(size), uintptr(flags))
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

func landlockAddRule(ruleset int, attr *unix.LandlockPathBeneathAttr) error {
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(attr)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func landlockRestrictSelf(ruleset int) error {
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// sigaction is the kernel's struct sigaction where sa_restorer exists
// (amd64, arm64); where it does not, the zero restorer reads as an empty
// mask, which is what mask holds too.
type sigaction struct {
	handler, flags, restorer, mask uintptr
}

// ignoreSignal sets sig to SIG_IGN in the kernel, for the whole process;
// or, if it was ignored already when this process started (crucible run
// under nohup: the Go runtime then leaves it so and does not count it as
// its own), to SIG_DFL. A fork keeps an ignored signal ignored, and only
// resets the runtime's own, so the command would start with it ignored.
// Init loses nothing: as its pid namespace's init, it is sent no signal
// at its default disposition from inside, and it is in a session of its
// own, which no terminal's hangup reaches.
func ignoreSignal(sig syscall.Signal) error {
	var old sigaction
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); errno != 0 {
		return errno
	}
	act := sigaction{handler: 1} // SIG_IGN
	if old.handler == 1 {
		act.handler = 0 // SIG_DFL
	}
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
