package jail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cruciblehq/crucible/jail/internal/child"
	"github.com/cruciblehq/crucible/seccomp"
	"github.com/cruciblehq/crucible/violation"
	"golang.org/x/sys/unix"
)

// hostIDBase is the host uid and gid that root of the jail maps to when the
// supervisor runs as root; SandboxUID maps to hostIDBase+SandboxUID. Both are
// unprivileged and, on any ordinary system, unused: no host file belongs to
// them, so nothing on the host is theirs to write.
const hostIDBase = 2_000_000_000

// Defaults for the rlimits that have no flag of their own.
const defaultNoFile = 1024

// filterProgram is the seccomp program handed to every jail: compiled from
// SyscallFilter by go generate where this architecture has a policy
// (compiledFilter), as compiling it costs every supervisor ~30 page faults
// and 0.1 ms; compiled here otherwise, which fails closed.
var filterProgram = sync.OnceValues(func() ([]byte, error) {
	if compiledFilter != "" {
		return []byte(compiledFilter), nil
	}
	return CompileFilter()
})

//go:generate go run ./internal/genfilter filter_linux_amd64.go

// CompileFilter compiles SyscallFilter and encodes it for the jail's init.
// It is for go generate and tests: a jail uses filterProgram.
func CompileFilter() ([]byte, error) {
	f := SyscallFilter()
	if f == nil {
		return nil, fmt.Errorf("no syscall policy for %s", runtime.GOARCH)
	}
	prog, err := f.Compile()
	if err != nil {
		return nil, err
	}
	return encodeFilter(prog), nil
}

func underFilesDir(p string) bool {
	return strings.HasPrefix(p, FilesDir+"/") && filepath.Clean(p) == p
}

// Run executes s.Args in a new jail and waits for it. A *SetupError means the
// jail could not be built (nothing of the command ran); any other error is the
// caller's: a bad Spec, or ctx, which ended the jail before the command had
// ended by itself. A command that had ended first is reported as it ended,
// as os/exec does.
func Run(ctx context.Context, s *Spec) (*Result, error) {
	if err := check(ctx, s); err != nil {
		if s.Ended != nil {
			s.Ended(nil, err)
		}
		return nil, err
	}
	return run(ctx, s)
}

// check refuses what Run cannot start.
func check(ctx context.Context, s *Spec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(s.Args) == 0 || s.Args[0] == "" {
		return errors.New("jail: no command given")
	}
	if s.Memory < 0 || s.Pids < 0 || !(s.CPUs >= 0) || s.Timeout < 0 {
		return errors.New("jail: a negative limit")
	}
	if s.Pids > 0 && s.Pids < MinPids {
		return &SetupError{Layer: LayerPids,
			Msg: fmt.Sprintf("a limit of %d processes and threads is too low: the jail's own processes count against it and need a limit of at least %d", s.Pids, MinPids),
			Fix: fmt.Sprintf("set the pids limit to %d or more", MinPids)}
	}
	return nil
}

// run is Run without the checks of its limits.
func run(ctx context.Context, s *Spec) (res *Result, err error) {
	start := time.Now()
	ended := false
	end := func(r *Result, e error) {
		if !ended && s.Ended != nil {
			ended = true
			s.Ended(r, e)
		}
	}
	defer func() { end(res, err) }()
	for _, f := range s.Files {
		if !underFilesDir(f.Path) {
			return nil, fmt.Errorf("jail: file %q is not a clean path under %s", f.Path, FilesDir)
		}
		for _, o := range f.Over {
			if !filepath.IsAbs(o) || filepath.Clean(o) != o || o == "/" {
				return nil, fmt.Errorf("jail: file %q: %q is not a clean absolute path", f.Path, o)
			}
		}
	}
	if s.Self != "" && !underFilesDir(s.Self) {
		return nil, fmt.Errorf("jail: self %q is not a clean path under %s", s.Self, FilesDir)
	}
	prog, err := filterProgram()
	if err != nil {
		return nil, &SetupError{Layer: "seccomp", Msg: "compiling the filter: " + err.Error()}
	}
	allowed := func(layer string) bool { return slices.Contains(s.AllowDegraded, layer) }

	x := &execution{}
	var degraded []string
	x.cg, err = newCgroup(cgroupLimits{Memory: s.Memory, Pids: s.Pids, CPUs: s.CPUs})
	if err != nil {
		if !allowed(LayerCgroup) {
			return nil, &SetupError{Layer: LayerCgroup, Msg: err.Error(), Fix: cgroupFix()}
		}
		degraded, x.cg = append(degraded, LayerCgroup), nil
	}
	if x.cg != nil {
		defer x.cg.destroy()
	}

	defer s.Late.end() // once the jail is over, or never ran: Bind fails then
	ids := jailIDs()
	if s.Late != nil && s.Workspace != "" {
		return nil, errors.New("jail: a Spec with both a Workspace and a late one")
	}
	if s.SavedSkills != "" && (s.Skills == "" || s.Late != nil) {
		return nil, errors.New("jail: a Spec's SavedSkills need its Skills, and no Late (whose Bind names them)")
	}
	if !ids.privileged && (s.Late != nil || s.Network != nil) {
		// Cloning a mount for the jail, or entering its network namespace
		// to make its tun device, takes CAP_SYS_ADMIN in our namespace.
		layer := "network"
		if s.Late != nil {
			layer = "workspace"
		}
		return nil, &SetupError{Layer: layer, Msg: "crucible is not root of a user namespace of its own, and the " + layer + " needs that",
			Fix: ownNamespaceFix()}
	}
	cs := &childSpec{
		Args: s.Args, Env: s.Env, Dir: s.Dir,
		Workspace: s.Workspace, WorkspaceSize: s.WorkspaceSize, Files: childFiles(s.Files),
		ReadOnly: s.ReadOnly, Skills: s.Skills, SavedSkills: s.SavedSkills, Self: s.Self, TmpSize: s.TmpSize,
		Rootless: ids.single(),
		NoFile:   defaultNoFile, FSize: uint64(max(s.TmpSize, s.WorkspaceSize)),
		Filter:      prog,
		LandlockMay: allowed(LayerLandlock), NotifyMayFail: allowed(LayerSeccompNotify),
		Slack: ownSlack(),
	}
	if s.Self != "" && len(s.Args) > 0 && s.Args[0] == s.Self {
		cs.Slack = goSlack // a Go runtime of ours, as init is
	}
	if cs.Dir == "" {
		cs.Dir = "/workspace"
	}
	if x.cg == nil && s.Pids > 0 {
		cs.NProc = uint64(s.Pids) // counted per user namespace: only this jail's
	}

	if s.Nameserver.IsValid() {
		cs.Nameserver = s.Nameserver.String()
	}
	if err := x.start(s, cs); err != nil {
		return nil, err
	}
	defer unix.Close(x.ctrl)
	// outcome is the Result; reported, if not nil, is the command's exit as
	// its own report gave it, before init's (see endEarly).
	outcome := func(reported *exitStatus) (*Result, error) {
		if x.net != nil {
			// Every process of the jail that could use the network is
			// gone, or exiting: closing it ends the connections still
			// open, whose reports then count in the result.
			_ = x.net.Close()
			x.net = nil
		}
		var res *Result
		var err error
		if reported != nil {
			res, err = x.resultOf(reported, false)
		} else {
			if x.cancel.Load() && x.mon.exit == nil && x.mon.setupErr == nil {
				// Our kill, for ctx, ended the jail before init could report
				// the command's end: the command did not finish.
				return nil, ctx.Err()
			}
			res, err = x.result()
		}
		if err != nil {
			return nil, err
		}
		res.Duration = time.Since(start)
		res.Degraded = append(degraded, res.Degraded...)
		return res, nil
	}
	var early func(*exitStatus)
	if s.Ended != nil {
		early = func(reported *exitStatus) { res, err = outcome(reported); end(res, err) }
	}
	if x.wait(ctx, s.Timeout, s.Begin, s.EarlyExit, early) {
		return res, err
	}
	return outcome(nil)
}

// execution is the supervisor's side of one running jail.
type execution struct {
	cmd      *exec.Cmd
	cg       *cgroup        // nil when allowed to be missing
	ctrl     int            // our end of the control socket
	outputs  []*outPipe     // stdout, stderr and the result channel
	report   *outPipe       // the result channel, if the command has one
	copies   sync.WaitGroup // until the outputs have everything
	mon      monitor
	timedOut atomic.Bool // the timeout killed init
	cancel   atomic.Bool // ctx killed init
	net      io.Closer   // the jail's network, if it has one
	stdin    *stdinCopy  // nil without Spec.Stdin
}

// start starts the jail's init and hands it its spec; when it returns nil,
// init may already be running the command.
func (x *execution) start(s *Spec, cs *childSpec) (err error) {
	// The child's ends of everything, closed as soon as it has its copies.
	var childFiles []*os.File
	closeChildFiles := func() {
		for _, f := range childFiles {
			f.Close()
		}
		childFiles = nil
	}
	defer closeChildFiles()

	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("jail: socketpair: %w", err)
	}
	// Our end stays a plain descriptor, read with blocking recvmsg: the net
	// package would link cgo in, and with it the dynamic loader, into every
	// process of the jail (about 1.5 ms of start-up each).
	x.ctrl = fds[0]
	childFiles = append(childFiles, os.NewFile(uintptr(fds[1]), "ctrl-child"))
	defer func() {
		if err != nil {
			unix.Close(x.ctrl)
		}
	}()
	specR, specW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("jail: pipe: %w", err)
	}
	childFiles = append(childFiles, specR)
	defer func() {
		if err != nil {
			specW.Close() // on success the spec writer closes it
		}
	}()
	if s.Late != nil {
		fd, err := s.Late.socket()
		if err != nil {
			return fmt.Errorf("jail: socketpair: %w", err)
		}
		cs.LateFD = 3 + len(childFiles)
		childFiles = append(childFiles, os.NewFile(uintptr(fd), "late"))
	}
	ids := jailIDs()
	if cs.Workspace != "" && ids.privileged {
		// Best effort: without it init binds the path, and the command
		// writes the workspace only where its permissions let the
		// sandbox's host uid write.
		if fd, err := workspaceMount(cs.Workspace); err == nil {
			cs.WorkspaceFD = 3 + len(childFiles) // where ExtraFiles puts it
			childFiles = append(childFiles, os.NewFile(uintptr(fd), "workspace"))
		}
	}
	if ids.privileged {
		// Detached copies of the read-only paths, for the same reason as
		// this binary's below: init, root only in the jail's user
		// namespace, cannot reach a path through a directory private to
		// host root (a checkout under a mode 0700 home or mktemp
		// directory). One that cannot be cloned here is left to init,
		// whose error names it.
		for i, p := range cs.ReadOnly {
			fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
			if err != nil {
				continue
			}
			if cs.ReadOnlyFDs == nil {
				cs.ReadOnlyFDs = make([]int, len(cs.ReadOnly))
			}
			cs.ReadOnlyFDs[i] = 3 + len(childFiles)
			childFiles = append(childFiles, os.NewFile(uintptr(fd), "ro"))
		}
		if cs.Skills != "" {
			if fd, err := unix.OpenTree(unix.AT_FDCWD, cs.Skills, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE); err == nil {
				cs.SkillsFD = 3 + len(childFiles)
				childFiles = append(childFiles, os.NewFile(uintptr(fd), "skills"))
			}
		}
		if cs.SavedSkills != "" {
			if fd, err := unix.OpenTree(unix.AT_FDCWD, cs.SavedSkills, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE); err == nil {
				cs.SavedSkillsFD = 3 + len(childFiles)
				childFiles = append(childFiles, os.NewFile(uintptr(fd), "saved skills"))
			}
		}
	}
	if cs.Self != "" && ids.privileged {
		// A detached copy of the mount that holds this binary: init could not
		// reach it by path where a directory on the way is private to root
		// (go test's build directory). Unprivileged, init finds it by path.
		if fd, err := unix.OpenTree(unix.AT_FDCWD, "/proc/self/exe", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC); err == nil {
			cs.SelfFD = 3 + len(childFiles)
			childFiles = append(childFiles, os.NewFile(uintptr(fd), "self"))
		}
	}
	// The command's pipes belong to its host uid, so that it may reopen
	// them as a shell does for "echo >/dev/stderr" (through /proc/self/fd,
	// which checks the pipe's owner like a file's).
	owner := -1
	if !ids.single() {
		owner = ids.base + SandboxUID
	}
	if s.Result != nil {
		cs.ResultFD = 3 + len(childFiles)
		w, err := x.drain(s.Result, owner, s.MaxOutput)
		if err != nil {
			return err
		}
		x.report = x.outputs[len(x.outputs)-1] // the pipe drain made
		childFiles = append(childFiles, w)
	}
	if s.Tools != nil {
		// A copy of the caller's socket, closed with the other child files
		// once init has its own.
		fd, err := unix.FcntlInt(s.Tools.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("jail: tools socket: %w", err)
		}
		cs.ToolsFD = 3 + len(childFiles)
		childFiles = append(childFiles, os.NewFile(uintptr(fd), "tools"))
	}
	extra := len(childFiles) // what follows is not an extra fd of init's
	stdout, err := x.drain(s.Stdout, owner, s.MaxOutput)
	if err != nil {
		return err
	}
	childFiles = append(childFiles, stdout)
	stderr := stdout // one writer for both: one pipe, or its writes would race
	if !sameWriter(s.Stdout, s.Stderr) {
		if stderr, err = x.drain(s.Stderr, owner, s.MaxOutput); err != nil {
			return err
		}
		childFiles = append(childFiles, stderr)
	}
	spec, err := child.EncodeSpec(cs)
	if err != nil {
		return err
	}

	x.cmd = &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{argInit},
		Env:         childEnv, // never nil: nil would mean our environment
		Stdout:      stdout,
		Stderr:      stderr,
		ExtraFiles:  childFiles[:extra], // fdCtrl, fdSpec, then cs.WorkspaceFD, cs.ResultFD and cs.ToolsFD
		SysProcAttr: namespaceAttr(ids),
	}
	// A stdinTaker's end of the stdin pipe, handed over once init runs.
	var taker stdinTaker
	var takerW *os.File
	defer func() {
		if err != nil && takerW != nil {
			takerW.Close()
		}
	}()
	if s.Stdin != nil {
		// Stdin reaches the jail through a pipe of ours, never the caller's
		// own descriptor, which may be a terminal.
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("jail: stdin pipe: %w", err)
		}
		childFiles = append(childFiles, r)
		if owner >= 0 {
			if err := r.Chown(owner, owner); err != nil {
				w.Close()
				return fmt.Errorf("jail: stdin pipe: %w", err)
			}
		}
		x.cmd.Stdin = r
		if t, ok := s.Stdin.(stdinTaker); ok {
			taker, takerW = t, w
		} else {
			x.stdin = copyStdin(w, s.Stdin)
		}
	}
	if x.cg != nil && x.cg.v2 {
		x.cmd.SysProcAttr.UseCgroupFD = true
		x.cmd.SysProcAttr.CgroupFD = x.cg.fd
	}

	err = x.fork()
	closeChildFiles()
	if err != nil {
		if x.stdin != nil {
			x.stdin.stop()
		}
		return err
	}
	if x.cg != nil && !x.cg.v2 {
		// cgroup v1: init was born in the cgroup (see fork), whose limits
		// are set only now that the supervisor's thread has left it: while
		// the thread sat there, a memory limit could have made the OOM
		// killer pick the supervisor, and a pids limit could have failed
		// the clone. Nothing goes unconfined meanwhile: init does nothing
		// before it reads its spec, which is written below, after this;
		// everything the command is comes from that spec and is forked by
		// init.
		if err := x.cg.bound(); err != nil {
			x.abort()
			if errors.Is(err, errMemoryTooSmall) {
				return &SetupError{Layer: LayerMemory, Msg: err.Error(), Fix: "raise the memory limit (sandbox.memory, --memory)"}
			}
			return &SetupError{Layer: LayerCgroup, Msg: err.Error(), Fix: cgroupFix()}
		}
	}
	if s.Network != nil {
		// While init starts up; it waits for its spec, so the command
		// cannot run before its network exists.
		if x.net, err = startNetwork(x.cmd.Process.Pid, s.Network); err != nil {
			x.abort()
			return err
		}
	}
	go func() {
		// A dead child makes this fail with EPIPE; Wait reports why.
		_, _ = specW.Write(spec)
		specW.Close()
	}()
	if taker != nil {
		taker.UseStdinPipe(takerW)
	}
	return nil
}

// startNetwork hands the network namespace of the jail's init to setup.
func startNetwork(pid int, setup func(*os.File) (io.Closer, error)) (io.Closer, error) {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // without the path: it says nothing the caller needs
		}
		return nil, &SetupError{Layer: "network", Msg: "opening the jail's network namespace: " + err.Error()}
	}
	defer ns.Close()
	c, err := setup(ns)
	if err != nil {
		fix := "run `crucible doctor`"
		if errors.Is(err, fs.ErrPermission) {
			if f := tunFix(); f != "" {
				fix = f
			}
		}
		return nil, &SetupError{Layer: "network", Msg: err.Error(), Fix: fix}
	}
	return c, nil
}

// drain returns the write end of a pipe whose other end is copied to w, up
// to limit bytes, until every writer has closed it; wait waits for that. The
// pipe belongs to owner, if not -1.
func (x *execution) drain(w io.Writer, owner int, limit int64) (*os.File, error) {
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("jail: pipe: %w", err)
	}
	if owner >= 0 {
		if err := pw.Chown(owner, owner); err != nil {
			r.Close()
			pw.Close()
			return nil, fmt.Errorf("jail: pipe: %w", err)
		}
	}
	p := &outPipe{w: &capWriter{w: w, left: limit}, r: r, done: make(chan struct{})}
	x.outputs = append(x.outputs, p)
	x.copies.Add(1)
	go func() {
		defer x.copies.Done()
		defer close(p.done)
		_, err := io.Copy(p.w, r)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.rest()
		}
		r.Close()
	}()
	return pw, nil
}

// outPipe is an output: our end of its pipe, copied to w until its end, or
// until stopCopies when no process can write to it any more.
type outPipe struct {
	w    *capWriter
	r    *os.File
	done chan struct{} // closed when the copy is over
}

// stopCopies ends the copies once what their pipes hold is read: for when
// every process that could write has begun to exit, before the kernel
// closes their ends. Every copy is stopped first and then waited for, so
// that their wake-ups overlap rather than follow one another.
func stopCopies(ps []*outPipe) {
	now := time.Now()
	for _, p := range ps {
		_ = p.r.SetReadDeadline(now)
	}
	for _, p := range ps {
		<-p.done
	}
}

// rest copies what the pipe still holds after the deadline stopped the
// copy, which may come before a read of what was there.
func (p *outPipe) rest() {
	rc, err := p.r.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 32<<10)
	_ = rc.Control(func(fd uintptr) {
		for {
			n, err := unix.Read(int(fd), buf) // non-blocking: EAGAIN once empty
			if n <= 0 || err != nil {
				return
			}
			_, _ = p.w.Write(buf[:n])
		}
	})
}

// fork starts init inside the jail's cgroup: on v2 by CLONE_INTO_CGROUP,
// on v1 from a thread that moves into the cgroup for the clone and back
// out (its limits are set afterwards, by start).
//
// It runs on a goroutine of its own, locked to its thread: Pdeathsig fires
// when the thread that forked the child exits, and Go never exits an unlocked
// thread. If the thread cannot move back, the goroutine ends still locked and
// Go ends the thread with it (and so init), rather than let it run other work
// inside the jail's cgroup.
func (x *execution) fork() error {
	v1 := x.cg != nil && !x.cg.v2
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if v1 {
			if err := x.cg.enter(); err != nil {
				errc <- &SetupError{Layer: LayerCgroup, Msg: err.Error(), Fix: cgroupFix()}
				return // still locked: the thread may be half moved
			}
		}
		// Init, and every thread it starts, gets the jail's own timer
		// slack from this thread (see child.GoSlack). None of ours keeps
		// it: the thread is locked, and the runtime starts no thread from
		// a locked one (its template thread does that meanwhile).
		own := ownSlack()
		setSlack(goSlack)
		err := x.cmd.Start()
		setSlack(own)
		if err != nil {
			err = startError(err)
		}
		if v1 {
			if lerr := x.cg.leave(); lerr != nil {
				if err == nil {
					x.kill()
					_ = x.cmd.Wait()
				}
				errc <- &SetupError{Layer: LayerCgroup, Msg: lerr.Error(), Fix: cgroupFix()}
				return
			}
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

func (x *execution) kill() { _ = x.cmd.Process.Kill() }

// abort ends a jail that start could not finish building.
func (x *execution) abort() {
	x.kill()
	_ = x.cmd.Wait()
	if x.stdin != nil {
		x.stdin.stop()
	}
}

// wait waits for init to exit, killing it at the timeout or when ctx ends,
// and for everything it said on the control socket. If ended is not nil,
// it is called as soon as the command's outcome is final (see
// Spec.Ended), before init's exit, and wait says whether it was.
func (x *execution) wait(ctx context.Context, timeout time.Duration, begin <-chan struct{}, earlyExit func() (int, bool), ended func(*exitStatus)) (early bool) {
	if timeout > 0 {
		exited := make(chan struct{})
		defer close(exited)
		go func() {
			if begin != nil {
				select {
				case <-begin:
				case <-exited:
					return
				}
			}
			t := time.NewTimer(timeout)
			defer t.Stop()
			select {
			case <-t.C:
				x.timedOut.Store(true)
				x.kill()
			case <-exited:
			}
		}()
	}
	stop := context.AfterFunc(ctx, func() {
		x.cancel.Store(true)
		x.kill()
	})
	defer stop()

	ctrlDone := make(chan struct{})
	x.mon.exited = make(chan struct{})
	x.mon.released = make(chan struct{})
	go func() {
		defer close(ctrlDone)
		x.mon.read(x.ctrl)
	}()
	if ended != nil {
		var released <-chan struct{}
		if earlyExit != nil && x.report != nil {
			released = x.mon.released
		}
	wait:
		for {
			select {
			case <-x.mon.exited:
				// The command has exited: its outcome is final once every
				// process that could still add to it is gone too. Those
				// that hold an output keep it open; those under the seccomp
				// filter keep its listener's users. Init, exiting now, ends
				// any that are left.
				x.copies.Wait()
				if x.mon.serveDone != nil {
					<-x.mon.serveDone
				}
				ended(nil)
				early = true
				break wait
			case <-released:
				released = nil
				if st := x.endEarly(earlyExit); st != nil {
					ended(st)
					early = true
					break wait
				}
			case <-ctrlDone: // init ended without a word: only its exit says how
				break wait
			}
		}
	}
	if early {
		// Ended has readied its caller, likely on this thread's P, which
		// the wait4 below would keep until the runtime takes it back:
		// let the caller run first (at the median 50 us sooner, at worst
		// hundreds, in a warm pool on an idle VM).
		runtime.Gosched()
	}
	_ = x.cmd.Wait() // the exit status is read from ProcessState
	<-ctrlDone
	x.account()
	x.mon.stop()
	if x.stdin != nil {
		x.stdin.stop()
	}
	// The jail is gone, so every writer is: these end at once.
	x.copies.Wait()
	return early
}

// account adds the reaped jail's cost to TotalUsage: init's rusage holds
// the command's (init waited for it), which init reported on its own.
func (x *execution) account() {
	ps := x.cmd.ProcessState
	if ps == nil {
		return
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return
	}
	var cmdCPU time.Duration
	var cmdFaults int64
	if st := x.mon.exit; st != nil {
		cmdCPU, cmdFaults = time.Duration(st.CPU)*time.Microsecond, st.Faults
	}
	addUsage(time.Duration(ru.Utime.Nano()+ru.Stime.Nano()), ru.Minflt+ru.Majflt, cmdCPU, cmdFaults)
}

// endEarly ends the execution on the command's own report, without waiting
// for init to reap it (Spec.EarlyExit): the seccomp listener's end says that
// every process of the command has begun to exit (the kernel releases the
// filter before it tears a process's memory down, which takes the engine's
// worker ~0.6 ms), so none can write any more, and what the pipes hold is
// all there will be. It returns the exit status, or nil to wait for init:
// after the timeout's kill or ctx's or the OOM killer's (which counts its
// kill before it sends it: a report made before it does not say how the
// command ended), or when earlyExit finds no exit in the report (the
// command was killed before it made one, say): its output is whole by then
// all the same, only its exit code is init's to tell.
func (x *execution) endEarly(earlyExit func() (int, bool)) *exitStatus {
	if x.timedOut.Load() || x.cancel.Load() || (x.cg != nil && x.cg.oomKilled()) {
		return nil
	}
	// What the pipes hold is all there will be, whatever the report says.
	stopCopies(x.outputs)
	code, ok := earlyExit()
	if !ok {
		return nil
	}
	return &exitStatus{Code: code}
}

// result turns what happened into a Result, or the SetupError that stopped
// the command from running.
func (x *execution) result() (*Result, error) {
	if x.mon.setupErr != nil {
		return nil, x.mon.setupErr
	}
	// As for ctx, the timeout counts only if its kill came before init
	// could report the command's end.
	return x.resultOf(x.mon.exit, x.timedOut.Load() && x.mon.exit == nil)
}

// resultOf is the Result of a command that exited with st (nil: init ended
// without a word) or, timedOut, was killed for its timeout.
func (x *execution) resultOf(st *exitStatus, timedOut bool) (*Result, error) {
	res := &Result{Degraded: x.mon.degraded, Violations: x.mon.violations()}
	switch {
	case timedOut:
		res.ExitCode, res.Signal = ExitTimeout, "SIGKILL"
		res.LimitsHit = append(res.LimitsHit, "timeout")
	case st != nil:
		res.ExitCode = st.Code
		if st.Signal != 0 {
			res.Signal = unix.SignalName(syscall.Signal(st.Signal))
		}
	default:
		// init itself ended without a word: killed (by the OOM killer, say).
		ps := x.cmd.ProcessState
		if ps == nil {
			return nil, errors.New("jail: init was not reaped")
		}
		ws := ps.Sys().(syscall.WaitStatus)
		res.ExitCode = ws.ExitStatus()
		if ws.Signaled() {
			res.Signal = unix.SignalName(ws.Signal())
			res.ExitCode = 128 + int(ws.Signal())
		}
	}
	if x.cg != nil {
		if x.cg.oomKilled() {
			res.LimitsHit = append(res.LimitsHit, "memory")
			if res.Signal == "SIGKILL" && !timedOut {
				res.ExitCode = ExitMemory
			}
		}
		if x.cg.pidsHit() {
			res.LimitsHit = append(res.LimitsHit, "pids")
		}
	}
	res.ResultCut = x.report != nil && x.report.w.cut
	for _, o := range x.outputs {
		if o.w.cut {
			res.Truncated = true
			res.LimitsHit = append(res.LimitsHit, "output")
			break
		}
	}
	return res, nil
}

// namespaceAttr puts the child in new namespaces of every kind, as root of a
// user namespace that maps to no privileged host id.
func namespaceAttr(ids idPlan) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWNET |
			unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP,
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
	}
	if ids.single() {
		// Only our own id: an unprivileged user may map nothing else, and
		// root of a namespace with one id has nothing else to map.
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		return a
	}
	b := ids.base
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: b, Size: 1}, {ContainerID: SandboxUID, HostID: b + SandboxUID, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: b, Size: 1}, {ContainerID: SandboxUID, HostID: b + SandboxUID, Size: 1}}
	a.GidMappingsEnableSetgroups = true
	// Drop our supplementary groups (host root's gid 0 among them) at once.
	a.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	return a
}

// startError says why init could not be cloned, by the errno: the clone
// makes a process and seven namespaces at once, and each may fail it.
func startError(err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return &SetupError{Layer: "namespaces", Msg: "cannot start the jail's init", Detail: err.Error()}
	}
	se := cloneError(errno, "the jail's init")
	if se.Layer == LayerUserns {
		// In a container, the runtime's settings are the fix, not sysctls.
		if fix := runtimeFix(containerRuntime(), blockedSyscalls); fix != "" {
			se.Fix = fix
		}
	}
	return se
}

// cgroupFix is the remedy for a jail whose cgroup could not be made, as
// doctor gives it for this host.
func cgroupFix() string {
	return probeCgroupHost().fix() + "; or pass --allow-degraded cgroup"
}

// sameWriter reports whether a and b are the same writer (and not nil), as
// os/exec decides whether stdout and stderr share a pipe.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // not comparable: not the same
		}
	}()
	return a != nil && a == b
}

// stdinTaker is a Spec.Stdin that writes the command's input itself: it is
// not read, but handed the write end of the command's stdin pipe once the
// jail has started, and then owns it (it must close it, even unused). Its
// writes reach the command with no copy between: a warm jail's job,
// written the moment it arrives. A write the pipe cannot take at once
// waits for the command to read, and ends (EPIPE) when the jail does.
type stdinTaker interface {
	UseStdinPipe(w *os.File)
}

// stdinCopy copies the caller's Stdin to the jail's stdin pipe until Stdin
// ends or the jail does. A Read cannot be interrupted in general: stop cuts
// it short through a deadline where Stdin has one, as net/http does for its
// background read; any other reader must return by itself, and the copier
// then drops what it read and ends without reading again.
type stdinCopy struct {
	w     *os.File
	src   io.Reader
	done  chan struct{} // closed by stop: the jail has ended
	ended chan struct{} // closed when the copier returns
	once  sync.Once
}

func copyStdin(w *os.File, src io.Reader) *stdinCopy {
	c := &stdinCopy{w: w, src: src, done: make(chan struct{}), ended: make(chan struct{})}
	go c.run()
	return c
}

func (c *stdinCopy) run() {
	defer close(c.ended)
	buf := make([]byte, 32<<10)
	for {
		n, err := c.src.Read(buf)
		select {
		case <-c.done:
			return // the jail has ended: what came now is nobody's
		default:
		}
		if n > 0 {
			if _, err := c.w.Write(buf[:n]); err != nil {
				return // the jail has closed its stdin, or ended
			}
		}
		if err != nil {
			c.w.Close() // the command sees the end of its input
			return
		}
	}
}

// stop ends the copy: once the jail has ended, or when it could not start.
func (c *stdinCopy) stop() {
	c.once.Do(func() {
		close(c.done)
		c.w.Close() // a Write blocked on the full pipe returns
		type deadliner interface{ SetReadDeadline(time.Time) error }
		if d, ok := c.src.(deadliner); ok && d.SetReadDeadline(time.Unix(1, 0)) == nil {
			<-c.ended // at once: the Read has timed out
			_ = d.SetReadDeadline(time.Time{})
		}
	})
}

// capWriter passes on the first left bytes and drops the rest, still reading
// so that the command never blocks on a full pipe.
type capWriter struct {
	w    io.Writer
	left int64
	cut  bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	n := len(p)
	if int64(len(p)) > c.left {
		p = p[:max(c.left, 0)]
		c.cut = true
	}
	c.left -= int64(len(p))
	if c.w != nil && len(p) > 0 {
		if _, err := c.w.Write(p); err != nil {
			c.w = nil // the reader went away; keep draining
		}
	}
	return n, nil
}

// monitor collects what the children say on the control socket, and serves
// the seccomp listener they send.
type monitor struct {
	setupErr *SetupError
	degraded []string
	exit     *exitStatus

	serveStop context.CancelFunc
	serveDone chan struct{}
	exited    chan struct{} // closed when exit is set
	released  chan struct{} // closed when the seccomp filter has no users left

	mu     sync.Mutex
	order  []string
	counts map[string]int
}

// read collects messages until every child has closed its end.
func (m *monitor) read(fd int) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, err := recv(fd, buf, oob)
		if err != nil || n == 0 {
			return
		}
		var msg childMsg
		if m.exit != nil || json.Unmarshal(buf[:n], &msg) != nil {
			// Init says nothing after the command's exit; what the
			// monitor holds then is read by wait without a lock.
			continue
		}
		switch {
		case msg.Error != nil:
			if m.setupErr == nil {
				m.setupErr = (*SetupError)(msg.Error)
			}
		case msg.Degraded != "":
			m.degraded = append(m.degraded, msg.Degraded)
		case msg.Exit != nil:
			m.exit = msg.Exit
			close(m.exited)
		case msg.Listener:
			if fd, ok := receivedFD(oob[:oobn]); ok && m.serveDone == nil {
				m.serve(fd)
			}
		}
	}
}

// serve answers every denied syscall with EPERM and records it.
func (m *monitor) serve(fd int) {
	ctx, cancel := context.WithCancel(context.Background())
	m.serveStop, m.serveDone = cancel, make(chan struct{})
	go func() {
		defer close(m.serveDone)
		defer unix.Close(fd)
		err := seccomp.Serve(ctx, fd, func(n seccomp.Notification) syscall.Errno {
			m.record(syscallName(n.Nr))
			return unix.EPERM
		})
		if err == nil && m.released != nil {
			close(m.released) // every process under the filter is exiting
			runtime.Gosched() // the waiter first, then the listener's close
		}
	}()
}

func (m *monitor) record(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]int{}
	}
	if m.counts[name] == 0 {
		m.order = append(m.order, name)
	}
	m.counts[name]++
}

// stop ends serving once the jail is gone: every process that could raise a
// notification is dead, so nothing more can arrive.
func (m *monitor) stop() {
	if m.serveDone == nil {
		return
	}
	m.serveStop()
	<-m.serveDone
}

func (m *monitor) violations() []violation.Violation {
	m.mu.Lock()
	defer m.mu.Unlock()
	var vs []violation.Violation
	for _, name := range m.order {
		vs = append(vs, violation.Violation{Kind: violation.Syscall, Syscall: name, Count: m.counts[name],
			Reason: "the sandbox does not allow " + name})
	}
	return vs
}
