package child

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/cruciblehq/crucible/seccomp"
	"golang.org/x/sys/unix"
)

// The jail's children are entered here, from this package's init, rather
// than from main: Go initializes a package as soon as everything it imports
// is, taking the first by import path among those ready, so this one runs
// before the heavy packages of a large binary (an engine, a network stack,
// an MCP SDK) that sort after it, and a child never pays for their
// initialization. That holds only while this package imports nothing but
// the standard library's early packages, x/sys/unix, seccomp and
// internal/stack: path, not path/filepath, and no os/signal (which sort
// after those packages and would wait for them). TestHookRunsEarly checks
// it in the crucible binary.
func init() { hook() }

// hook runs the jail's child side when this process is one, and then never
// returns.
func hook() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case ArgInit:
		// Per-thread state (none here, but mounts and the exec that follows
		// must see one consistent thread) stays on this thread.
		runtime.LockOSThread()
		os.Exit(initMain())
	case ArgHold:
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case ArgProbe:
		os.Exit(0) // the namespaces could be created: that was the question
	case ArgExec:
		// Capabilities, securebits, no_new_privs, Landlock and seccomp are all
		// per-thread: set them on this thread and execve from it.
		runtime.LockOSThread()
		execMain()
		os.Exit(ExitSetup) // execMain only returns after reporting an error
	}
}

// fail reports a setup error to the supervisor and returns ExitSetup. Its
// message must name no host path: it may reach the model.
func fail(layer, format string, args ...any) int {
	return failWith(&SetupError{Layer: layer, Msg: fmt.Sprintf(format, args...), Fix: Fix(layer)})
}

func failWith(se *SetupError) int {
	// Best effort: if the supervisor is gone there is no one to tell.
	_ = send(Msg{Error: se}, -1)
	return ExitSetup
}

// Fix is the operator's remedy for a layer that is missing, or "".
func Fix(layer string) string {
	switch layer {
	case LayerLandlock:
		return "boot a kernel with Landlock enabled (lsm=...,landlock), or pass --allow-degraded landlock"
	case LayerSeccompNotify:
		return "use Linux 5.0 or later, or pass --allow-degraded seccomp_notify"
	case "seccomp":
		return "use a kernel built with CONFIG_SECCOMP_FILTER"
	}
	return ""
}

func readSpec() (*Spec, error) {
	f := os.NewFile(fdSpec, "spec")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return nil, err
	}
	return DecodeSpec(b)
}

// initMain is pid 1 of the jail. It builds the filesystem, starts the
// command's process, reaps every orphan, and exits when the command exits:
// the kernel then kills whatever is left in the pid namespace.
func initMain() int {
	s, err := readSpec()
	if err != nil {
		return fail("init", "reading the jail spec: %v", err)
	}
	// Not dumpable: no process of the command may ptrace this one or read its
	// memory through /proc, even where both run as the same host uid.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("init", "prctl(PR_SET_DUMPABLE): %v", err)
	}
	// As pid 1, init gets only the signals it handles from inside its pid
	// namespace, and Go handles the terminating ones by exiting: ignore them,
	// so that the command cannot end its own jail early with a made-up exit
	// code. (Landlock's signal scope refuses them too, from ABI 6.) SIGKILL
	// from the supervisor still works. Ignored by the kernel, behind the
	// runtime's back (os/signal would delay this package's init, see
	// above): the runtime still counts them as its own, so the fork below
	// resets them to the default in the command's process.
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1,
		syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGVTALRM} {
		if err := ignoreSignal(sig); err != nil {
			return fail("init", "ignoring signal %d: %v", sig, err)
		}
	}
	if err := unix.Sethostname([]byte(Hostname)); err != nil {
		return fail("uts", "sethostname: %v", err)
	}
	if err := setupRoot(s); err != nil {
		return failWith(mountError(err))
	}
	if err := loopbackUp(); err != nil {
		return fail("network", "bringing up lo: %v", err)
	}

	if s.LateFD > 0 {
		// Before the command starts: a mount sent early waits in the socket.
		go bindLate(s.LateFD, s.Layers)
	}
	resultFD := s.ResultFD // init's copy of the command's result pipe
	spareThreads(spareMs)  // from here on the command may fill the pids limit
	var pid, code int
	if s.Rootless {
		pid, code = startStage(s)
	} else {
		pid, code = startCommand(s)
	}
	if pid == 0 {
		return code
	}
	// Init keeps no copy of the command's outputs: they end as soon as the
	// command, and whatever it started, has closed them, and the supervisor
	// has them whole before init's own exit (jail.Jail.Wait).
	if null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		for fd := range 3 {
			_ = unix.Dup3(null, fd, 0)
		}
		unix.Close(null)
		if resultFD > 0 {
			unix.Close(resultFD)
		}
	}

	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		got, err := unix.Wait4(-1, &ws, 0, &ru)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fail("init", "wait: %v", err)
		}
		if got != pid {
			continue // an orphan reparented to us
		}
		st := ExitStatus{Code: ws.ExitStatus(), CPU: ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000, Faults: ru.Minflt + ru.Majflt}
		if ws.Signaled() {
			st.Signal = int(ws.Signal())
			st.Code = 128 + st.Signal
		}
		_ = send(Msg{Exit: &st}, -1)
		return st.Code
	}
}

// execMain is a rootless jail's exec stage (see startStage): it turns this
// process into the command: drop every privilege, apply Landlock and
// seccomp, execve. It returns only after reporting an error.
func execMain() {
	s, err := readSpec()
	if err != nil {
		os.Exit(fail("init", "reading the jail spec: %v", err))
	}
	SetSlack(s.Slack) // the command's, kept across its execve
	if err := dropPrivileges(s); err != nil {
		os.Exit(fail("capabilities", "%v", err))
	}
	// What goes wrong from here on is the command's own (a name not found,
	// a directory missing) and is reported as a shell would, on its stderr,
	// with the shell's exit codes.
	path, err := lookPath(s.Args[0], envValue(s.Env, "PATH"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "crucible: %s: %v\n", s.Args[0], err)
		os.Exit(127)
	}
	if err := unix.Chdir(s.Dir); err != nil {
		fmt.Fprintf(os.Stderr, "crucible: working directory %s: %v\n", s.Dir, err)
		os.Exit(126)
	}
	if err := restrictFS(); err != nil {
		if !s.LandlockMay || !errors.Is(err, errLandlockUnavailable) {
			os.Exit(fail(LayerLandlock, "%v", err))
		}
		_ = send(Msg{Degraded: LayerLandlock}, -1)
	}

	// Leave no inherited descriptor but stdio open in the command; the
	// listener is sent before the control socket closes on exec.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		os.Exit(fail("init", "close_range: %v", err))
	}
	prog, err := DecodeFilter(s.Filter)
	if err != nil {
		os.Exit(fail("seccomp", "%v", err))
	}
	listener, err := seccomp.Install(prog, seccomp.NewListener)
	if err != nil && s.NotifyMayFail {
		_ = send(Msg{Degraded: LayerSeccompNotify}, -1)
		listener, err = seccomp.Install(errnoInsteadOfNotify(prog), 0)
	}
	if err != nil {
		os.Exit(fail("seccomp", "installing the filter: %v", err))
	}
	if listener >= 0 {
		if err := send(Msg{Listener: true}, listener); err != nil {
			os.Exit(fail("seccomp", "%v", err))
		}
		unix.Close(listener)
	}
	if s.ResultFD > 0 {
		// The result pipe becomes fd 3, open across exec; this closes the
		// control socket, which has nothing more to carry.
		if err := unix.Dup3(fdResult, 3, 0); err != nil {
			os.Exit(fail("init", "dup3: %v", err))
		}
	}
	if s.ToolsFD > 0 {
		// The tools socket becomes fd 4 (the spec pipe's, closed already),
		// open across exec; its copy at fdTools closes on exec.
		if err := unix.Dup3(fdTools, 4, 0); err != nil {
			os.Exit(fail("init", "dup3: %v", err))
		}
	}
	if s.ToolsOutFD > 0 {
		// The channel's second pipe becomes fd 5 (fdResult's, which fd 3
		// holds now), as fd 4 does.
		if err := unix.Dup3(fdToolsOut, 5, 0); err != nil {
			os.Exit(fail("init", "dup3: %v", err))
		}
	}
	err = unix.Exec(path, s.Args, s.Env)
	if errors.Is(err, unix.ENOENT) {
		// The program, or the interpreter or loader it names, is not in
		// the jail, which has only the host's /usr and what is bound.
		fmt.Fprintf(os.Stderr, "crucible: %s: not found in the jail (it sees the host's /usr and the paths bound into it)\n", s.Args[0])
		os.Exit(127)
	}
	fmt.Fprintf(os.Stderr, "crucible: %s: %v\n", s.Args[0], err)
	os.Exit(126)
}

// lookPath finds name in the jail's PATH, as a shell would.
func lookPath(name, pathList string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for dir := range strings.SplitSeq(pathList, ":") {
		if pathList == "" {
			break
		}
		if dir == "" {
			dir = "."
		}
		p := path.Join(dir, name)
		// With the effective ids, which are the sandbox user's where
		// startCommand looks.
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS) == nil {
			return p, nil
		}
	}
	return "", errors.New("command not found in the jail's PATH")
}

// errnoInsteadOfNotify turns every "ask the supervisor" verdict of prog into
// a plain EPERM, for kernels without seccomp user notification.
func errnoInsteadOfNotify(prog []seccomp.Instruction) []seccomp.Instruction {
	out := slices.Clone(prog)
	for i := range out {
		if out[i].Code == unix.BPF_RET|unix.BPF_K && out[i].K == uint32(seccomp.Notify) {
			out[i].K = uint32(seccomp.Errno(unix.EPERM))
		}
	}
	return out
}

// CloneError names the layer that a clone failing with errno points at.
// what is the process that could not be made. (The supervisor's clone of
// init uses it too.)
func CloneError(errno syscall.Errno, what string) *SetupError {
	switch errno {
	case unix.EPERM, unix.ENOSPC, unix.EUSERS:
		// Refused (unprivileged user namespaces off, or an LSM), a
		// namespace count at its maximum, or nested too deep.
		return &SetupError{Layer: LayerUserns, Msg: "cannot create the namespaces of " + what + ": " + errno.Error(),
			Fix: "allow user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0) or run as root; see 'crucible doctor'"}
	case unix.EAGAIN:
		return &SetupError{Layer: LayerPids, Msg: "no room for " + what + " under the process limit (the jail's pids limit, or the host's)",
			Fix: fmt.Sprintf("raise the pids limit (at least %d), or the host's process limits (ulimit -u, kernel.threads-max)", MinPids)}
	case unix.ENOMEM:
		return &SetupError{Layer: LayerMemory, Msg: "no memory for " + what + " (the jail's memory limit, or the host's)",
			Fix: "raise the memory limit, or free memory on the host"}
	}
	return &SetupError{Layer: "namespaces", Msg: "cannot start " + what + ": " + errno.Error(), Fix: "see 'crucible doctor'"}
}

// pathless drops the host path from a *fs.PathError: setup errors may reach
// the model, and host paths are none of its business.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if len(env[i]) > len(key) && env[i][len(key)] == '=' && env[i][:len(key)] == key {
			return env[i][len(key)+1:]
		}
	}
	return ""
}

// startStage starts the exec stage of a rootless jail, this binary again
// (execMain), in a nested user namespace where it is the sandbox user: the
// one uid mapped into the jail is init's, so the command's cannot be set
// as startCommand sets it. It returns the stage's pid, or 0 and init's exit
// code once it has reported why it could not start.
func startStage(s *Spec) (pid, code int) {
	files := []uintptr{0, 1, 2, fdCtrl, 0} // stdio, the control socket, the spec pipe
	if s.ResultFD > 0 {
		files = append(files, uintptr(s.ResultFD))
		s.ResultFD = fdResult
	}
	for _, t := range []struct {
		fd *int
		at int
	}{{&s.ToolsFD, fdTools}, {&s.ToolsOutFD, fdToolsOut}} {
		if *t.fd <= 0 {
			continue
		}
		for len(files) < t.at {
			files = append(files, ^uintptr(0)) // -1: nothing there
		}
		files = append(files, uintptr(*t.fd))
		*t.fd = t.at
	}
	s.Files = nil // written already; the exec stage need not read them again
	b, err := EncodeSpec(s)
	if err != nil {
		return 0, fail("init", "encoding the spec: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, fail("init", "pipe: %v", err)
	}
	files[fdSpec] = r.Fd()
	attr := &syscall.ProcAttr{
		Env:   os.Environ(), // the supervisor's childEnv, nothing of its own
		Files: files,
		Sys: &syscall.SysProcAttr{
			Setsid:    true, // no controlling terminal: TIOCSTI has nothing to reach
			Pdeathsig: syscall.SIGKILL,
		},
	}
	// Only one uid was mapped into the jail (ours, as 0). Give the command
	// a nested user namespace in which it is SandboxUID, not root.
	attr.Sys.Cloneflags = unix.CLONE_NEWUSER
	attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: SandboxUID, HostID: 0, Size: 1}}
	attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: SandboxUID, HostID: 0, Size: 1}}
	// As uid 1000 it would lose every capability on execve, including
	// CAP_SETPCAP, which it needs to lock securebits and empty the
	// bounding set; carry that one across as ambient. It drops it itself.
	attr.Sys.AmbientCaps = []uintptr{unix.CAP_SETPCAP}
	// syscall.ForkExec rather than os/exec: init waits with wait4 itself, and
	// os/exec would spend a test fork probing pidfd support.
	pid, err = syscall.ForkExec("/proc/self/exe", []string{ArgExec}, attr)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return 0, failWith(CloneError(errno, "the command's process"))
		}
		return 0, fail("init", "starting the command's process: %v", err)
	}
	r.Close()
	_, werr := w.Write(b)
	w.Close()
	if werr != nil {
		return 0, fail("init", "handing over the spec: %v", werr)
	}
	return pid, 0
}
