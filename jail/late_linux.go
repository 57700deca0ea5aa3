package jail

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// errNotRunning is Bind's error for a jail that is not running, or has no
// late workspace.
var errNotRunning = errors.New("jail: the jail is not running, or its workspace is bound already")

// lateWorkspace binds the workspace of a jail that is already running
// (Spec.Late), once.
type lateWorkspace struct {
	mu   sync.Mutex // held by bind while it waits for init's answer
	sock int        // our end of the socket to init; -1 before the jail runs and once it is over
	sent bool       // bind has sent its mount
}

func newLateWorkspace() *lateWorkspace { return &lateWorkspace{sock: -1} }

// Bind attaches dir, a host directory, at the running jail's /workspace,
// as Spec.Workspace would have been (idmapped where the filesystem allows),
// and lays each of over on the Layer of its Path, as Spec.Over would have
// been: for a jail whose Spec has Late. It returns once they are there:
// the command may be handed its work then. It may be called once, from
// any goroutine; it fails once the jail is over.
func (j *Jail) Bind(dir string, over ...Layer) error {
	if j.x.late == nil || !j.started.Load() {
		return errNotRunning // unstarted, init would not answer
	}
	return j.x.late.bind(dir, over)
}

func (l *lateWorkspace) bind(dir string, over []Layer) error {
	fd, err := workspaceMount(dir)
	if err != nil {
		return &SetupError{Layer: "workspace", Msg: "the workspace could not be bound", Detail: err.Error()}
	}
	defer unix.Close(fd)
	fds := []int{fd}
	for _, o := range over {
		ofd, err := openTree(o.Dir)
		if err != nil {
			return &SetupError{Layer: "workspace", Msg: o.What + " could not be bound", Detail: err.Error()}
		}
		defer unix.Close(ofd)
		fds = append(fds, ofd)
	}
	// What init lays where: the fds after the workspace's, in order.
	msg, err := json.Marshal(childLayers(over))
	if err != nil {
		return err
	}
	// Held until init answers, or ends: end waits for it before it
	// closes the socket.
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent || l.sock < 0 {
		return errNotRunning
	}
	l.sent = true
	if err := unix.Sendmsg(l.sock, msg, unix.UnixRights(fds...), nil, 0); err != nil {
		return errNotRunning // init is gone
	}
	buf := make([]byte, 256)
	n, _, err := recv(l.sock, buf, nil)
	switch {
	case err != nil || n == 0:
		return errNotRunning // init ended without a word
	case string(buf[:n]) != "ok":
		return &SetupError{Layer: "workspace", Msg: "the workspace could not be attached", Detail: strings.ToValidUTF8(string(buf[:n]), "?")}
	}
	return nil
}

// workspaceMount returns a detached bind mount of dir to attach at a jail's
// /workspace, nosuid and nodev. It is idmapped where it can be: dir's owner
// then appears as the sandbox user, so the command, running as an
// unprivileged host uid, can write the operator's directory, and what it
// creates belongs to that directory's owner on the host. That needs a
// filesystem that supports idmapped mounts (ext4, xfs, btrfs, tmpfs,
// overlayfs, ...) mounted in our user namespace or one we own; without it
// the command writes dir only where its permissions let the sandbox's host
// uid write.
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

// socket makes the socket to init, and returns init's end.
func (l *lateWorkspace) socket() (int, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	l.mu.Lock()
	l.sock = fds[0]
	l.mu.Unlock()
	return fds[1], nil
}

// end says that the jail is over (or never ran), once bind, if it waits,
// has its answer, and closes our end of the socket.
func (l *lateWorkspace) end() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sock >= 0 {
		unix.Close(l.sock)
		l.sock = -1
	}
	l.sent = true // no Bind after the end
}
