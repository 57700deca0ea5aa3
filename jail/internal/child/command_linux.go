package child

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"github.com/cruciblehq/crucible/internal/stack"
	"github.com/cruciblehq/crucible/seccomp"
	"golang.org/x/sys/unix"
)

// startCommand starts the command's process straight from init, with no
// Go process of its own in between (the exec stage, which rootless jails
// still need; see startStage): a thread of init takes from itself what the
// command must not have, then forks it, and the command's process inherits
// the thread's state, as a fork does: the rlimits, locked securebits, empty
// bounding and ambient sets, no_new_privs, the Landlock domain and the
// seccomp filter. On its way to exec, the child becomes the sandbox user,
// with Go's own credential change between fork and exec; the kernel then
// clears the two capabilities the thread kept for it (setuid and setgid),
// since securebits leave its setuid fixup on. So the command runs exactly
// as it would from the exec stage.
//
// The thread's real and saved ids stay init's throughout: no process of
// the command can signal it, and it ends once the command is started, with
// what is left of its privileges. It returns the command's pid, or 0 and
// init's exit code once it has reported why the command did not start.
func startCommand(s *Spec) (pid, code int) {
	done := make(chan [2]int, 1)
	go func() {
		// Never unlocked: the goroutine's end ends its thread, whose
		// privileges are no longer init's. (Not the main thread, which
		// initMain holds locked: Go would keep that one.)
		runtime.LockOSThread()
		stack.Grow(16 << 10) // what forkCommand takes, in one copy
		pid, code := forkCommand(s)
		done <- [2]int{pid, code}
	}()
	r := <-done
	return r[0], r[1]
}

// spareMs is how many idle threads init's runtime holds when the command
// starts: startCommand's thread takes one and ends; the next hand-off of
// init's P (GOMAXPROCS=1) takes another. The pids limit counts them, and
// MinPids allows for them (TestPidsFloor).
const spareMs = 2

// spareThreads leaves n idle threads in the runtime's pool. The command
// can fill the pids limit from its first instruction, and from then on
// init must never need a new thread: Go aborts the process when it cannot
// make one ("pthread_create failed"), and init's death would lose the
// command's exit code. Yet the runtime starts one whenever a P is handed
// off and no thread is idle, as when the command's locked thread ends,
// and Go never ends an idle thread. So n goroutines each hold a thread of
// their own at once (LockOSThread), then let go, and their threads wait
// idle for those hand-offs.
func spareThreads(n int) {
	var held, done sync.WaitGroup
	release := make(chan struct{})
	for range n {
		held.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			held.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	held.Wait()
	close(release)
	done.Wait()
}

// forkCommand takes from this thread what the command must not have, and
// forks the command from it (see startCommand).
func forkCommand(s *Spec) (int, int) {
	SetSlack(s.Slack) // this thread's: it starts the command, then ends
	if err := setLimits(s); err != nil {
		return 0, fail("capabilities", "%v", err)
	}
	if err := lockCaps(); err != nil {
		return 0, fail("capabilities", "%v", err)
	}
	if err := clearCaps(unix.CAP_SETUID, unix.CAP_SETGID); err != nil {
		return 0, fail("capabilities", "clearing capabilities: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, fail("capabilities", "setting no_new_privs: %v", err)
	}
	path, pid, code := findCommand(s)
	if path == "" {
		return pid, code
	}
	if pid, code := restrict(s); code != 0 {
		return pid, code
	}
	return forkExec(s, path)
}

// findCommand finds the command's file and enters its working directory,
// as the sandbox user finds them: with its effective ids, for a moment.
// Without a path, it returns what forkCommand returns.
func findCommand(s *Spec) (path string, pid, code int) {
	if err := setIDs(-1, SandboxUID, -1, -1, SandboxUID, -1); err != nil {
		return "", 0, fail("capabilities", "%v", err)
	}
	// What goes wrong from here on is the command's own (a name not found,
	// a directory missing) and is reported as a shell would, on its stderr,
	// with the shell's exit codes.
	path, err := lookPath(s.Args[0], envValue(s.Env, "PATH"))
	if err != nil {
		pid, code := commandFailed(127, "%s: %v", s.Args[0], err)
		return "", pid, code
	}
	if err := unix.Chdir(s.Dir); err != nil { // init's too: it has no use for its own
		pid, code := commandFailed(126, "working directory %s: %v", s.Dir, err)
		return "", pid, code
	}
	if err := setIDs(-1, 0, -1, -1, 0, -1); err != nil {
		return "", 0, fail("capabilities", "%v", err)
	}
	// Each change of effective id set init's dump flag to the host's
	// fs.suid_dumpable: clear it again.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return "", 0, fail("capabilities", "clearing the dumpable flag: %v", err)
	}
	return path, 0, 0
}

// restrict applies Landlock and the seccomp filter to this thread, and
// sends the filter's listener to the supervisor. It returns a code other
// than 0 with what forkCommand returns.
func restrict(s *Spec) (pid, code int) {
	if err := restrictFS(); err != nil {
		if !s.LandlockMay || !errors.Is(err, errLandlockUnavailable) {
			return 0, fail(LayerLandlock, "%v", err)
		}
		_ = send(Msg{Degraded: LayerLandlock}, -1)
	}
	// Init passes nothing on but what Files names: every other descriptor
	// (the control socket first) closes on the command's exec.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return 0, fail("init", "close_range: %v", err)
	}
	prog, err := DecodeFilter(s.Filter)
	if err != nil {
		return 0, fail("seccomp", "%v", err)
	}
	listener, err := seccomp.Install(prog, seccomp.NewListener)
	if err != nil && s.NotifyMayFail {
		_ = send(Msg{Degraded: LayerSeccompNotify}, -1)
		listener, err = seccomp.Install(errnoInsteadOfNotify(prog), 0)
	}
	if err != nil {
		return 0, fail("seccomp", "installing the filter: %v", err)
	}
	if listener >= 0 {
		err := send(Msg{Listener: true}, listener)
		unix.Close(listener)
		if err != nil {
			return 0, fail("seccomp", "%v", err)
		}
	}
	return 0, 0
}

// forkExec forks the command, the file at path, from this thread.
func forkExec(s *Spec, path string) (int, int) {
	// The result pipe becomes the command's fd 3, the tools socket its fd 4.
	files := []uintptr{0, 1, 2}
	if s.ResultFD > 0 {
		files = append(files, uintptr(s.ResultFD))
	}
	for i, fd := range []int{s.ToolsFD, s.ToolsOutFD} {
		if fd <= 0 {
			continue
		}
		for len(files) < 4+i {
			files = append(files, ^uintptr(0)) // -1: nothing there
		}
		files = append(files, uintptr(fd))
	}
	pid, err := syscall.ForkExec(path, s.Args, &syscall.ProcAttr{
		Env:   s.Env,
		Files: files,
		Sys: &syscall.SysProcAttr{
			Setsid:     true, // no controlling terminal: TIOCSTI has nothing to reach
			Credential: &syscall.Credential{Uid: SandboxUID, Gid: SandboxUID, Groups: []uint32{}},
			// No Pdeathsig: it would fire as this thread ends. The command
			// dies with init all the same, as everything in its pid
			// namespace does.
		},
	})
	var errno syscall.Errno
	switch {
	case err == nil:
		return pid, 0
	case errors.Is(err, unix.ENOENT):
		// The program, or the interpreter or loader it names, is not in
		// the jail, which has only the host's /usr and what is bound.
		return commandFailed(127, "%s: not found in the jail (it sees the host's /usr and the paths bound into it)", s.Args[0])
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ENOMEM):
		errors.As(err, &errno)
		return 0, failWith(CloneError(errno, "the command's process"))
	}
	return commandFailed(126, "%s: %v", s.Args[0], err)
}

// commandFailed reports, as a shell would, that the command could not
// start: a message on its stderr, and the shell's exit code as its own.
func commandFailed(code int, format string, args ...any) (int, int) {
	fmt.Fprintf(os.Stderr, "crucible: "+format+"\n", args...)
	_ = send(Msg{Exit: &ExitStatus{Code: code}}, -1)
	return 0, code
}
