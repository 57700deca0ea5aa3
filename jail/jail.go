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
// [Run] runs a command to its end. [Create] returns a created [Jail],
// whose methods are its lifecycle, as runc creates a container, then
// starts it (and os/exec's Cmd has Start and Wait): Network gives it a
// network, Start starts its command ([Start] does both steps at once),
// Bind attaches a late workspace, Begin starts the timeout, Stdin hands
// over the stdin pipe, Wait returns the outcome as soon as it is known,
// and Close waits for the teardown.
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
	WorkspaceSize int64  // size of the tmpfs workspace when Workspace is "" and Late is false
	// Late binds the workspace once the jail runs (Workspace is then ""):
	// until Jail.Bind, /workspace is an empty, read-only directory, so
	// that nothing the command does before its work arrives reaches any
	// workspace. A command whose working directory is /workspace enters it
	// again once its work arrives.
	Late     bool
	ReadOnly []string // extra host paths bound read-only at the same path
	// Layers are host directories bound read-only, each at a Path of its
	// own.
	Layers []Layer
	// Over are host directories laid over the Layer of the same Path,
	// read-only: an overlay, whose files hide the Layer's of the same
	// name. With Late, Jail.Bind names them instead.
	Over    []Layer
	TmpSize int64 // size of the tmpfs at /tmp

	Timeout   time.Duration // wall time, from Jail.Begin (Run begins at once)
	Memory    int64         // bytes, memory+swap
	Pids      int           // processes and threads, the jail's own included: 0, or at least MinPids
	CPUs      float64       // CPU quota in cores
	MaxOutput int64         // per stream; the rest is read and dropped

	// Stdin, if not nil, is copied to the command's standard input until
	// it ends or the jail does. Reading stops with the jail: a Read still
	// blocked then is cut short if Stdin has SetReadDeadline (a pipe, a
	// connection), whose deadline is cleared again; any other reader must
	// return by itself (an io.Pipe its writer closes), and what it returns
	// after the jail has ended is dropped.
	Stdin io.Reader
	// StdinPipe, instead of Stdin, makes the command's standard input a
	// pipe whose write end Jail.Stdin hands over, to write and close:
	// a warm jail's job, written the moment it arrives, with no copy
	// between.
	StdinPipe      bool
	Stdout, Stderr io.Writer // nil means discard; one writer for both shares one MaxOutput

	// Result, if not nil, receives what the command writes to its fd 3 (up
	// to MaxOutput): a channel for a runtime's result, apart from the
	// program's own output.
	Result io.Writer

	// ReportedExit, if not nil, reads the command's exit code from its
	// report on Result (up to MaxOutput), for a command that reports and
	// then exits at once (a language's runner): see Jail.Wait. It says
	// whether the report has one.
	ReportedExit func(report []byte) (code int, ok bool)

	// Tools, if not nil, is a socket the command gets as its fd 4 (open
	// across its exec, like fd 3): the private channel of the execution's
	// tool calls, whose other end the caller serves. The jail passes a copy
	// to init and closes its own copy once init has it; Tools stays the
	// caller's to close.
	Tools *os.File
	// ToolsOut, if not nil, makes the channel two pipes: Tools is then the
	// read end of the answers' pipe, and ToolsOut the write end of the
	// requests', the command's fd 5, passed as Tools is. The jail gives
	// both to the sandbox user, as it does the result pipe, so that the
	// command may open them again by /dev/fd/N.
	ToolsOut *os.File

	// Files are placed read-only in the jail before the command starts, each
	// at a path under FilesDir.
	Files []File

	// Self, if not "", is a path under FilesDir where the running binary is
	// bound read-only: for a command that is this binary (the embedded
	// runtimes' workers), re-executed inside the jail with every layer on.
	Self string

	// Nameserver is the one nameserver of the jail's /etc/resolv.conf
	// (Jail.Network gives the jail one to reach); "" leaves a resolver
	// that answers nothing.
	Nameserver netip.Addr

	// AllowDegraded names the layers (LayerCgroup, ...) that may be missing.
	AllowDegraded []string
}

// SameWriter reports whether a and b are the same writer (and not nil):
// the jail then gives stdout and stderr one pipe and one MaxOutput, as
// os/exec shares a pipe, so a caller that wraps them keeps them one.
func SameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // not comparable: not the same
		}
	}()
	return a != nil && a == b
}

// Layer is a host directory that the jail shows read-only (Spec.Layers,
// Spec.Over).
type Layer struct {
	Dir  string // the host directory
	Path string // where the jail shows it: absolute and clean, not /workspace or under it
	What string // what Dir is, in words the model may read (never a host path): errors name it so
}

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
