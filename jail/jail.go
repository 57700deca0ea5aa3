// Package jail runs one command in a fresh, fail-closed Linux sandbox: new
// user, pid, mount, network, ipc, uts and cgroup namespaces; a read-only root
// built from /usr and a synthesized /etc; dropped capabilities, no_new_privs,
// Landlock and a seccomp filter; cgroup and rlimit bounds. The whole process
// tree dies with the execution.
//
// The jail is entered by re-executing the current binary, whose child side
// (package jail/internal/child) runs from that package's init, before the
// binary's other packages initialize. It reads its settings from an
// inherited pipe and sends its errors back to the supervisor as data.
//
// This package knows nothing of the config file, the MCP server or the network
// policy; the sandbox package turns the user's config into a [Spec].
package jail

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/violation"
)

// Layers that the operator may explicitly allow to be missing. Every other
// layer (namespaces, mounts, capabilities, seccomp) is always required.
const (
	LayerCgroup        = "cgroup"
	LayerLandlock      = "landlock"
	LayerSeccompNotify = "seccomp_notify"
)

// Layers that a SetupError may name besides those above, for failures a
// caller may want to tell apart: a limit too small for the jail itself.
const (
	LayerPids   = "pids"   // the pids limit left no room for a process
	LayerMemory = "memory" // there was no memory for a process
	LayerUserns = "userns" // user namespaces cannot be created
)

// Sandbox identity: the uid/gid the command runs as inside the jail.
const (
	SandboxUID  = 1000
	SandboxName = "sandbox"
	Hostname    = "sandbox"
)

// ErrUnsupported is returned on platforms without the kernel features the jail
// needs.
var ErrUnsupported = errors.New("jail: only supported on Linux")

// Spec describes one execution. The zero value of each limit means "no limit
// of that kind" (nothing is written to the cgroup for it); the sandbox
// package always sets them. A negative limit is refused.
type Spec struct {
	Args []string // the command; Args[0] is looked up in PATH inside the jail
	Env  []string // the command's whole environment, "K=V"
	Dir  string   // working directory inside the jail; default /workspace

	Workspace     string // host directory bound read-write at /workspace; "" means a fresh tmpfs
	WorkspaceSize int64  // size of the tmpfs workspace when Workspace is "" and Late is nil
	// Late, if not nil, binds the workspace once the jail runs (Workspace
	// is then ""): until the caller's Late.Bind, /workspace is an empty,
	// read-only directory, so that nothing the command does before its
	// work arrives reaches any workspace. A command whose working
	// directory is /workspace enters it again once its work arrives.
	Late     *LateWorkspace
	ReadOnly []string // extra host paths bound read-only at the same path
	Skills   string   // a host directory bound read-only at SkillsDir; "" none
	// SavedSkills is a host directory laid over Skills at SkillsDir, read-only
	// (an overlay: its files hide Skills' of the same name): one client's
	// saved skills, which no other client's jail sees. It needs Skills. With
	// Late, Late.Bind names it instead.
	SavedSkills string
	TmpSize     int64 // size of the tmpfs at /tmp

	Timeout   time.Duration // wall time, from the start, or from Begin
	Memory    int64         // bytes, memory+swap
	Pids      int           // processes and threads, the jail's own included: 0, or at least MinPids
	CPUs      float64       // CPU quota in cores
	MaxOutput int64         // per stream; the rest is read and dropped

	// Stdin, if not nil, is copied to the command's standard input until
	// it ends or the jail does. Reading stops with the jail: a Read still
	// blocked then is cut short if Stdin has SetReadDeadline (a pipe, a
	// connection), whose deadline is cleared again; any other reader must
	// return by itself (an io.Pipe its writer closes), and what it returns
	// after the jail has ended is dropped. A Stdin with a method
	// UseStdinPipe(*os.File) is not read: it gets the write end of the
	// command's stdin pipe once the jail has started, to write and close.
	Stdin          io.Reader
	Stdout, Stderr io.Writer // nil means discard; one writer for both shares one MaxOutput

	// Result, if not nil, receives what the command writes to its fd 3 (up
	// to MaxOutput): a channel for a runtime's result, apart from the
	// program's own output.
	Result io.Writer

	// Tools, if not nil, is a socket the command gets as its fd 4 (open
	// across its exec, like fd 3): the private channel of the execution's
	// tool calls, whose other end the caller serves. The jail passes a copy
	// to init and closes its own copy once init has it; Tools stays the
	// caller's to close.
	Tools *os.File

	// Files are placed read-only in the jail before the command starts, each
	// at a path under FilesDir.
	Files []File

	// Self, if not "", is a path under FilesDir where the running binary is
	// bound read-only: for a command that is this binary (the embedded
	// runtimes' workers), re-executed inside the jail with every layer on.
	Self string

	// Network, if not nil, gives the jail a network beyond lo. It is called
	// with the jail's network namespace once that exists and before the
	// command starts; what it returns is closed once the jail has exited.
	// Its error refuses the execution (layer "network"). Only root can set
	// up a jail's network: rootless, a Network is refused.
	Network func(netns *os.File) (io.Closer, error)
	// Nameserver is the one nameserver of the jail's /etc/resolv.conf; ""
	// leaves a resolver that answers nothing.
	Nameserver netip.Addr

	// Begin, if not nil, holds the Timeout back until it is closed: a warm
	// jail, built ahead of its work, waits for it first.
	Begin <-chan struct{}

	// Ended, if not nil, is called once, on Run's goroutine, with Run's
	// outcome as soon as it is known: when the command has exited (init
	// has reaped it and said so; or see EarlyExit), its output is read to
	// its end (every process holding a pipe has closed it) and no process
	// of the jail can raise a denied syscall any more; or with Run's
	// error. The jail's
	// teardown (init's exit with its namespaces, the network, the cgroup)
	// happens after it, and Run returns the same outcome once the jail is
	// gone.
	Ended func(*Result, error)

	// EarlyExit, with Ended, is for a command that reports on Result and
	// then exits at once (a language's runner): once every process of the
	// command has begun to exit, which the kernel says before it tears
	// their memory down (~0.6 ms for the engine's worker), and Result has
	// all they wrote, EarlyExit is asked for the command's exit code, from
	// its report; if it has one, Ended comes with it then, when the rest of
	// Stdout and Stderr is read too, not once init has reaped the command.
	// Without a seccomp listener, after the timeout's kill, ctx's or the
	// OOM killer's, or when it says no, Ended waits for init as without it.
	EarlyExit func() (code int, ok bool)

	// AllowDegraded names the layers (LayerCgroup, ...) that may be missing.
	AllowDegraded []string
}

// SkillsDir is where Spec.Skills is bound.
const SkillsDir = "/skills"

// FilesDir is where Spec.Files go, on the jail's read-only root.
const FilesDir = "/crucible"

// File is a file to place in the jail.
type File struct {
	Path string `json:"path"` // absolute, under FilesDir
	Data []byte `json:"data"`
	// Over lists files of the read-only root, from the host directories
	// the jail binds (such as /etc/ssl/certs/ca-certificates.crt), that
	// show this file instead: a program that reads the well-known path
	// gets Data without the host's file changing. A path that is not a
	// regular file in the jail's root is left as it is.
	Over []string `json:"over,omitempty"`
}

// Result is what happened.
type Result struct {
	ExitCode   int                   // the command's, or 124 (timeout), 137 (memory)
	Signal     string                // "SIGKILL" when a signal ended the command
	Truncated  bool                  // some output went past MaxOutput and was dropped
	Duration   time.Duration         // wall time of the execution
	LimitsHit  []string              // "timeout", "memory", "pids", "output"
	Violations []violation.Violation // denied operations, in the order first seen
	Degraded   []string              // layers that were allowed to be missing and were
	ResultCut  bool                  // the command's report on Result went past MaxOutput: Result got it cut
}

// MinPids is the smallest Spec.Pids the jail can run under. The pids limit
// counts the jail's own processes too: init, a Go program with a few
// threads (and, rootless, the stage that execs the command, another),
// holds up to 10 tasks at once (measured; see TestPidsFloor); the rest is
// margin. A lower non-zero limit is refused with a SetupError of LayerPids
// rather than let the jail's own runtime fail to start a thread.
const MinPids = 16

// SetupError says that a layer of the jail could not be set up. Its Error
// is safe to show to the model: it names the layer and the fix, never a
// host path; Detail, for the operator's log only, may.
type SetupError struct {
	Layer  string // "userns", "pids", "memory", "mount", "cgroup", "landlock", "seccomp", ...
	Msg    string // what failed
	Fix    string // what the operator can do
	Detail string `json:",omitempty"` // the internal error, host paths and all: never for the model
}

func (e *SetupError) Error() string {
	s := fmt.Sprintf("jail: %s: %s", e.Layer, e.Msg)
	if e.Fix != "" {
		s += " (fix: " + e.Fix + ")"
	}
	return s
}

// Exit codes for outcomes that are not the command's own.
const (
	ExitTimeout = 124 // the wall time limit killed it
	ExitSetup   = 125 // the jail could not be set up
	ExitMemory  = 137 // the memory limit killed it
)

// Check is one line of Diagnose's report.
type Check struct {
	Feature    string
	Status     string // StatusOK or StatusMissing
	Detail     string
	Fix        string
	Required   bool   // the jail refuses to run without it...
	Degradable string // ...unless this layer is allowed to be missing
}

// Check statuses.
const (
	StatusOK      = "ok"
	StatusMissing = "missing"
)

// LateWorkspace binds the workspace of a jail that is already running
// (Spec.Late): make one per jail with NewLateWorkspace, and Bind it once.
type LateWorkspace struct {
	mu   sync.Mutex // held by Bind while it waits for init's answer
	sock int        // our end of the socket to init; -1 before the jail runs and once it is over
	sent bool       // Bind has sent its mount
}

// NewLateWorkspace makes a LateWorkspace for one jail.
func NewLateWorkspace() *LateWorkspace { return &LateWorkspace{sock: -1} }
