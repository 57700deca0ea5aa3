package child

import "golang.org/x/sys/unix"

// GoSlack is the timer slack of the jail's own processes, in nanoseconds:
// how late the kernel may fire a timer of theirs so that one wake-up serves
// several (prctl PR_SET_TIMERSLACK; the kernel's default is 50 µs). Each is
// a Go runtime, whose sysmon thread sleeps 20 µs at a time for its first
// ~50 rounds and again after every long system call: ~75 wake-ups per
// init, ~85 per engine's worker, whatever their work (on this VM, ~0.4 ms
// of init's 10 ms of CPU). With 1 ms, ~16 and ~35. A thread's slack passes
// to the threads and processes it starts and across execve, so the
// supervisor forks init with it (init's sysmon has it from birth), and
// init gives it to a command that is this binary (Spec.Slack). Init sets
// no timers; what it changes is that a P held by a blocked system call is
// handed on a sysmon round later, ~1 ms rather than ~20 µs, and the
// worker's timers (setTimeout) may fire up to 1 ms late.
const GoSlack = 1_000_000

// SetSlack sets this thread's timer slack to ns, for the processes it
// starts; 0 (which to the kernel means the slack the thread was born with)
// changes nothing. Only timing depends on it: an error is ignored.
func SetSlack(ns uint64) {
	if ns > 0 {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0)
	}
}

// OwnSlack is this thread's timer slack, in nanoseconds.
func OwnSlack() uint64 {
	n, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || n <= 0 {
		return 50_000 // the kernel's default
	}
	return uint64(n)
}
