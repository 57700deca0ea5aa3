package workspace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cruciblehq/crucible/userns"
)

// instance is one server's directory under the root, locked (flock) for as
// long as the server lives: the kernel drops the lock when the process
// dies, however it dies, which is how the next server tells a dead
// instance from a live one. The root's own lock orders the servers that
// open, sweep and close instances, so that none sweeps an instance another
// is still making.
type instance struct {
	root string
	dir  string
	lock *os.File // the instance's directory, locked; close-on-exec, so no jail or server child keeps it
}

// maxOpenTries bounds Open's retries when another server removes the root
// between our mkdir and our lock.
const maxOpenTries = 5

func openInstance(root string) (*instance, error) {
	for range maxOpenTries {
		r, err := lockRoot(root)
		if errors.Is(err, errRootGone) {
			continue
		}
		if err != nil {
			return nil, err
		}
		inst, err := makeInstance(root)
		r.Close() // unlocks
		return inst, err
	}
	return nil, fmt.Errorf("workspace: %s keeps being removed", root)
}

var errRootGone = errors.New("the root was removed")

// errNotOurs is lockRoot's refusal of a root that another user made or
// could change: a link, not a directory, or not ours alone.
var errNotOurs = errors.New("not this user's alone")

// runDir is root's fallback for the default root, in a directory only
// root may make; a variable for the tests.
var runDir = "/run/crucible"

// openDefault opens the default root, crucible-workspaces-UID in the
// temporary directory. Any user may make that name first (the directory
// is shared): it is refused then, as is any root not ours, but instead of
// refusing to start we use a directory of our own, and say which: the
// one in $XDG_RUNTIME_DIR, else runDir's, else a fresh one, which the
// last close removes like any root.
func openDefault(log *slog.Logger) (*instance, error) {
	name := "crucible-workspaces-" + strconv.Itoa(userns.HostUID())
	taken := filepath.Join(os.TempDir(), name)
	inst, err := openInstance(taken)
	if !errors.Is(err, errNotOurs) {
		return inst, err
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && private(d) {
		inst, _ = openInstance(filepath.Join(d, "crucible-workspaces"))
	}
	if inst == nil {
		_ = os.Mkdir(runDir, 0o700) // root's alone: others may not write /run
		if private(runDir) {
			inst, _ = openInstance(filepath.Join(runDir, "workspaces"))
		}
	}
	if inst == nil {
		root, err := os.MkdirTemp("", name+"-") // 0700, ours
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		if inst, err = openInstance(root); err != nil {
			_ = os.Remove(root)
			return nil, err
		}
	}
	log.Warn("workspaces: the default directory is not ours alone (another user made it?): using another", "refused", taken, "using", inst.root)
	return inst, nil
}

// private says whether dir is a directory (not a link) that is ours alone.
func private(dir string) bool {
	var st unix.Stat_t
	return unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR &&
		int(st.Uid) == os.Geteuid() && st.Mode&0o077 == 0
}

// lockRoot makes root if need be, checks that it is ours, and locks it.
func lockRoot(root string) (*os.File, error) {
	if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("workspace: making %s: %w", root, err)
	}
	// O_NOFOLLOW: a link planted at the root's name (it is in a shared
	// temporary directory) is refused, not followed.
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil, fmt.Errorf("workspace: %s is %w: %w", root, errNotOurs, err)
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: opening %s: %w", root, err)
	}
	f := os.NewFile(uintptr(fd), root)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("workspace: %s: %w", root, err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		f.Close()
		return nil, fmt.Errorf("workspace: %s is %w (owner %d, mode %o): remove it, or set another root", root, errNotOurs, st.Uid, st.Mode&0o777)
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("workspace: locking %s: %w", root, err)
	}
	// Removed by the last server to close while we waited for the lock.
	if err := unix.Fstat(fd, &st); err != nil || st.Nlink == 0 {
		f.Close()
		return nil, errRootGone
	}
	return f, nil
}

// makeInstance sweeps the dead instances under root and makes ours; the
// root is locked.
func makeInstance(root string) (*instance, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			sweepIfDead(filepath.Join(root, e.Name()))
		}
	}
	dir, err := os.MkdirTemp(root, "i")
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	lock, err := os.Open(dir)
	if err == nil {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		_ = os.Remove(dir)
		return nil, fmt.Errorf("workspace: locking our instance: %w", err)
	}
	return &instance{root: root, dir: dir, lock: lock}, nil
}

// sweepIfDead deletes dir, an instance, if no live server holds it: every
// mount under it first (a killed server's workspaces), then the directory.
func sweepIfDead(dir string) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return // alive
	}
	removeAll(dir)
}

// removeAll unmounts every mount at or below dir, deepest first, and
// removes what is left.
func removeAll(dir string) {
	mounts := mountsUnder(dir)
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	_ = os.RemoveAll(dir)
}

// mountsUnder lists the mount points at or below dir, from this process's
// mountinfo.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		p := unescape(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space, ...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mount makes a directory in the instance and mounts a tmpfs of size
// bytes on it, its root owned by owner: a workspace outlives its
// execution and the jail's limits with it (a program could fill the host's
// disk, one file of the file size limit after another).
func (i *instance) mount(size int64, owner int) (string, error) {
	dir, err := os.MkdirTemp(i.dir, "w")
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	// The instance, ours and inside a 0700 root, keeps every other user of
	// the host out, so the workspace may be open to all, for jails whose
	// writes cannot be idmapped to its owner.
	opts := fmt.Sprintf("size=%d,mode=0777,uid=%d,gid=%d", size, owner, owner)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		_ = os.Remove(dir)
		if errors.Is(err, syscall.EPERM) {
			return "", ErrUnbounded
		}
		return "", fmt.Errorf("workspace: mounting a tmpfs: %w", err)
	}
	return dir, nil
}

// unmount deletes a workspace's directory, whatever it holds.
func unmount(dir string) {
	_ = unix.Unmount(dir, unix.MNT_DETACH)
	_ = os.RemoveAll(dir) // only the mount point is left
}

// close deletes the instance, with any mount still under it, and the root
// if no other server uses it.
func (i *instance) close() error {
	removeAll(i.dir) // unlocks nothing: the lock is on the open directory
	r, err := lockRoot(i.root)
	if err != nil {
		i.lock.Close()
		if errors.Is(err, errRootGone) {
			return nil
		}
		return err
	}
	defer r.Close()
	i.lock.Close()
	_ = os.Remove(i.root) // fails while another server's instance is there
	return nil
}
