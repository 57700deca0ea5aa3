package child

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cruciblehq/crucible/seccomp"

	"golang.org/x/sys/unix"
)

// Re-exec markers: the jail's child processes are this binary, started with
// one of these as argv[0]. Nothing else in argv or the environment is used.
const (
	ArgInit  = "crucible-jail-init"  // pid 1 of the jail: mounts, then reaps
	ArgExec  = "crucible-jail-exec"  // drops privileges and execs the command
	ArgProbe = "crucible-jail-probe" // exits at once: doctor's namespace check
	ArgHold  = "crucible-jail-hold"  // exits at EOF on stdin: holds a namespace open
)

// File descriptors the children inherit.
const (
	fdCtrl = 3 // SOCK_SEQPACKET to the supervisor: Msg, and the seccomp listener
	fdSpec = 4 // pipe carrying the Spec (EncodeSpec), read to EOF
	// The exec stage only: the result pipe, which becomes the command's fd 3.
	fdResult = 5
	// The exec stage only: the tools socket, which becomes the command's fd 4.
	fdTools = 6
	// The exec stage only: the tools channel's second pipe, which becomes
	// the command's fd 5.
	fdToolsOut = 7
)

// What package jail exports under the same names; its tests check that
// the two agree.
const (
	SandboxUID  = 1000
	SandboxName = "sandbox"
	Hostname    = "sandbox"
	ExitSetup   = 125
	MinPids     = 16

	LayerLandlock      = "landlock"
	LayerSeccompNotify = "seccomp_notify"
	LayerPids          = "pids"
	LayerMemory        = "memory"
	LayerUserns        = "userns"
)

// Spec is everything the child side needs, sent as EncodeSpec writes it:
// the child's reading of the supervisor's spec in package jail, field for
// field (its tests compare the two).
type Spec struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`

	Workspace     string   `json:"workspace,omitempty"`
	WorkspaceSize int64    `json:"workspace_size"`
	WorkspaceFD   int      `json:"workspace_fd,omitempty"` // init: a detached, idmapped workspace mount to use instead of the path
	LateFD        int      `json:"late_fd,omitempty"`      // init: a socket on which the supervisor sends the workspace's mount, once (bindLate); /workspace stays empty and read-only until then
	ResultFD      int      `json:"result_fd,omitempty"`    // the result pipe's write end: in init where the supervisor put it, in the exec stage fdResult
	ToolsFD       int      `json:"tools_fd,omitempty"`     // the tools socket: in init where the supervisor put it, in the exec stage fdTools
	ToolsOutFD    int      `json:"tools_out_fd,omitempty"` // the tools channel's second pipe: as ToolsFD, fdToolsOut
	Files         []File   `json:"files,omitempty"`
	ReadOnly      []string `json:"ro,omitempty"`
	ReadOnlyFDs   []int    `json:"ro_fds,omitempty"` // init: detached mounts of ReadOnly, by index; 0 where the supervisor made none
	Layers        []Layer  `json:"layers,omitempty"`
	Over          []Layer  `json:"over,omitempty"`    // each laid over the Layer of its Path once the root is built (layerOver)
	Self          string   `json:"self,omitempty"`    // where init binds its own binary
	SelfFD        int      `json:"self_fd,omitempty"` // init: a detached mount of that binary, if the supervisor could make one
	TmpSize       int64    `json:"tmp_size"`
	Nameserver    string   `json:"nameserver,omitempty"`

	// Rootless: the supervisor could map only its own uid, so the command gets
	// a nested user namespace in which it is SandboxUID.
	Rootless bool `json:"rootless"`

	NoFile uint64 `json:"nofile"`
	FSize  uint64 `json:"fsize"`
	NProc  uint64 `json:"nproc,omitempty"` // only where no pids cgroup bounds the jail

	// Slack is the command's timer slack in nanoseconds (see SetSlack):
	// init's own for a command of this binary, the supervisor's for any
	// other; 0 leaves init's.
	Slack uint64 `json:"slack,omitempty"`

	Filter        []byte `json:"-"`               // seccomp program, see EncodeFilter; after the JSON (EncodeSpec)
	FilterLen     int    `json:"filter_len"`      // its length there
	LandlockMay   bool   `json:"landlock_may"`    // Landlock may be missing
	NotifyMayFail bool   `json:"notify_may_fail"` // seccomp user notification may be missing
}

// Layer is jail.Layer: a host directory shown read-only at Path.
type Layer struct {
	Dir  string `json:"dir"`
	Path string `json:"path"`
	What string `json:"what"`
	FD   int    `json:"fd,omitempty"` // init: a detached mount of Dir, if the supervisor could make one
}

// File is jail.File: a file to place in the jail.
type File struct {
	Path string   `json:"path"`
	Data []byte   `json:"-"`   // after the JSON (EncodeSpec)
	Len  int      `json:"len"` // its length there
	Over []string `json:"over,omitempty"`
}

// EncodeSpec is the spec as it travels on fdSpec: its JSON, a newline, then
// the bytes that the JSON would otherwise carry in base64, the filter's and
// then each file's, in order. encoding/json reads a long string slowly,
// twice over, and in a fresh process cold: the filter and a Python
// runner's sources were most of init's reading its spec.
func EncodeSpec(s *Spec) ([]byte, error) {
	c := *s
	c.FilterLen = len(s.Filter)
	c.Files = make([]File, len(s.Files))
	n := len(s.Filter)
	for i, f := range s.Files {
		c.Files[i] = f
		c.Files[i].Len = len(f.Data)
		n += len(f.Data)
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	b = append(append(slices.Grow(b, 1+n), '\n'), s.Filter...)
	for _, f := range s.Files {
		b = append(b, f.Data...)
	}
	return b, nil
}

// DecodeSpec undoes EncodeSpec. The filter and the files' data are slices
// of b.
func DecodeSpec(b []byte) (*Spec, error) {
	head, rest, ok := bytes.Cut(b, []byte{'\n'}) // compact JSON holds no newline
	if !ok {
		return nil, errors.New("no end to the spec's JSON")
	}
	var s Spec
	if err := json.Unmarshal(head, &s); err != nil {
		return nil, err
	}
	take := func(n int) ([]byte, error) {
		if n < 0 || n > len(rest) {
			return nil, fmt.Errorf("the spec names %d bytes of data where %d are left", n, len(rest))
		}
		d := rest[:n:n]
		rest = rest[n:]
		return d, nil
	}
	var err error
	if s.Filter, err = take(s.FilterLen); err != nil {
		return nil, err
	}
	for i := range s.Files {
		if s.Files[i].Data, err = take(s.Files[i].Len); err != nil {
			return nil, err
		}
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%d bytes after the spec's data", len(rest))
	}
	return &s, nil
}

// Msg travels from the children to the supervisor.
type Msg struct {
	Error    *SetupError `json:"error,omitempty"`
	Degraded string      `json:"degraded,omitempty"` // a layer that was allowed to be missing and was
	Listener bool        `json:"listener,omitempty"` // the message carries the seccomp listener fd
	Exit     *ExitStatus `json:"exit,omitempty"`
}

// ExitStatus is how the command ended, and what it cost: its CPU time
// (user and system) and page faults, with those of the descendants it
// waited for, as init's wait4 reports them. The supervisor's early end
// (endEarly) makes one of its own, with a code alone.
type ExitStatus struct {
	Code   int   `json:"code"`
	Signal int   `json:"signal,omitempty"`
	CPU    int64 `json:"cpu_us,omitempty"`
	Faults int64 `json:"faults,omitempty"`
}

// SetupError is jail.SetupError as it travels: a layer that could not be
// set up. Msg and Fix may reach the model, so they name no host path;
// Detail is for the operator.
type SetupError struct {
	Layer  string
	Msg    string
	Fix    string
	Detail string `json:",omitempty"`
}

// Recv reads one message of a SOCK_SEQPACKET socket, and its control
// data, again after a signal: n is 0 once the other end is closed.
func Recv(fd int, buf, oob []byte) (n, oobn int, err error) {
	for {
		n, oobn, _, _, err = unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			return n, oobn, err
		}
	}
}

// send writes one message on the control socket, with an fd if fd >= 0.
func send(m Msg, fd int) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	if err := unix.Sendmsg(fdCtrl, b, oob, nil, 0); err != nil {
		return fmt.Errorf("sending to the supervisor: %w", err)
	}
	return nil
}

// EncodeFilter packs a seccomp program as the kernel lays it out, 8 bytes an
// instruction: in JSON that is base64, a fraction of an object per instruction
// to decode, twice per execution.
func EncodeFilter(prog []seccomp.Instruction) []byte {
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

// DecodeFilter undoes EncodeFilter.
func DecodeFilter(b []byte) ([]seccomp.Instruction, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("seccomp program of %d bytes", len(b))
	}
	prog := make([]seccomp.Instruction, len(b)/8)
	for i := range prog {
		in := b[8*i:]
		prog[i] = seccomp.Instruction{Code: binary.LittleEndian.Uint16(in), Jt: in[2], Jf: in[3], K: binary.LittleEndian.Uint32(in[4:])}
	}
	return prog, nil
}
