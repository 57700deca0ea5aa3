package jail

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// cloneDir returns a detached bind mount of the directory dir, and dir's
// owner. Not through a symlink: the jail may have planted one in a
// directory that the operator later hands over as a workspace, and the
// idmap would give it the owner's rights on wherever the link points.
func cloneDir(dir string) (int, *unix.Stat_t, error) {
	dfd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, nil, fmt.Errorf("opening the workspace: %w", err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return -1, nil, err
	}
	fd, err := unix.OpenTree(dfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, nil, fmt.Errorf("open_tree: %w", err)
	}
	return fd, &st, nil
}

// idmap makes the detached mount fd show st's owner as the sandbox user.
func idmap(fd int, st *unix.Stat_t) error {
	ns, err := idmapNamespace(int(st.Uid), int(st.Gid))
	if err != nil {
		return err
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns)}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("mount_setattr(MOUNT_ATTR_IDMAP): %w", err)
	}
	return nil
}

// idmapNamespaces caches, per owner, a user namespace that maps the owner's
// uid and gid to the sandbox user's host ids. Making one costs a process, and
// a long-running supervisor sees the same few owners again and again.
var idmapNamespaces sync.Map // [2]int{uid, gid} -> int (fd)

var idmapMu sync.Mutex

func idmapNamespace(uid, gid int) (int, error) {
	base := jailIDs().base
	if base < 0 {
		// The command's writes are ours already: nothing to map.
		return -1, errors.New("only one id is mapped")
	}
	key := [2]int{uid, gid}
	if fd, ok := idmapNamespaces.Load(key); ok {
		return fd.(int), nil
	}
	idmapMu.Lock()
	defer idmapMu.Unlock()
	if fd, ok := idmapNamespaces.Load(key); ok {
		return fd.(int), nil
	}
	// A child that waits for EOF on stdin holds the namespace open while we
	// take a descriptor of it.
	r, w, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	defer r.Close()
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{argHold}, Env: childEnv, Stdin: r,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: base + SandboxUID, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: base + SandboxUID, Size: 1}},
			Pdeathsig:   syscall.SIGKILL,
		}}
	if err := cmd.Start(); err != nil {
		w.Close()
		return -1, fmt.Errorf("creating an idmap user namespace: %w", err)
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	w.Close()
	_ = cmd.Wait()
	if err != nil {
		return -1, fmt.Errorf("opening the idmap user namespace: %w", err)
	}
	idmapNamespaces.Store(key, fd)
	return fd, nil
}
