// Package seccomp turns a syscall filter written as data into a classic BPF
// program, installs it on the calling thread, and serves the user
// notifications it raises.
//
// It is the mechanism only: it does not know which syscalls any program should
// have. A [Filter] is a list of rules, each naming a syscall, optionally testing
// its arguments, and choosing an [Action]; [Filter.Compile] checks it and lays
// it out, [Install] hands it to the kernel, [Serve] answers the syscalls the
// filter sent to a supervisor, and [Run] evaluates a program in user space, so
// a policy can be tested without installing it.
//
// The filter recognises only the architecture the package is built for (amd64
// or arm64); a syscall made through any other ABI (i386 through int 0x80, x32)
// kills the process, because its syscall numbers mean different things.
package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
)

// ErrUnsupported is returned where the kernel feature or the architecture is
// not available.
var ErrUnsupported = errors.New("seccomp: only supported on Linux amd64 and arm64")

// Action is what the kernel does with a syscall: one of the SECCOMP_RET_*
// values, with its data in the low 16 bits.
type Action uint32

const (
	// KillProcess kills the whole process, as if by an uncatchable SIGSYS.
	KillProcess Action = 0x80000000
	// Allow runs the syscall.
	Allow Action = 0x7fff0000
	// Notify stops the caller and hands the syscall to the supervisor holding
	// the filter's listener (see [Serve]), which chooses its errno. Without a
	// listener, or once it is closed, the syscall fails with ENOSYS.
	Notify Action = 0x7fc00000

	retErrno  Action = 0x00050000
	maxErrno         = 4095 // the kernel clamps larger values to this
	actionMsk Action = 0xffff0000
)

// Errno fails the syscall with e, without running it.
func Errno(e syscall.Errno) Action { return retErrno | Action(e&0xffff) }

func (a Action) String() string {
	switch {
	case a == KillProcess:
		return "kill-process"
	case a == Allow:
		return "allow"
	case a == Notify:
		return "notify"
	case a&actionMsk == retErrno:
		return fmt.Sprintf("errno(%d)", a&^actionMsk)
	}
	return fmt.Sprintf("action(%#x)", uint32(a))
}

func (a Action) validate() error {
	switch {
	case a == KillProcess, a == Allow, a == Notify:
		return nil
	case a == 0:
		return fmt.Errorf("no action")
	case a&actionMsk == retErrno:
		// Errno 0 would make the syscall "succeed", returning 0 without
		// running: never what a policy means.
		if e := a &^ actionMsk; e == 0 || e > maxErrno {
			return fmt.Errorf("errno %d out of range 1..%d", e, maxErrno)
		}
		return nil
	}
	return fmt.Errorf("unknown action %#x", uint32(a))
}

// Cmp says how an [Arg] compares a syscall argument.
type Cmp int

const (
	// Eq matches when the whole 64-bit argument equals Value.
	Eq Cmp = iota
	// MaskedEq matches when argument & Mask == Value. Use Mask 0xffffffff for
	// parameters the kernel declares as int or unsigned int: it reads only the
	// low half of the register, so a rule must not let the high half decide.
	MaskedEq
)

// Arg tests one argument of a syscall.
type Arg struct {
	Index int // 0..5
	Cmp   Cmp
	Value uint64
	Mask  uint64 // for MaskedEq
}

// Rule gives an action to a syscall whose arguments pass every test in Args
// (none means any arguments).
type Rule struct {
	Syscall int32 // the native architecture's number
	Args    []Arg
	Action  Action
}

// Filter is a seccomp policy. For each syscall, the first rule that matches
// wins; a syscall with no matching rule gets Default. The zero Default is
// KillProcess.
type Filter struct {
	Rules   []Rule
	Default Action
}

// Instruction is one classic BPF instruction, laid out as the kernel's struct
// sock_filter.
type Instruction struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// Data is the kernel's struct seccomp_data: what a filter sees of a syscall.
type Data struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// Notification is one syscall sent to the supervisor, laid out as the
// kernel's struct seccomp_notif. PID is as seen from the supervisor's pid
// namespace.
type Notification struct {
	ID    uint64
	PID   uint32
	flags uint32 // reserved by the kernel, always 0
	Data
}

// InstallFlags modify [Install].
type InstallFlags uint

// NewListener makes [Install] return a listener for the filter's [Notify]
// syscalls (SECCOMP_FILTER_FLAG_NEW_LISTENER).
const NewListener InstallFlags = 1 << 3

// AUDIT_ARCH_* values of the architectures the filter is built for. Both are
// little-endian, which the argument offsets in compile.go rely on.
var nativeArch = map[string]uint32{
	"amd64": 0xc000003e,
	"arm64": 0xc00000b7,
}[runtime.GOARCH]
