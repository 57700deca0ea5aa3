package jail

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// errNotRunning is Bind's error for a jail that is not running.
var errNotRunning = errors.New("jail: the jail is not running, or its workspace is bound already")

// Bind attaches dir, a host directory, at the running jail's /workspace,
// as Spec.Workspace would have been (idmapped where the filesystem allows),
// and, unless saved is "", lays saved over the jail's /skills as
// Spec.SavedSkills would have been. It returns once they are there: the
// command may be handed its work then. It is called once, from any
// goroutine, after the jail has started (its Spec.Stdin has its pipe,
// say); it fails once the jail is over.
func (l *LateWorkspace) Bind(dir, saved string) error {
	fd, err := workspaceMount(dir)
	if err != nil {
		return &SetupError{Layer: "workspace", Msg: "the workspace could not be bound", Detail: err.Error()}
	}
	defer unix.Close(fd)
	fds := []int{fd}
	if saved != "" {
		sfd, err := unix.OpenTree(unix.AT_FDCWD, saved, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return &SetupError{Layer: "workspace", Msg: "the client's saved skills could not be bound", Detail: err.Error()}
		}
		defer unix.Close(sfd)
		fds = append(fds, sfd)
	}
	// Held until init answers, or ends: end waits for it before it
	// closes the socket.
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent || l.sock < 0 {
		return errNotRunning
	}
	l.sent = true
	if err := unix.Sendmsg(l.sock, []byte{0}, unix.UnixRights(fds...), nil, 0); err != nil {
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
func (l *LateWorkspace) socket() (int, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	l.mu.Lock()
	l.sock = fds[0]
	l.mu.Unlock()
	return fds[1], nil
}

// end says that the jail is over (or never ran), once Bind, if it waits,
// has its answer, and closes our end of the socket.
func (l *LateWorkspace) end() {
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
