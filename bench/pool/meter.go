package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/owncgroup"
	"golang.org/x/sys/unix"
)

// meter reads what this process and every jail it ran have cost, from
// cgroups: a command that its jail's end kills (a pool ends a jail as soon
// as its result is in) is charged to no process's rusage, only to the
// cgroups it ran in. On cgroup v1, this process moves into cgroups of its
// own in the cpuacct and memory hierarchies before it makes any jail: the
// jails' processes stay in its cpuacct cgroup (a jail takes memory, pids
// and cpu only), and their memory cgroups are made below its own. On v2,
// the jails' cgroups are made beside this process's leaf
// (owncgroup.Leaf), whose parent holds both.
type meter struct {
	cpuFile, memFile string // cpuacct.usage or cpu.stat; memory.stat
	v2               bool
	made             []string // cgroups made here, removed by close
}

// newMeter makes the cgroups (v1) and says where to read; call it before
// the first jail.
func newMeter() (*meter, error) {
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return &meter{v2: true}, nil // where: once the first jail has placed us (see total)
	}
	own, err := owncgroup.Paths()
	if err != nil {
		return nil, err
	}
	m := &meter{}
	name := fmt.Sprintf("bench-pool-%d", os.Getpid())
	for _, h := range []string{"cpuacct", "memory"} {
		p, ok := own[h]
		if !ok {
			return nil, fmt.Errorf("no cgroup v1 %s hierarchy", h)
		}
		dir := filepath.Join("/sys/fs/cgroup", h, p, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			m.close()
			return nil, err
		}
		m.made = append(m.made, dir)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			m.close()
			return nil, err
		}
	}
	m.cpuFile = filepath.Join(m.made[0], "cpuacct.usage")
	m.memFile = filepath.Join(m.made[1], "memory.stat")
	return m, nil
}

// total is the CPU time and page faults of this process and its jails so
// far.
func (m *meter) total() (time.Duration, int64) {
	if m.v2 && m.cpuFile == "" {
		dir := filepath.Join("/sys/fs/cgroup", owncgroup.V2())
		if filepath.Base(dir) == "crucible-supervisor" {
			dir = filepath.Dir(dir)
		}
		m.cpuFile, m.memFile = filepath.Join(dir, "cpu.stat"), filepath.Join(dir, "memory.stat")
	}
	var cpu time.Duration
	if m.v2 {
		cpu = time.Duration(statKey(m.cpuFile, "usage_usec")) * time.Microsecond
	} else if b, err := os.ReadFile(m.cpuFile); err == nil {
		n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		cpu = time.Duration(n)
	}
	key := "total_pgfault" // v1: this cgroup's and those below it
	if m.v2 {
		key = "pgfault"
	}
	return cpu, statKey(m.memFile, key)
}

// close moves this process back and removes what newMeter made.
func (m *meter) close() {
	for _, dir := range m.made {
		_ = os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
		for range 100 { // the last jails' processes may still be leaving
			if err := unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// statKey reads "key N" from a flat-keyed cgroup file; 0 if absent.
func statKey(file, key string) int64 {
	b, _ := os.ReadFile(file)
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
