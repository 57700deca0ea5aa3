package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cruciblehq/crucible/owncgroup"
	"golang.org/x/sys/unix"
)

// cgroupLimits are the bounds one jail's cgroup enforces.
type cgroupLimits struct {
	Memory int64
	Pids   int
	CPUs   float64
}

// cgroup is one jail's cgroup: a single directory on cgroup v2, one per
// controller on v1.
type cgroup struct {
	v2      bool
	dirs    []string // v2: one; v1: memory, pids, cpu in that order
	parents []string // the supervisor's own cgroups, like dirs
	fd      int      // v2: the directory, for CLONE_INTO_CGROUP; else -1
	limits  cgroupLimits

	// The event files that say which limits were hit, opened with the
	// cgroup so that reading them after the command's exit costs no path
	// walk; -1 where one could not be opened (read as no events).
	memEvents, pidsEvents int
}

// cgroupParents says where this process may create jail cgroups: the cgroup
// v2 directory (v2) or the v1 directory of each controller, found once.
var cgroupParents = sync.OnceValues(findCgroupParents)

type cgroupParent struct {
	v2   bool
	dirs []string
}

// findCgroupParents prefers cgroup v2 where all our controllers are available
// to this process's cgroup, and falls back to v1 hierarchies otherwise.
func findCgroupParents() (*cgroupParent, error) {
	own, err := owncgroup.Paths()
	if err != nil {
		return nil, err
	}
	if p, ok := own[""]; ok {
		if path.Base(p) == owncgroup.Leaf {
			// Our leaf of a delegated cgroup (systemdscope.Join, or
			// delegateV2 in a process before us): the jails go beside it.
			p = path.Dir(p)
		}
		for _, mnt := range []string{owncgroup.Root, owncgroup.Root + "/unified"} {
			var st unix.Statfs_t
			if unix.Statfs(mnt, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
				continue
			}
			dir := filepath.Join(mnt, p)
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
			if err == nil && owncgroup.HasAll(strings.Fields(string(b)), owncgroup.Controllers) {
				if err := delegateV2(dir); err != nil {
					return nil, err
				}
				return &cgroupParent{v2: true, dirs: []string{dir}}, nil
			}
		}
	}
	var dirs []string
	for _, c := range owncgroup.Controllers {
		p, ok := own[c]
		mnt := filepath.Join(owncgroup.Root, c)
		var st unix.Statfs_t
		if !ok || unix.Statfs(mnt, &st) != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
			return nil, fmt.Errorf("the %s controller is neither on cgroup v2 nor mounted as cgroup v1", c)
		}
		dirs = append(dirs, filepath.Join(mnt, p))
	}
	return &cgroupParent{dirs: dirs}, nil
}

// delegateV2 enables our controllers for the children of dir. cgroup v2 lets
// no cgroup both hold processes and delegate controllers, so when dir holds
// this process (a systemd scope with Delegate=yes), move it to a leaf first.
func delegateV2(dir string) error {
	want := "+memory +pids +cpu"
	ctl := filepath.Join(dir, "cgroup.subtree_control")
	err := os.WriteFile(ctl, []byte(want), 0)
	if errors.Is(err, unix.EBUSY) {
		leaf := filepath.Join(dir, owncgroup.Leaf)
		if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("creating a leaf cgroup for the supervisor: %w", pathless(err))
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte("0"), 0); err != nil {
			return fmt.Errorf("moving the supervisor to a leaf cgroup: %w", pathless(err))
		}
		err = os.WriteFile(ctl, []byte(want), 0)
	}
	if err != nil {
		return fmt.Errorf("enabling the memory, pids and cpu controllers: %w", pathless(err))
	}
	return nil
}

var cgroupSeq atomic.Uint64

// sweepOnce removes, once per process, the cgroups that a killed supervisor
// left behind: their names carry its pid, and that pid is gone.
var sweepOnce sync.Once

// newCgroup creates a cgroup for the given limits. On v2 it sets them at
// once; on v1 the caller calls bound once init is in the cgroup (see fork).
func newCgroup(l cgroupLimits) (*cgroup, error) {
	parent, err := cgroupParents()
	if err != nil {
		return nil, err
	}
	sweepOnce.Do(func() { sweepStale(parent) })
	name := fmt.Sprintf("crucible-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	cg := &cgroup{v2: parent.v2, parents: parent.dirs, fd: -1, limits: l, memEvents: -1, pidsEvents: -1}
	for _, p := range parent.dirs {
		d := filepath.Join(p, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			cg.destroy()
			return nil, fmt.Errorf("creating a cgroup: %w", pathless(err))
		}
		cg.dirs = append(cg.dirs, d)
	}
	if cg.v2 {
		if err := cg.bound(); err != nil {
			cg.destroy()
			return nil, err
		}
		fd, err := unix.Open(cg.dirs[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			cg.destroy()
			return nil, fmt.Errorf("opening the cgroup: %w", pathless(err))
		}
		cg.fd = fd
	}
	mem, pids := "memory.events", filepath.Join(cg.dirs[0], "pids.events")
	if !cg.v2 {
		mem, pids = "memory.oom_control", filepath.Join(cg.dirs[1], "pids.events")
	}
	cg.memEvents = openEvents(filepath.Join(cg.dirs[0], mem))
	cg.pidsEvents = openEvents(pids)
	return cg, nil
}

func openEvents(path string) int {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// errMemoryTooSmall is bound's error when the jail's own processes already
// use more memory than the limit.
var errMemoryTooSmall = errors.New("the memory limit is smaller than what the jail's own processes use to start")

// bound writes the limits that are not zero; a zero leaves the new cgroup's
// default, which is no limit.
func (c *cgroup) bound() error {
	l := c.limits
	type setting struct{ dir, file, value string }
	var ss []setting
	const period = 100000
	quota := strconv.Itoa(max(int(l.CPUs*period), 1000)) // 1000: the kernel's minimum
	mem := strconv.FormatInt(l.Memory, 10)
	if c.v2 {
		d := c.dirs[0]
		if l.Memory > 0 {
			ss = append(ss, setting{d, "memory.max", mem}, setting{d, "memory.swap.max", "0"})
		}
		if l.Pids > 0 {
			ss = append(ss, setting{d, "pids.max", strconv.Itoa(l.Pids)})
		}
		if l.CPUs > 0 {
			ss = append(ss, setting{d, "cpu.max", quota + " " + strconv.Itoa(period)})
		}
	} else {
		m, p, cpu := c.dirs[0], c.dirs[1], c.dirs[2]
		if l.Memory > 0 {
			ss = append(ss, setting{m, "memory.limit_in_bytes", mem}, setting{m, "memory.memsw.limit_in_bytes", mem}, setting{m, "memory.swappiness", "0"})
		}
		if l.Pids > 0 {
			ss = append(ss, setting{p, "pids.max", strconv.Itoa(l.Pids)})
		}
		if l.CPUs > 0 {
			ss = append(ss, setting{cpu, "cpu.cfs_period_us", strconv.Itoa(period)}, setting{cpu, "cpu.cfs_quota_us", quota})
		}
	}
	for _, s := range ss {
		err := writeControl(filepath.Join(s.dir, s.file), s.value)
		if os.IsNotExist(err) && (s.file == "memory.swap.max" || s.file == "memory.memsw.limit_in_bytes") {
			continue // no swap accounting: there is no swap to bound
		}
		if errors.Is(err, unix.EBUSY) && strings.HasPrefix(s.file, "memory.") {
			return errMemoryTooSmall // v1: usage is over it and cannot be reclaimed
		}
		if err != nil {
			return fmt.Errorf("setting %s: %w", s.file, pathless(err))
		}
	}
	return nil
}

// enter and leave move the calling thread into the cgroup and back (cgroup
// v1 only, whose clone cannot name a cgroup): a child forked in between is
// born in the cgroup. Moving a whole process instead takes the cgroup
// threadgroup lock, which waits for an RCU grace period (0.1 to 10 ms).
func (c *cgroup) enter() error { return moveThread(c.dirs, "joining the cgroup") }
func (c *cgroup) leave() error { return moveThread(c.parents, "leaving the cgroup") }

func moveThread(dirs []string, doing string) error {
	for _, d := range dirs {
		if err := writeControl(filepath.Join(d, "tasks"), "0"); err != nil {
			return fmt.Errorf("%s: %w", doing, pathless(err))
		}
	}
	return nil
}

// writeControl writes value to a cgroup's control file in one write, with
// the bare system calls: os.WriteFile would truncate it too, and offer it to
// the poller (which cgroupfs refuses), for each of the ~10 writes a jail
// takes. Its errors name no path.
func writeControl(path, value string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte(value))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// oomKilled says whether the memory limit killed a process.
func (c *cgroup) oomKilled() bool { return readEvent(c.memEvents, "oom_kill") > 0 }

// pidsHit says whether a fork failed at the pids limit.
func (c *cgroup) pidsHit() bool { return readEvent(c.pidsEvents, "max") > 0 }

// readEvent reads "key N" from an open flat-keyed cgroup file, from its
// start; 0 if fd is -1.
func readEvent(fd int, key string) int64 {
	if fd < 0 {
		return 0
	}
	var buf [512]byte // memory.events, the longest, holds 6 short lines
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil || n <= 0 {
		return 0
	}
	return parseEvent(buf[:n], key)
}

// parseEvent finds "key N" in a flat-keyed cgroup file's text; 0 if absent.
func parseEvent(b []byte, key string) int64 {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// destroy kills whatever is left in the cgroup and removes it. The pid
// namespace normally leaves nothing; this is the backstop. Bounded in time.
func (c *cgroup) destroy() {
	for _, fd := range []*int{&c.fd, &c.memEvents, &c.pidsEvents} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	for _, d := range c.dirs {
		removeCgroup(d)
	}
}

func removeCgroup(dir string) {
	if c := filepath.Join(dir, "cgroup.kill"); fileExists(c) {
		_ = os.WriteFile(c, []byte("1"), 0)
	}
	for i := 0; i < 200; i++ {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pathless drops the host path from a *fs.PathError: setup errors may reach
// the model, and host paths are none of its business.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// sweepStale removes empty-able jail cgroups whose supervisor is dead.
func sweepStale(p *cgroupParent) {
	for _, parent := range p.dirs {
		ents, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range ents {
			var pid, seq int
			if _, err := fmt.Sscanf(e.Name(), "crucible-%d-%d", &pid, &seq); err != nil || pid <= 0 {
				continue
			}
			if unix.Kill(pid, 0) == unix.ESRCH {
				removeCgroup(filepath.Join(parent, e.Name()))
			}
		}
	}
}
