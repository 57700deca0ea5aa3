package jail

import (
	"syscall"

	"github.com/cruciblehq/crucible/jail/internal/child"
)

// Re-exec markers: see package child, which runs these processes.
const (
	argInit  = child.ArgInit
	argProbe = child.ArgProbe
	argHold  = child.ArgHold
)

// The wire: the child side's types, as it reads them. (File and
// SetupError are this package's own, portable ones; the conversions to
// and from the child's are checked by the compiler, and by the tests.)
type (
	childSpec  = child.Spec
	childMsg   = child.Msg
	exitStatus = child.ExitStatus
)

// cloneError names the layer that a clone failing with errno points at.
func cloneError(errno syscall.Errno, what string) *SetupError {
	return (*SetupError)(child.CloneError(errno, what))
}

// childFiles is files as the child side takes them.
func childFiles(files []File) []child.File {
	out := make([]child.File, len(files))
	for i, f := range files {
		out[i] = child.File{Path: f.Path, Data: f.Data, Over: f.Over}
	}
	return out
}

// childLayers is layers as the child side takes them.
func childLayers(layers []Layer) []child.Layer {
	if len(layers) == 0 {
		return nil
	}
	out := make([]child.Layer, len(layers))
	for i, l := range layers {
		out[i] = child.Layer{Dir: l.Dir, Path: l.Path, What: l.What}
	}
	return out
}

// encodeFilter packs a seccomp program for childSpec.Filter.
var encodeFilter = child.EncodeFilter

// The timer slack of the jail's own processes, and a thread's.
const goSlack = child.GoSlack

var (
	setSlack = child.SetSlack
	ownSlack = child.OwnSlack
)

// receivedFD is the one descriptor a control message carries; recv reads
// a message.
var (
	receivedFD = child.ReceivedFD
	recv       = child.Recv
)
