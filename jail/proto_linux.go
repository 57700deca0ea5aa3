package jail

import "github.com/cruciblehq/crucible/jail/internal/child"

// Re-exec markers: see package child, which runs these processes.
const (
	argInit  = child.ArgInit
	argProbe = child.ArgProbe
	argHold  = child.ArgHold
)

// childSpec is everything the child side needs, sent as JSON: child.Spec
// on the other side (TestWire checks that the two agree).
type childSpec struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`

	Workspace     string   `json:"workspace,omitempty"`
	WorkspaceSize int64    `json:"workspace_size"`
	WorkspaceFD   int      `json:"workspace_fd,omitempty"` // init: a detached, idmapped workspace mount to use instead of the path
	ResultFD      int      `json:"result_fd,omitempty"`    // the result pipe's write end: in init where the supervisor put it, in the exec stage fdResult
	ToolsFD       int      `json:"tools_fd,omitempty"`     // the tools socket: in init where the supervisor put it, in the exec stage fdTools
	Files         []File   `json:"files,omitempty"`
	ReadOnly      []string `json:"ro,omitempty"`
	ReadOnlyFDs   []int    `json:"ro_fds,omitempty"` // init: detached mounts of ReadOnly, by index; 0 where the supervisor made none
	Skills        string   `json:"skills,omitempty"`
	SkillsFD      int      `json:"skills_fd,omitempty"` // init: a detached mount of Skills, if the supervisor could make one
	Self          string   `json:"self,omitempty"`      // where init binds its own binary
	SelfFD        int      `json:"self_fd,omitempty"`   // init: a detached mount of that binary, if the supervisor could make one
	TmpSize       int64    `json:"tmp_size"`
	Nameserver    string   `json:"nameserver,omitempty"`

	// Rootless: the supervisor could map only its own uid, so the command gets
	// a nested user namespace in which it is SandboxUID.
	Rootless bool `json:"rootless"`

	NoFile uint64 `json:"nofile"`
	FSize  uint64 `json:"fsize"`
	NProc  uint64 `json:"nproc,omitempty"` // only where no pids cgroup bounds the jail

	Filter        []byte `json:"filter"`          // seccomp program, see encodeFilter
	LandlockMay   bool   `json:"landlock_may"`    // Landlock may be missing
	NotifyMayFail bool   `json:"notify_may_fail"` // seccomp user notification may be missing
}

// childMsg travels from the children to the supervisor.
type childMsg struct {
	Error    *SetupError `json:"error,omitempty"`
	Degraded string      `json:"degraded,omitempty"` // a layer that was allowed to be missing and was
	Listener bool        `json:"listener,omitempty"` // the message carries the seccomp listener fd
	Exit     *exitStatus `json:"exit,omitempty"`
}

type exitStatus struct {
	Code   int `json:"code"`
	Signal int `json:"signal,omitempty"`
}

// encodeFilter packs a seccomp program for childSpec.Filter.
var encodeFilter = child.EncodeFilter
