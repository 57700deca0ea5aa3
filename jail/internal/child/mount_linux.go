package child

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// staging is where the new root is assembled before pivot_root. Every host
// path the jail binds is cloned with open_tree before the tmpfs covers it, so
// binding a source that lives under /tmp (a test's workspace) still works.
const staging = "/tmp"

// rootLinks are the top-level names that merged-/usr systems make symlinks
// into /usr; on older systems they are directories and are bound read-only.
var rootLinks = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// etcBinds are the only host files under /etc the jail sees: the dynamic
// linker's cache, the CA certificates, and Debian's alternatives (symlinks
// only, without which awk, editor, ... do not resolve).
var etcBinds = []string{"/etc/ld.so.cache", "/etc/ssl/certs", "/etc/pki/tls/certs", "/etc/alternatives"}

// workspaceDir is where the workspace is mounted, in a directory of its
// own: /workspace is a symlink to it. Landlock skips a mount point that a
// mount covers when it walks up from a file, so the rule that lets the
// command write its workspace is on the parent, /run, which holds nothing
// else. A rule on the mount's own root would have to be made after the
// mount, and a workspace bound late (Spec.LateFD) is mounted after
// the command has its Landlock domain.
const workspaceDir = "/run/workspace"

// devNodes are bound from the host; a user namespace cannot mknod.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// bind is one host path to appear inside the jail.
type bind struct {
	src, dst string // dst is relative to the new root
	what     string // what src is, in words the model may read: no host path
	rw       bool
	dev      bool // keep device nodes usable
	dir      bool // src is a directory (learnt from the clone: /tmp is covered later)
	fd       int  // detached mount of src; 0 until cloned (fd 0 is stdin, never a mount)
}

// setupRoot builds the jail's root filesystem and pivots into it.
func setupRoot(s *Spec) error {
	// Nothing we mount may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	binds, links, err := planBinds(s)
	if err != nil {
		return err
	}
	over := make([]int, len(s.Over)) // laid over their layers once the root is built
	for i, o := range s.Over {
		over[i] = o.FD
		if over[i] <= 0 {
			fd, err := unix.OpenTree(unix.AT_FDCWD, o.Dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
			if err != nil {
				return &bindError{&bind{src: o.Dir, what: o.What}, "cloning", err}
			}
			over[i] = fd
		}
		defer unix.Close(over[i])
	}
	// Clone every source first: after this, host paths are never resolved again.
	if err := cloneBinds(binds); err != nil {
		return err
	}
	if err := populate(s, links); err != nil {
		return err
	}
	if err := mountAll(s, binds); err != nil {
		return err
	}
	if err := pivot(); err != nil {
		return err
	}
	for i, o := range s.Over {
		if err := layerOver(over[i], o.Path, o.What); err != nil {
			return err
		}
	}
	return nil
}

// planBinds lists what s binds into the jail, and the symlinks of its
// root: name, target.
func planBinds(s *Spec) (binds []*bind, links [][2]string, err error) {
	binds = []*bind{{src: "/usr", dst: "usr", what: "/usr"}}
	for _, name := range rootLinks {
		p := "/" + name
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil, nil, fmt.Errorf("reading /%s: %w", name, err)
			}
			links = append(links, [2]string{name, target})
		case fi.IsDir():
			binds = append(binds, &bind{src: p, dst: name, what: p})
		}
	}
	for _, p := range etcBinds {
		if _, err := os.Stat(p); err == nil {
			binds = append(binds, &bind{src: p, dst: p[1:], what: p})
		}
	}
	for _, n := range devNodes {
		binds = append(binds, &bind{src: "/dev/" + n, dst: "dev/" + n, what: "/dev/" + n, rw: true, dev: true})
	}
	for i, p := range s.ReadOnly {
		b := &bind{src: p, dst: strings.TrimPrefix(path.Clean(p), "/"), what: "a path to bind read-only"}
		if i < len(s.ReadOnlyFDs) {
			b.fd = s.ReadOnlyFDs[i] // cloned by the supervisor; 0: clone it here
		}
		binds = append(binds, b)
	}
	for _, l := range s.Layers {
		binds = append(binds, &bind{src: l.Dir, dst: l.Path[1:], what: l.What, fd: l.FD})
	}
	if s.SelfFD > 0 {
		binds = append(binds, &bind{src: "this binary", dst: s.Self[1:], what: "this binary", fd: s.SelfFD})
	} else if s.Self != "" {
		// Our /proc/self/exe names a mount of the host's namespace, which
		// open_tree refuses: bind its path, as this namespace's copy has it.
		exe, err := os.Readlink("/proc/self/exe")
		if err != nil {
			return nil, nil, fmt.Errorf("finding this binary: %w", err)
		}
		if !path.IsAbs(exe) {
			return nil, nil, errors.New("this binary was deleted or replaced: restart crucible")
		}
		binds = append(binds, &bind{src: exe, dst: s.Self[1:], what: "this binary"})
	}
	if s.Workspace != "" {
		b := &bind{src: s.Workspace, dst: workspaceDir[1:], what: "the workspace", rw: true, fd: -1}
		if s.WorkspaceFD > 0 {
			b.fd = s.WorkspaceFD // idmapped by the supervisor
		}
		binds = append(binds, b)
	}
	return binds, links, nil
}

// cloneBinds gives each bind its detached mount, cloned here unless the
// supervisor sent one, with the bind's flags.
func cloneBinds(binds []*bind) error {
	for _, b := range binds {
		if b.fd <= 0 {
			fd, err := unix.OpenTree(unix.AT_FDCWD, b.src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
			if err != nil {
				return &bindError{b, "cloning", err}
			}
			b.fd = fd
		}
		fd := b.fd
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return &bindError{b, "stat of", err}
		}
		b.dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID, Propagation: unix.MS_PRIVATE}
		if !b.rw {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if !b.dev {
			attr.Attr_set |= unix.MOUNT_ATTR_NODEV
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return &bindError{b, "setting mount flags on", err}
		}
	}
	return nil
}

// at is the path rel of the root being built.
func at(rel string) string { return path.Join(staging, rel) }

// populate mounts the root's tmpfs at staging and fills it: its
// directories and symlinks, /etc, s.Files, /dev's links.
func populate(s *Spec, links [][2]string) error {
	rootSize := 4 << 20
	for _, f := range s.Files {
		rootSize += len(f.Data) + 4096
	}
	if err := unix.Mount("tmpfs", staging, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", rootSize)); err != nil {
		return fmt.Errorf("mounting the root tmpfs: %w", err)
	}
	for _, d := range []string{"usr", "etc", "dev", "proc", "tmp", "run", workspaceDir[1:]} {
		if err := os.Mkdir(at(d), 0o755); err != nil {
			return err
		}
	}
	for _, l := range s.Layers {
		if s.LateFD > 0 || slices.ContainsFunc(s.Over, func(o Layer) bool { return o.Path == l.Path }) {
			if err := os.MkdirAll(at(overStaging(l.Path)), 0o755); err != nil {
				return err
			}
		}
	}
	if err := os.Symlink(workspaceDir, at("workspace")); err != nil {
		return err
	}
	for _, l := range links {
		if err := os.Symlink(l[1], at(l[0])); err != nil {
			return err
		}
	}
	if err := writeEtc(at("etc"), s.Nameserver); err != nil {
		return err
	}
	for _, f := range s.Files {
		// Paths were checked by the supervisor: absolute, clean, under FilesDir.
		dst := at(f.Path)
		if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, f.Data, 0o444); err != nil {
			return err
		}
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"shm", "/tmp"}} {
		if err := os.Symlink(l[1], at("dev/"+l[0])); err != nil {
			return err
		}
	}
	return nil
}

// mountAll mounts the root's filesystems: /tmp's tmpfs, the workspace's
// if it has one, the binds, the files over host files, and /proc.
func mountAll(s *Spec, binds []*bind) error {
	// The tmpfs mounts go first, so that a read-only bind below /tmp lands
	// on top of them rather than under them.
	tmpOpts := fmt.Sprintf("size=%d,mode=1777", s.TmpSize)
	if err := unix.Mount("tmpfs", at("tmp"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpOpts); err != nil {
		return fmt.Errorf("mounting /tmp: %w", err)
	}
	if s.Workspace == "" && s.LateFD == 0 {
		// Owned by the command: SandboxUID here, or, rootless, our 0, which
		// the command's nested user namespace maps to SandboxUID.
		owner := SandboxUID
		if s.Rootless {
			owner = 0
		}
		opts := fmt.Sprintf("size=%d,mode=0755,uid=%d,gid=%d", s.WorkspaceSize, owner, owner)
		if err := unix.Mount("tmpfs", at(workspaceDir), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mounting /workspace: %w", err)
		}
	}
	for _, b := range binds {
		dst := at(b.dst)
		if err := mountpoint(dst, b.dir); err != nil {
			return &bindError{b, "preparing the mount point of", err}
		}
		if err := unix.MoveMount(b.fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return &bindError{b, "binding", err}
		}
		unix.Close(b.fd)
	}
	for _, f := range s.Files {
		for _, o := range f.Over {
			if err := cover(at(f.Path), o); err != nil {
				return fmt.Errorf("placing a file over %s: %w", o, err)
			}
		}
	}
	return mountProc()
}

// mountProc mounts a procfs of the jail's own pid namespace: only the
// jail's processes.
func mountProc() error {
	if err := unix.Mount("proc", at("proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	// /proc/sys is owned by host root and so not writable by the sandbox user;
	// make it read-only for every user as well, as defence in depth.
	if err := unix.Mount(at("proc/sys"), at("proc/sys"), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding /proc/sys: %w", err)
	}
	if err := unix.Mount("", at("proc/sys"), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("remounting /proc/sys read-only: %w", err)
	}
	return nil
}

// pivot makes the root built at staging the root, read-only. pivot_root
// with new and old root the same directory stacks the old root under the
// new one; detaching it leaves no path back to the host.
func pivot() error {
	if err := unix.Chdir(staging); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remounting / read-only: %w", err)
	}
	return nil
}

// overStaging is where a directory laid over the layer at dst waits while
// layerOver lays it there: an empty directory after (/run/skills for
// /skills).
func overStaging(dst string) string { return "/run" + dst }

// layerOver lays mnt, a detached mount of what, over the layer at dst: an
// overlay of the two, read-only, mnt on top. The overlay keeps its own
// copies of its layers, so the mount at its staging is detached again at
// once.
func layerOver(mnt int, dst, what string) error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("setting mount flags on %s: %w", what, err)
	}
	staging := overStaging(dst)
	if err := unix.MoveMount(mnt, "", unix.AT_FDCWD, staging, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("binding %s: %w", what, err)
	}
	// Should the detach fail, the command sees mnt's files twice.
	defer func() { _ = unix.Unmount(staging, unix.MNT_DETACH) }()
	err := unix.Mount("overlay", dst, "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "lowerdir="+staging+":"+dst)
	if err != nil {
		return fmt.Errorf("laying %s over %s: %w", what, dst, err)
	}
	return nil
}

// cover binds the file src, read-only, over dst in the root being built:
// dst as the new root resolves it, so that a symlink in a bound host
// directory leads inside the root, never to the host's file. A dst that is
// not a regular file there is left alone.
func cover(src, dst string) error {
	root, err := unix.Open(staging, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	t, err := unix.Openat2(root, dst, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(t)
	var st unix.Stat_t
	if err := unix.Fstat(t, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return err
	}
	return unix.MoveMount(fd, "", t, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// bindError is a bind that failed. Its Error names the host path, for the
// operator; mountError words it for the model.
type bindError struct {
	b   *bind
	op  string
	err error
}

func (e *bindError) Error() string { return e.op + " " + e.b.src + ": " + e.err.Error() }
func (e *bindError) Unwrap() error { return e.err }

// mountError turns a failure to build the root into a SetupError whose
// message and fix fit the cause, keeping host paths out of both.
func mountError(err error) *SetupError {
	se := &SetupError{Layer: "mount", Detail: err.Error(), Fix: "run 'crucible doctor'"}
	var be *bindError
	switch {
	case !errors.As(err, &be):
		se.Msg = "building the jail's root: " + pathless(err).Error()
	case be.op == "cloning" && errors.Is(err, unix.ENOENT):
		se.Msg = be.b.what + " was not found on the host"
		se.Fix = "check the host paths given to the jail to bind (read-only paths, runtimes, the workspace)"
	default:
		se.Msg = be.op + " " + be.b.what + ": " + pathless(be.err).Error()
	}
	if errors.Is(err, unix.ENOSYS) {
		se.Fix = "use Linux 5.12 or later (open_tree, move_mount, mount_setattr)"
	}
	return se
}

// mountpoint creates an empty directory (or file) at dst, with its parents.
func mountpoint(dst string, dir bool) error {
	if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return err
	}
	if dir {
		err := os.Mkdir(dst, 0o755)
		if os.IsExist(err) {
			return nil
		}
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// writeEtc synthesizes the jail's /etc: nothing of the host's but what
// etcBinds names.
func writeEtc(dir, nameserver string) error {
	// Without a network, a resolver that answers nothing, at once.
	resolv := "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n"
	if nameserver != "" {
		resolv = "nameserver " + nameserver + "\noptions attempts:2 timeout:2\n"
	}
	files := map[string]string{
		"passwd": fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%d:%d:%s:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			SandboxName, SandboxUID, SandboxUID, SandboxName),
		"group":         fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", SandboxName, SandboxUID),
		"hosts":         "127.0.0.1\tlocalhost " + Hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname":      Hostname + "\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
		"resolv.conf":   resolv,
	}
	for name, content := range files {
		if err := os.WriteFile(path.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// bindLate attaches at workspaceDir the one mount that the supervisor sends
// on the socket fd once the jail's work arrives (Spec.LateFD), and answers
// "ok", or why not. Until then /workspace is the empty directory of the
// read-only root. It runs beside init's reaping, on a thread of init's
// that has every privilege of the jail. The socket is its own, not the
// control socket, so that the supervisor's caller reads the answer itself:
// one wake-up fewer than through the control socket's reader. layers are
// the jail's, over which the message may lay others.
func bindLate(fd int, layers []Layer) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(maxLateFDs*4))
	n, oobn, err := Recv(fd, buf, oob)
	if err != nil || n == 0 {
		return // the supervisor is gone: init ends with the jail
	}
	_ = unix.Sendmsg(fd, []byte(attachLate(buf[:n], oob[:oobn], layers)), nil, nil, 0) // one workspace per jail
}

// maxLateFDs bounds the mounts of one late bind: the workspace's, and
// those laid over the jail's layers.
const maxLateFDs = 16

// attachLate attaches the mounts that oob carries: the workspace's, and
// then those that msg names to lay over layers (layerOver). It says "ok",
// or why not.
func attachLate(msg, oob []byte, layers []Layer) string {
	fds := ReceivedFDs(oob)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var over []Layer
	if err := json.Unmarshal(msg, &over); err != nil || len(fds) != 1+len(over) {
		return "the workspace's mount did not arrive"
	}
	for _, o := range over {
		if !slices.ContainsFunc(layers, func(l Layer) bool { return l.Path == o.Path }) {
			return "no layer at " + o.Path
		}
	}
	if err := unix.MoveMount(fds[0], "", unix.AT_FDCWD, workspaceDir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "move_mount: " + err.Error()
	}
	for i, o := range over {
		if err := layerOver(fds[1+i], o.Path, o.What); err != nil {
			return err.Error()
		}
	}
	return "ok"
}

// ReceivedFD is the one descriptor that oob carries, if that is what it is.
func ReceivedFD(oob []byte) (int, bool) {
	fds := ReceivedFDs(oob)
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, false
	}
	return fds[0], true
}

// ReceivedFDs are the descriptors that oob carries, in one message.
func ReceivedFDs(oob []byte) []int {
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(cms) != 1 {
		return nil
	}
	fds, err := unix.ParseUnixRights(&cms[0])
	if err != nil {
		return nil
	}
	return fds
}
