package jail

import (
	"bytes"
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

// Run executes s.Args in a new jail and waits for it to be gone: Start,
// Begin and Close. A *SetupError means the jail could not be built
// (nothing of the command ran); any other error is the caller's: a bad
// Spec, or ctx, which ended the jail before the command had ended by
// itself. A command that had ended first is reported as it ended, as
// os/exec does.
func Run(ctx context.Context, s *Spec) (*Result, error) {
	j, err := Start(ctx, s)
	if err != nil {
		return nil, err
	}
	j.Begin()
	return j.Close()
}

// Jail is a jail, created (Create) or running (Start): its methods are
// its lifecycle. Network and Start are for a created jail, once each;
// Bind (a late workspace), Begin, Stdin and Kill, for a running one, may
// be called from any goroutine; Wait and Close from one. Close must be
// called, started or not.
type Jail struct {
	x            *execution
	ctx          context.Context
	specW        *os.File // where Start writes spec; nil once started
	spec         []byte   // init's spec, encoded; nil once started
	started      atomic.Bool
	timeout      time.Duration
	began        time.Time
	degraded     []string // layers allowed to be missing, found so before init ran
	reportedExit func([]byte) (int, bool)

	begin     chan struct{} // closed by Begin: the timeout starts
	beginOnce sync.Once
	exited    chan struct{} // closed once the jail is gone: the timeout's goroutine ends
	stopCtx   func() bool   // ends ctx's watch
	ctrlDone  chan struct{} // closed when every child has closed the control socket
	stdin     atomic.Pointer[os.File]

	waited, early, closed bool // Wait was called; its outcome came before init's exit; Close was called
	res                   *Result
	err                   error
}

// Start starts s.Args in a new jail, and returns it running: the command
// may be running already. Its Timeout starts with Begin. The caller must
// Close it. Its error is Run's, for a jail that could not be started.
func Start(ctx context.Context, s *Spec) (*Jail, error) {
	j, err := Create(ctx, s)
	if err != nil {
		return nil, err
	}
	j.Start()
	return j, nil
}

// Create builds a jail for s.Args and returns it created, not started,
// as runc creates a container: its init is in its namespaces and its
// cgroup, with its limits, and waits for its spec; nothing of the command
// runs before Start. In between, Network gives it a network. Its error is
// Start's.
func Create(ctx context.Context, s *Spec) (*Jail, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	return create(ctx, s)
}

// Network gives a created jail a network beyond lo: setup is called with
// the jail's network namespace, and what it returns is closed once the
// jail has exited. Its error refuses the execution (a SetupError of
// layer "network"), and the jail must then be closed unstarted. Only
// root can set up a jail's network: rootless, a Network is refused.
func (j *Jail) Network(setup func(netns *os.File) (io.Closer, error)) error {
	if j.specW == nil || j.x.net != nil {
		return errors.New("jail: a network for a jail that has one, or has started")
	}
	if !jailIDs().privileged {
		// Entering the jail's network namespace to make its tun device
		// takes CAP_SYS_ADMIN in our namespace.
		return &SetupError{Layer: "network", Msg: "crucible is not root of a user namespace of its own, and the network needs that",
			Fix: ownNamespaceFix()}
	}
	var err error
	j.x.net, err = startNetwork(j.x.cmd.Process.Pid, setup)
	return err
}

// Start starts the command of a created jail: init gets its spec. A
// second Start does nothing.
func (j *Jail) Start() {
	specW, spec := j.specW, j.spec
	if specW == nil {
		return
	}
	j.specW, j.spec = nil, nil
	j.watch(j.timeout)
	j.started.Store(true)
	go func() {
		// A dead child makes this fail with EPIPE; Wait reports why.
		_, _ = specW.Write(spec)
		specW.Close()
	}()
}

// check refuses what Start cannot start.
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

// create is Create without the checks of its limits.
func create(ctx context.Context, s *Spec) (j *Jail, err error) {
	j = &Jail{x: &execution{}, ctx: ctx, began: time.Now(), reportedExit: s.ReportedExit, timeout: s.Timeout}
	x := j.x
	if err := checkPaths(s); err != nil {
		return nil, err
	}
	prog, err := filterProgram()
	if err != nil {
		return nil, &SetupError{Layer: "seccomp", Msg: "compiling the filter: " + err.Error()}
	}
	x.cg, err = newCgroup(cgroupLimits{Memory: s.Memory, Pids: s.Pids, CPUs: s.CPUs})
	if err != nil {
		if !slices.Contains(s.AllowDegraded, LayerCgroup) {
			return nil, &SetupError{Layer: LayerCgroup, Msg: err.Error(), Fix: cgroupFix()}
		}
		j.degraded, x.cg = append(j.degraded, LayerCgroup), nil
	}
	if x.cg != nil {
		defer func() {
			if err != nil {
				x.cg.destroy()
			}
		}()
	}
	if err := checkPrivilege(s); err != nil {
		return nil, err
	}
	if s.Late {
		x.late = newLateWorkspace()
		defer func() {
			if err != nil {
				x.late.end() // it never ran: Bind fails
			}
		}()
	}
	if j.specW, j.spec, err = x.start(s, childSpecOf(s, prog, x.cg != nil)); err != nil {
		return nil, err
	}
	j.stdin.Store(x.stdinW)
	return j, nil
}

// watch starts what follows the running jail: the timeout, from Begin,
// which kills it; ctx, whose end kills it; and the reader of the control
// socket.
func (j *Jail) watch(timeout time.Duration) {
	x := j.x
	j.begin, j.exited = make(chan struct{}), make(chan struct{})
	if timeout > 0 {
		go func() {
			select {
			case <-j.begin:
			case <-j.exited:
				return
			}
			t := time.NewTimer(timeout)
			defer t.Stop()
			select {
			case <-t.C:
				x.timedOut.Store(true)
				x.kill()
			case <-j.exited:
			}
		}()
	}
	j.stopCtx = context.AfterFunc(j.ctx, func() {
		x.cancel.Store(true)
		x.kill()
	})
	j.ctrlDone = make(chan struct{})
	x.mon.exited = make(chan struct{})
	x.mon.released = make(chan struct{})
	go func() {
		defer close(j.ctrlDone)
		x.mon.read(x.ctrl)
	}()
}

// Begin starts the Timeout: a warm jail, started ahead of its work,
// begins when its work arrives. A second Begin does nothing.
func (j *Jail) Begin() { j.beginOnce.Do(func() { close(j.begin) }) }

// Stdin hands over the write end of the command's stdin pipe
// (Spec.StdinPipe), to the first caller only: it then owns it, and must
// close it. Its writes reach the command with no copy between; a write
// the pipe cannot take at once waits for the command to read, and ends
// (EPIPE) when the jail does. It is nil without StdinPipe and after the
// first call. Close closes a pipe that no one took.
func (j *Jail) Stdin() *os.File { return j.stdin.Swap(nil) }

// Kill kills the jail at once: its outcome is the command's, killed,
// unless the command had ended before.
func (j *Jail) Kill() { j.x.kill() }

// Wait waits for the command's outcome, and returns it as soon as it is
// known: when the command has exited (init has reaped it and said so; or
// see Spec.ReportedExit below), its output is read to its end (every
// process holding a pipe has closed it) and no process of the jail can
// raise a denied syscall any more. The jail's teardown (init's exit with
// its namespaces, the network, the cgroup) comes after it, in Close,
// which returns the same outcome.
//
// With Spec.ReportedExit: once every process of the command has begun to
// exit, which the kernel says before it tears their memory down (~0.6 ms
// for the engine's worker), and Result has all they wrote, the report is
// asked for the command's exit code; if it has one, Wait returns with it
// then, when the rest of Stdout and Stderr is read too, not once init has
// reaped the command. Without a seccomp listener, after the timeout's
// kill, ctx's or the OOM killer's, or when the report has none, Wait
// waits for init as without it.
func (j *Jail) Wait() (*Result, error) {
	if j.specW != nil {
		return j.Close() // never started: there is no outcome to wait for
	}
	if j.waited || j.closed {
		return j.res, j.err
	}
	j.waited = true
	x := j.x
	var released <-chan struct{}
	if j.reportedExit != nil && x.report != nil {
		released = x.mon.released
	}
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
			return j.ended(nil)
		case <-released:
			released = nil
			if st := x.endEarly(j.reportedExit); st != nil {
				return j.ended(st)
			}
		case <-j.ctrlDone: // init ended without a word: only its exit says how
			return j.Close()
		}
	}
}

// ended settles the outcome before init's exit: reported, if not nil, is
// the command's exit as its report gave it.
func (j *Jail) ended(reported *exitStatus) (*Result, error) {
	j.early = true
	j.res, j.err = j.x.outcome(j.ctx, reported, j.began, j.degraded)
	return j.res, j.err
}

// Close waits for the jail to be gone, and returns Wait's outcome; or,
// without Wait, the command's as init's exit gives it. Once it returns,
// Bind fails.
func (j *Jail) Close() (*Result, error) {
	if j.closed {
		return j.res, j.err
	}
	j.closed = true
	x := j.x
	if j.specW != nil {
		j.discard()
		return j.res, j.err
	}
	if j.early {
		// Wait has readied its caller's waiter, likely on this thread's
		// P, which the wait4 below would keep until the runtime takes it
		// back: let the waiter run first (at the median 50 us sooner, at
		// worst hundreds, in a warm pool on an idle VM).
		runtime.Gosched()
	}
	_ = x.cmd.Wait() // the exit status is read from ProcessState
	<-j.ctrlDone
	x.account()
	x.mon.stop()
	if x.stdin != nil {
		x.stdin.stop()
	}
	// The jail is gone, so every writer is: these end at once.
	x.copies.Wait()
	j.stopCtx()
	close(j.exited)
	if !j.early {
		j.res, j.err = x.outcome(j.ctx, nil, j.began, j.degraded)
	}
	unix.Close(x.ctrl)
	x.late.end() // Bind fails from now on
	if x.cg != nil {
		x.cg.destroy()
	}
	if w := j.stdin.Swap(nil); w != nil {
		w.Close() // no one took it
	}
	return j.res, j.err
}

// discard tears down a jail that was created and never started: nothing
// of its command ran. Its outcome is an error.
func (j *Jail) discard() {
	x := j.x
	j.specW.Close()
	j.specW = nil
	x.abort() // init, waiting for its spec, is killed and reaped
	unix.Close(x.ctrl)
	if x.net != nil {
		_ = x.net.Close()
		x.net = nil
	}
	x.late.end()
	if x.cg != nil {
		x.cg.destroy()
	}
	if w := j.stdin.Swap(nil); w != nil {
		w.Close()
	}
	j.err = errors.New("jail: closed before it started")
}

// checkPaths refuses the paths of s that the jail cannot place.
func checkPaths(s *Spec) error {
	for _, f := range s.Files {
		if !underFilesDir(f.Path) {
			return fmt.Errorf("jail: file %q is not a clean path under %s", f.Path, FilesDir)
		}
		for _, o := range f.Over {
			if !filepath.IsAbs(o) || filepath.Clean(o) != o || o == "/" {
				return fmt.Errorf("jail: file %q: %q is not a clean absolute path", f.Path, o)
			}
		}
	}
	if s.Self != "" && !underFilesDir(s.Self) {
		return fmt.Errorf("jail: self %q is not a clean path under %s", s.Self, FilesDir)
	}
	return nil
}

// checkPrivilege refuses what s asks for that this process may not give.
func checkPrivilege(s *Spec) error {
	if s.Late && s.Workspace != "" {
		return errors.New("jail: a Spec with both a Workspace and a late one")
	}
	if err := checkLayerPaths(s.Layers, s.Over); err != nil {
		return err
	}
	if len(s.Over) > 0 && s.Late {
		return errors.New("jail: a Spec with both Over and Late (whose Bind names them)")
	}
	if s.Stdin != nil && s.StdinPipe {
		return errors.New("jail: a Spec with both a Stdin and a StdinPipe")
	}
	if !jailIDs().privileged && s.Late {
		// Cloning a mount for the jail takes CAP_SYS_ADMIN in our
		// namespace.
		return &SetupError{Layer: "workspace", Msg: "crucible is not root of a user namespace of its own, and the workspace needs that",
			Fix: ownNamespaceFix()}
	}
	return nil
}

// checkLayerPaths refuses layers at a path the jail cannot show them at, and
// an Over with no Layer at its Path.
func checkLayerPaths(layers, over []Layer) error {
	for _, l := range layers {
		p := l.Path
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" || p == "/workspace" || strings.HasPrefix(p, "/workspace/") {
			return fmt.Errorf("jail: a layer at %q: not a clean absolute path beside the workspace", p)
		}
	}
	for _, o := range over {
		if !slices.ContainsFunc(layers, func(l Layer) bool { return l.Path == o.Path }) {
			return fmt.Errorf("jail: an Over at %q lies over no Layer", o.Path)
		}
	}
	return nil
}

// childSpecOf is what init is told of s; prog is the seccomp filter, and
// cgroup says whether the jail has one.
func childSpecOf(s *Spec, prog []byte, cgroup bool) *childSpec {
	allowed := func(layer string) bool { return slices.Contains(s.AllowDegraded, layer) }
	cs := &childSpec{
		Args: s.Args, Env: s.Env, Dir: s.Dir,
		Workspace: s.Workspace, WorkspaceSize: s.WorkspaceSize, Files: childFiles(s.Files),
		ReadOnly: s.ReadOnly, Layers: childLayers(s.Layers), Over: childLayers(s.Over), Self: s.Self, TmpSize: s.TmpSize,
		Rootless: jailIDs().single(),
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
	if !cgroup && s.Pids > 0 {
		cs.NProc = uint64(s.Pids) // counted per user namespace: only this jail's
	}
	if s.Nameserver.IsValid() {
		cs.Nameserver = s.Nameserver.String()
	}
	return cs
}

// outcome is the Result of the jail that began at start, with the layers
// degraded before it ran; reported, if not nil, is the command's exit as
// its own report gave it, before init's (see endEarly).
func (x *execution) outcome(ctx context.Context, reported *exitStatus, start time.Time, degraded []string) (*Result, error) {
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

// execution is the supervisor's side of one running jail.
type execution struct {
	cmd      *exec.Cmd
	cg       *cgroup        // nil when allowed to be missing
	ctrl     int            // our end of the control socket
	outputs  []*outPipe     // stdout, stderr and the result channel
	report   *outPipe       // the result channel, if the command has one
	copies   sync.WaitGroup // until the outputs have everything
	mon      monitor
	timedOut atomic.Bool    // the timeout killed init
	cancel   atomic.Bool    // ctx killed init
	net      io.Closer      // the jail's network, if it has one
	stdin    *stdinCopy     // nil without Spec.Stdin
	stdinW   *os.File       // the stdin pipe's write end, for Spec.StdinPipe
	late     *lateWorkspace // nil without Spec.Late
	reported bytes.Buffer   // a copy of the report, for Spec.ReportedExit
}

// childFileList is the child's ends of everything, in the order
// ExtraFiles gives them their descriptors, closed as soon as init has its
// copies.
type childFileList []*os.File

// add appends f, and returns the descriptor init gets it as.
func (l *childFileList) add(f *os.File) int {
	*l = append(*l, f)
	return 2 + len(*l)
}

func (l *childFileList) close() {
	for _, f := range *l {
		f.Close()
	}
	*l = nil
}

// start starts the jail's init and hands it its spec; when it returns nil,
// init may already be running the command.
func (x *execution) start(s *Spec, cs *childSpec) (_ *os.File, spec []byte, err error) {
	var files childFileList
	defer files.close()
	specW, err := x.control(s, cs, &files)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			unix.Close(x.ctrl)
			specW.Close() // on success Start writes it, and closes it
		}
	}()
	ids := jailIDs()
	if ids.privileged {
		passMounts(cs, &files)
	}
	// The command's pipes belong to its host uid, so that it may reopen
	// them as a shell does for "echo >/dev/stderr" (through /proc/self/fd,
	// which checks the pipe's owner like a file's).
	owner := -1
	if !ids.single() {
		owner = ids.base + SandboxUID
	}
	if err := x.passChannels(s, cs, owner, &files); err != nil {
		return nil, nil, err
	}
	extra := len(files) // what follows is not an extra fd of init's
	stdout, stderr, err := x.outputPipes(s, owner, &files)
	if err != nil {
		return nil, nil, err
	}
	spec, err = child.EncodeSpec(cs)
	if err != nil {
		return nil, nil, err
	}

	x.cmd = &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{argInit},
		Env:         childEnv, // never nil: nil would mean our environment
		Stdout:      stdout,
		Stderr:      stderr,
		ExtraFiles:  files[:extra], // fdCtrl, fdSpec, then cs.WorkspaceFD, cs.ResultFD and cs.ToolsFD
		SysProcAttr: namespaceAttr(ids),
	}
	if err := x.stdinPipe(s, owner, &files); err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil && x.stdinW != nil {
			x.stdinW.Close()
			x.stdinW = nil
		}
	}()
	if x.cg != nil && x.cg.v2 {
		x.cmd.SysProcAttr.UseCgroupFD = true
		x.cmd.SysProcAttr.CgroupFD = x.cg.fd
	}

	err = x.fork()
	files.close()
	if err != nil {
		if x.stdin != nil {
			x.stdin.stop()
		}
		return nil, nil, err
	}
	if err := x.confine(); err != nil {
		return nil, nil, err
	}
	return specW, spec, nil
}

// control makes the control socket, keeping our end in x.ctrl, and the
// pipe that carries init's spec, whose write end it returns; and the
// socket of a late workspace, if s has one.
func (x *execution) control(s *Spec, cs *childSpec, files *childFileList) (specW *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("jail: socketpair: %w", err)
	}
	// Our end stays a plain descriptor, read with blocking recvmsg: the net
	// package would link cgo in, and with it the dynamic loader, into every
	// process of the jail (about 1.5 ms of start-up each).
	x.ctrl = fds[0]
	files.add(os.NewFile(uintptr(fds[1]), "ctrl-child"))
	defer func() {
		if err != nil {
			unix.Close(x.ctrl)
		}
	}()
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("jail: pipe: %w", err)
	}
	files.add(specR)
	if x.late != nil {
		fd, err := x.late.socket()
		if err != nil {
			specW.Close()
			return nil, fmt.Errorf("jail: socketpair: %w", err)
		}
		cs.LateFD = files.add(os.NewFile(uintptr(fd), "late"))
	}
	return specW, nil
}

// passMounts gives init detached copies of the host paths it binds, for a
// supervisor that is privileged: init, root only in the jail's user
// namespace, cannot reach a path through a directory private to host root
// (a checkout under a mode 0700 home or mktemp directory, go test's build
// directory). One that cannot be cloned here is left to init, whose error
// names it.
func passMounts(cs *childSpec, files *childFileList) {
	if cs.Workspace != "" {
		// Best effort: without it init binds the path, and the command
		// writes the workspace only where its permissions let the
		// sandbox's host uid write.
		if fd, err := workspaceMount(cs.Workspace); err == nil {
			cs.WorkspaceFD = files.add(os.NewFile(uintptr(fd), "workspace"))
		}
	}
	for i, p := range cs.ReadOnly {
		fd, err := openTree(p)
		if err != nil {
			continue
		}
		if cs.ReadOnlyFDs == nil {
			cs.ReadOnlyFDs = make([]int, len(cs.ReadOnly))
		}
		cs.ReadOnlyFDs[i] = files.add(os.NewFile(uintptr(fd), "ro"))
	}
	for _, ls := range [][]child.Layer{cs.Layers, cs.Over} {
		for i := range ls {
			if fd, err := openTree(ls[i].Dir); err == nil {
				ls[i].FD = files.add(os.NewFile(uintptr(fd), "layer"))
			}
		}
	}
	if cs.Self != "" {
		// The mount that holds this binary. Unprivileged, init finds it by
		// path.
		if fd, err := unix.OpenTree(unix.AT_FDCWD, "/proc/self/exe", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC); err == nil {
			cs.SelfFD = files.add(os.NewFile(uintptr(fd), "self"))
		}
	}
}

// openTree returns a detached copy of the mounts at and under the host
// path p.
func openTree(p string) (int, error) {
	return unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
}

// passChannels gives init the command's result pipe and tools socket, if
// s has them.
func (x *execution) passChannels(s *Spec, cs *childSpec, owner int, files *childFileList) error {
	if s.Result != nil {
		report := s.Result
		if s.ReportedExit != nil {
			report = io.MultiWriter(&x.reported, s.Result) // for endEarly
		}
		w, err := x.drain(report, owner, s.MaxOutput)
		if err != nil {
			return err
		}
		x.report = x.outputs[len(x.outputs)-1] // the pipe drain made
		cs.ResultFD = files.add(w)
	}
	for _, t := range []struct {
		f  *os.File
		fd *int
	}{{s.Tools, &cs.ToolsFD}, {s.ToolsOut, &cs.ToolsOutFD}} {
		if t.f == nil {
			continue
		}
		// A copy of the caller's, closed with the other child files once
		// init has its own.
		fd, err := unix.FcntlInt(t.f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("jail: tools channel: %w", err)
		}
		f := files.add(os.NewFile(uintptr(fd), "tools"))
		if s.ToolsOut != nil && owner >= 0 {
			// Pipes, which the command opens again by /dev/fd (as its
			// result pipe): the sandbox user's, as that one is.
			if err := unix.Fchown(fd, owner, owner); err != nil {
				return fmt.Errorf("jail: tools channel: %w", err)
			}
		}
		*t.fd = f
	}
	return nil
}

// outputPipes are the write ends of the command's stdout and stderr.
func (x *execution) outputPipes(s *Spec, owner int, files *childFileList) (stdout, stderr *os.File, err error) {
	stdout, err = x.drain(s.Stdout, owner, s.MaxOutput)
	if err != nil {
		return nil, nil, err
	}
	files.add(stdout)
	stderr = stdout // one writer for both: one pipe, or its writes would race
	if !SameWriter(s.Stdout, s.Stderr) {
		if stderr, err = x.drain(s.Stderr, owner, s.MaxOutput); err != nil {
			return nil, nil, err
		}
		files.add(stderr)
	}
	return stdout, stderr, nil
}

// stdinPipe gives the command a stdin pipe of ours if s has a Stdin or a
// StdinPipe: never the caller's own descriptor, which may be a terminal.
// Its write end is x.stdinW, for Jail.Stdin, or Stdin is copied to it.
func (x *execution) stdinPipe(s *Spec, owner int, files *childFileList) error {
	if s.Stdin == nil && !s.StdinPipe {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("jail: stdin pipe: %w", err)
	}
	files.add(r)
	if owner >= 0 {
		if err := r.Chown(owner, owner); err != nil {
			w.Close()
			return fmt.Errorf("jail: stdin pipe: %w", err)
		}
	}
	x.cmd.Stdin = r
	if s.StdinPipe {
		x.stdinW = w
	} else {
		x.stdin = copyStdin(w, s.Stdin)
	}
	return nil
}

// confine finishes the jail around init, which has forked and waits for
// its spec: the cgroup's limits on v1.
func (x *execution) confine() error {
	if x.cg != nil && !x.cg.v2 {
		// cgroup v1: init was born in the cgroup (see fork), whose limits
		// are set only now that the supervisor's thread has left it: while
		// the thread sat there, a memory limit could have made the OOM
		// killer pick the supervisor, and a pids limit could have failed
		// the clone. Nothing goes unconfined meanwhile: init does nothing
		// before it reads its spec, which is written after this;
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
// for init to reap it (Spec.ReportedExit): the seccomp listener's end says that
// every process of the command has begun to exit (the kernel releases the
// filter before it tears a process's memory down, which takes the engine's
// worker ~0.6 ms), so none can write any more, and what the pipes hold is
// all there will be. It returns the exit status, or nil to wait for init:
// after the timeout's kill or ctx's or the OOM killer's (which counts its
// kill before it sends it: a report made before it does not say how the
// command ended), or when reportedExit finds no exit in the report (the
// command was killed before it made one, say): its output is whole by then
// all the same, only its exit code is init's to tell.
func (x *execution) endEarly(reportedExit func([]byte) (int, bool)) *exitStatus {
	if x.timedOut.Load() || x.cancel.Load() || (x.cg != nil && x.cg.oomKilled()) {
		return nil
	}
	// What the pipes hold is all there will be, whatever the report says.
	stopCopies(x.outputs)
	code, ok := reportedExit(x.reported.Bytes())
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
