package jail

import (
	"errors"

	"golang.org/x/sys/unix"
)

// errNotRunning is Bind's error for a jail that is not running.
var errNotRunning = errors.New("jail: the jail is not running, or its workspace is bound already")

// Bind attaches dir, a host directory, at the running jail's /workspace,
// as Spec.Workspace would have been (idmapped where the filesystem allows),
// and returns once it is there: the command may be handed its work then.
// It is called once, from any goroutine, after the jail has started (its
// Spec.Stdin has its pipe, say); it fails once the jail is over.
func (l *LateWorkspace) Bind(dir string) error {
	fd, err := workspaceMount(dir)
	if err != nil {
		return &SetupError{Layer: "workspace", Msg: "the workspace could not be bound", Detail: err.Error()}
	}
	defer unix.Close(fd)
	l.mu.Lock()
	if l.sent || l.ctrl < 0 {
		l.mu.Unlock()
		return errNotRunning
	}
	l.sent = true
	// Under mu: end, which closes the socket after it, waits for this.
	err = unix.Sendmsg(l.ctrl, []byte{0}, unix.UnixRights(fd), nil, 0)
	l.mu.Unlock()
	if err != nil {
		return errNotRunning // init is gone
	}
	select {
	case why := <-l.answer:
		if why != "" {
			return &SetupError{Layer: "workspace", Msg: "the workspace could not be attached", Detail: why}
		}
		return nil
	case <-l.over:
		return errNotRunning
	}
}

// workspaceMount returns a detached bind mount of dir to attach at a jail's
// /workspace: idmapped if it can be (see idmappedBind), else as it is.
func workspaceMount(dir string) (int, error) {
	fd, st, err := cloneDir(dir)
	if err != nil {
		return -1, err
	}
	_ = idmap(fd, st) // best effort, as for a Spec.Workspace: see start
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// start lets Bind reach the jail's init, through ctrl.
func (l *LateWorkspace) start(ctrl int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ctrl = ctrl
}

// bound passes on init's answer.
func (l *LateWorkspace) bound(why string) {
	select {
	case l.answer <- why:
	default:
	}
}

// end says that the jail is over, before its control socket is closed.
func (l *LateWorkspace) end() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ctrl = -1
	select {
	case <-l.over:
	default:
		close(l.over)
	}
}
