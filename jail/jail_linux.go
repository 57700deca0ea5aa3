package jail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cruciblehq/crucible/seccomp"
	"golang.org/x/sys/unix"
)

// hostIDBase is the host uid and gid that root of the jail maps to when the
// supervisor runs as root; SandboxUID maps to hostIDBase+SandboxUID. Both are
// unprivileged and, on any ordinary system, unused: no host file belongs to
// them, so nothing on the host is theirs to write.
const hostIDBase = 2_000_000_000

// Defaults for the rlimits that have no flag of their own.
const defaultNoFile = 1024

// filterProgram is the seccomp program, compiled once per process and handed
// to every jail.
var filterProgram = sync.OnceValues(func() ([]byte, error) {
	f := SyscallFilter()
	if f == nil {
		return nil, fmt.Errorf("no syscall policy for %s", runtime.GOARCH)
	}
	prog, err := f.Compile()
	return encodeFilter(prog), err
})

// Run executes s.Args in a new jail and waits for it. A *SetupError means the
// jail could not be built (nothing of the command ran); any other error is the
// caller's (a cancelled ctx).
func Run(ctx context.Context, s *Spec) (*Result, error) {
	start := time.Now()
	if len(s.Args) == 0 || s.Args[0] == "" {
		return nil, errors.New("jail: no command given")
	}
	prog, err := filterProgram()
	if err != nil {
		return nil, &SetupError{Layer: "seccomp", Msg: "compiling the filter: " + err.Error()}
	}
	allowed := func(layer string) bool { return slices.Contains(s.AllowDegraded, layer) }

	res := &Result{}
	cg, err := newCgroup(cgroupLimits{Memory: s.Memory, Pids: s.Pids, CPUs: s.CPUs})
	if err != nil {
		if !allowed(LayerCgroup) {
			return nil, &SetupError{Layer: LayerCgroup, Msg: err.Error(), Fix: cgroupFix()}
		}
		res.Degraded = append(res.Degraded, LayerCgroup)
		cg = nil
	}
	if cg != nil {
		defer cg.destroy()
	}

	rootless := os.Geteuid() != 0
	cs := &childSpec{
		Args: s.Args, Env: s.Env, Dir: s.Dir, Path: envValue(s.Env, "PATH"),
		Workspace: s.Workspace, WorkspaceSize: s.WorkspaceSize, WorkspaceUID: SandboxUID,
		ReadOnly: s.ReadOnly, TmpSize: s.TmpSize,
		Rootless: rootless, NewCgroup: cg != nil && !cg.v2,
		NoFile: defaultNoFile, FSize: uint64(max(s.TmpSize, s.WorkspaceSize)),
		Filter: prog, Notify: true,
		LandlockMay: allowed(LayerLandlock), NotifyMayFail: allowed(LayerSeccompNotify),
	}
	if cs.Dir == "" {
		cs.Dir = "/workspace"
	}
	if rootless {
		cs.WorkspaceUID = 0 // the command's uid in the nested namespace maps to our 0
	}
	if cg == nil && s.Pids > 0 {
		cs.NProc = uint64(s.Pids) // counted per user namespace: only this jail's
	}
	var extra []*os.File
	if s.Workspace != "" && !rootless {
		// Best effort: without it the command writes the workspace only where
		// its permissions let the sandbox's host uid write.
		if fd, err := idmappedBind(s.Workspace); err == nil {
			f := os.NewFile(uintptr(fd), "workspace")
			defer f.Close()
			extra, cs.WorkspaceFD = append(extra, f), true
		}
	}
	spec, err := json.Marshal(cs)
	if err != nil {
		return nil, err
	}

	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("jail: socketpair: %w", err)
	}
	ctrlFile, childCtrl := os.NewFile(uintptr(fds[0]), "ctrl"), os.NewFile(uintptr(fds[1]), "ctrl-child")
	ctrl, err := net.FileConn(ctrlFile)
	ctrlFile.Close()
	if err != nil {
		childCtrl.Close()
		return nil, fmt.Errorf("jail: control socket: %w", err)
	}
	defer ctrl.Close()
	specR, specW, err := os.Pipe()
	if err != nil {
		childCtrl.Close()
		return nil, fmt.Errorf("jail: pipe: %w", err)
	}

	// Stdin always reaches the jail through a pipe of ours: never the
	// caller's own descriptor, which may be a terminal. The copy is not
	// waited for, so a terminal nobody types into does not hold us up.
	var stdin *os.File
	if s.Stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			childCtrl.Close()
			specR.Close()
			specW.Close()
			return nil, fmt.Errorf("jail: pipe: %w", err)
		}
		stdin = r
		defer r.Close()
		go func() {
			_, _ = io.Copy(w, s.Stdin)
			w.Close()
		}()
	}
	stdout := &capWriter{w: s.Stdout, left: s.MaxOutput}
	stderr := &capWriter{w: s.Stderr, left: s.MaxOutput}
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{argInit},
		Env:         []string{}, // not nil: nil would mean our environment
		Stdout:      stdout,
		Stderr:      stderr,
		ExtraFiles:  append([]*os.File{childCtrl, specR}, extra...),
		SysProcAttr: namespaceAttr(rootless),
		WaitDelay:   2 * time.Second,
	}
	if stdin != nil {
		cmd.Stdin = stdin // not a typed nil: os/exec would take it for a file
	}
	if cg != nil && cg.v2 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = cg.fd
	}

	// Pdeathsig fires when the thread that forked the child exits; a locked
	// thread is never reused for that while we hold it, and Go never exits an
	// unlocked one.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	childCtrl.Close()
	specR.Close()
	if err != nil {
		specW.Close()
		return nil, startError(err)
	}
	kill := func() { _ = cmd.Process.Kill() }

	go func() {
		// A dead child makes this fail with EPIPE; Wait reports why.
		_, _ = specW.Write(spec)
		specW.Close()
	}()
	if cg != nil && !cg.v2 {
		// init builds the root meanwhile, but starts nothing of the command
		// before it hears msgPlaced.
		if err := cg.add(cmd.Process.Pid); err != nil {
			kill()
			_ = cmd.Wait()
			return nil, &SetupError{Layer: LayerCgroup, Msg: err.Error(), Fix: cgroupFix()}
		}
	}
	// If init has already failed this write fails too; its error message
	// is waiting on the socket, and Wait below collects it.
	_, _ = ctrl.Write([]byte(msgPlaced))

	var timedOut atomic.Bool
	timer := time.AfterFunc(s.Timeout, func() { timedOut.Store(true); kill() })
	defer timer.Stop()
	if s.Timeout <= 0 {
		timer.Stop()
	}
	stopCancel := context.AfterFunc(ctx, kill)
	defer stopCancel()

	mon := &monitor{}
	ctrlDone := make(chan struct{})
	go func() {
		defer close(ctrlDone)
		mon.read(ctrl.(*net.UnixConn))
	}()

	waitErr := cmd.Wait()
	<-ctrlDone
	mon.stop()
	res.Duration = time.Since(start)

	if ctx.Err() != nil && !timedOut.Load() {
		return nil, ctx.Err()
	}
	if mon.setupErr != nil {
		return nil, mon.setupErr
	}
	res.Degraded = append(res.Degraded, mon.degraded...)
	res.Violations = mon.violations()

	switch st := mon.exit; {
	case timedOut.Load():
		res.ExitCode, res.Signal = ExitTimeout, "SIGKILL"
		res.LimitsHit = append(res.LimitsHit, "timeout")
	case st != nil:
		res.ExitCode = st.Code
		if st.Signal != 0 {
			res.Signal = unix.SignalName(syscall.Signal(st.Signal))
		}
	default:
		// init itself ended without a word: killed (by the OOM killer, say).
		ps := cmd.ProcessState
		if ps == nil {
			return nil, fmt.Errorf("jail: %w", waitErr)
		}
		ws := ps.Sys().(syscall.WaitStatus)
		res.ExitCode = ws.ExitStatus()
		if ws.Signaled() {
			res.Signal = unix.SignalName(ws.Signal())
			res.ExitCode = 128 + int(ws.Signal())
		}
	}
	if cg != nil {
		if cg.oomKilled() {
			res.LimitsHit = append(res.LimitsHit, "memory")
			if res.Signal == "SIGKILL" && !timedOut.Load() {
				res.ExitCode = ExitMemory
			}
		}
		if cg.pidsHit() {
			res.LimitsHit = append(res.LimitsHit, "pids")
		}
	}
	if stdout.cut || stderr.cut {
		res.Truncated = true
		res.LimitsHit = append(res.LimitsHit, "output")
	}
	return res, nil
}

// namespaceAttr puts the child in new namespaces of every kind, as root of a
// user namespace that maps to no privileged host id.
func namespaceAttr(rootless bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWNET |
			unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP,
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
	}
	if rootless {
		// An unprivileged user can map only itself.
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		return a
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: hostIDBase, Size: 1}, {ContainerID: SandboxUID, HostID: hostIDBase + SandboxUID, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: hostIDBase, Size: 1}, {ContainerID: SandboxUID, HostID: hostIDBase + SandboxUID, Size: 1}}
	a.GidMappingsEnableSetgroups = true
	// Drop host root's supplementary groups (gid 0 among them) at once.
	a.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	return a
}

func startError(err error) error {
	var errno syscall.Errno
	msg := "cannot create the jail's namespaces"
	if errors.As(err, &errno) {
		msg += ": " + errno.Error()
	}
	return &SetupError{Layer: "namespaces", Msg: msg,
		Fix: "allow user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0) or run as root; see 'crucible doctor'"}
}

func cgroupFix() string {
	if os.Geteuid() != 0 {
		return "run as root, or inside a delegated cgroup v2 (systemd-run --user --scope -p Delegate=yes ...), or pass --allow-degraded cgroup"
	}
	return "mount the memory, pids and cpu controllers (cgroup v2, or v1 under /sys/fs/cgroup), or pass --allow-degraded cgroup"
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if len(env[i]) > len(key) && env[i][len(key)] == '=' && env[i][:len(key)] == key {
			return env[i][len(key)+1:]
		}
	}
	return ""
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

	mu     sync.Mutex
	order  []string
	counts map[string]int
}

func (m *monitor) read(c *net.UnixConn) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		var msg childMsg
		if json.Unmarshal(buf[:n], &msg) != nil {
			continue
		}
		switch {
		case msg.Error != nil:
			if m.setupErr == nil {
				m.setupErr = msg.Error
			}
		case msg.Degraded != "":
			m.degraded = append(m.degraded, msg.Degraded)
		case msg.Exit != nil:
			m.exit = msg.Exit
		case msg.Listener:
			if fd, ok := parseFD(oob[:oobn]); ok && m.serveDone == nil {
				m.serve(fd)
			}
		}
	}
}

func parseFD(oob []byte) (int, bool) {
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(cms) != 1 {
		return -1, false
	}
	fds, err := unix.ParseUnixRights(&cms[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, false
	}
	return fds[0], true
}

// serve answers every denied syscall with EPERM and records it.
func (m *monitor) serve(fd int) {
	ctx, cancel := context.WithCancel(context.Background())
	m.serveStop, m.serveDone = cancel, make(chan struct{})
	go func() {
		defer close(m.serveDone)
		defer unix.Close(fd)
		_ = seccomp.Serve(ctx, fd, func(n seccomp.Notification) syscall.Errno {
			m.record(syscallName(n.Nr))
			return unix.EPERM
		})
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

func (m *monitor) violations() []Violation {
	m.mu.Lock()
	defer m.mu.Unlock()
	var vs []Violation
	for _, name := range m.order {
		vs = append(vs, Violation{Kind: "syscall", Syscall: name, Count: m.counts[name],
			Reason: "the sandbox does not allow " + name})
	}
	return vs
}
