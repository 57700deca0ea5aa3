package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// testUser is an unprivileged user as the rootless tests need one, made
// without touching the host: crucible runs in a mount namespace of the
// test's in which /etc shows the user in passwd and group (and, with a
// range, in subuid and subgid, for newuidmap), /dev/net/tun may be the
// mode udev gives it, and the process may start in a cgroup delegated to
// the user. The namespace, and all of this with it, ends with the process.
type testUser struct {
	uid     int
	etc     string   // /etc's files that differ
	scratch string   // where the namespace mounts the overlay's directories
	tun     string   // a 0666 tun node to show at /dev/net/tun, or ""
	cgroup  []string // cgroup directories delegated to the user, to start in
}

// newTestUser makes the user uid, named crutest<uid>, with a range of
// subordinate ids (sub) or without.
func newTestUser(t *testing.T, uid int, sub bool) *testUser {
	t.Helper()
	requireRoot(t)
	testenv.NeedTool(t, "unshare")
	testenv.NeedTool(t, "setpriv")
	if sub {
		testenv.NeedTool(t, "newuidmap")
		testenv.NeedTool(t, "newgidmap")
	}
	u := &testUser{uid: uid, etc: t.TempDir(), scratch: t.TempDir()}
	name := "crutest" + strconv.Itoa(uid)
	appendTo := func(file, line string) {
		b, err := os.ReadFile("/etc/" + file)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		if err := os.WriteFile(filepath.Join(u.etc, file), append(b, line+"\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	appendTo("passwd", fmt.Sprintf("%s:x:%d:%d::/nonexistent:/bin/sh", name, uid, uid))
	appendTo("group", fmt.Sprintf("%s:x:%d:", name, uid))
	if sub {
		// Far from any real user's range, and above the jail's host ids
		// as root (2e9): nothing on the host belongs to them.
		r := fmt.Sprintf("%s:%d:65536", name, 3_000_000_000+uid%1000*100_000)
		appendTo("subuid", r)
		appendTo("subgid", r)
	} else {
		// Whatever the host holds, this user has no range.
		for _, f := range []string{"subuid", "subgid"} {
			if err := os.WriteFile(filepath.Join(u.etc, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return u
}

// withTun shows a tun node of mode 0666 at /dev/net/tun, as udev leaves it
// (a machine of this kind may have it 0600), or skips where nodes cannot be
// made.
func (u *testUser) withTun(t *testing.T) {
	t.Helper()
	u.tun = tunNode(t, testenv.PublicDir(t))
}

// tunNode makes a tun device node of mode 0666 in dir, as udev (or a
// device plugin) would give one, or skips where nodes cannot be made.
func tunNode(t *testing.T, dir string) string {
	t.Helper()
	tun := filepath.Join(dir, "tun")
	if out, err := exec.Command("mknod", "-m", "0666", tun, "c", "10", "200").CombinedOutput(); err != nil {
		testenv.Missing(t, fmt.Sprintf("needs mknod for a tun node: %v: %s", err, out))
	}
	return tun
}

// delegateCgroup gives the user a cgroup of its own, as systemd delegates
// one (a subtree chowned to the user): on cgroup v2 where this process's
// cgroup offers memory, pids and cpu, else one per v1 controller. It
// reports false where the host has neither.
func (u *testUser) delegateCgroup(t *testing.T) bool {
	t.Helper()
	name := fmt.Sprintf("crucible-test-%d-%d", u.uid, os.Getpid())
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{} // controller ("" for v2) → our path
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	var dirs []string
	if p, ok := paths[""]; ok {
		b, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup", p, "cgroup.controllers"))
		have := " " + strings.Join(strings.Fields(string(b)), " ") + " "
		if strings.Contains(have, " memory ") && strings.Contains(have, " pids ") && strings.Contains(have, " cpu ") {
			// v2: a child of ours with the controllers enabled for its
			// subtree; the user's process starts in it, and crucible
			// moves itself to a leaf below.
			parent := filepath.Join("/sys/fs/cgroup", p)
			if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0); err == nil {
				dirs = []string{filepath.Join(parent, name)}
			}
		}
	}
	if dirs == nil {
		for _, c := range []string{"memory", "pids", "cpu"} {
			p, ok := paths[c]
			if !ok {
				return false
			}
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", c, p, name))
		}
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("making a cgroup to delegate: %v", err)
		}
		t.Cleanup(func() { testenv.RemoveCgroupTree(t, d) })
		if out, err := exec.Command("chown", "-R", strconv.Itoa(u.uid), d).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v: %s", err, out)
		}
	}
	u.cgroup = dirs
	return true
}

// setup is the shell script that prepares the mount namespace and becomes
// the user; "$@" is the command.
func (u *testUser) setup() string {
	// The overlay's upper and work directories share a tmpfs of the
	// namespace's own, mounted on a directory of the test's.
	w := u.scratch
	s := "set -e\n" +
		"mount -t tmpfs tmpfs " + w + "\n" +
		"mkdir " + w + "/upper " + w + "/work\n" +
		"cp -a " + u.etc + "/. " + w + "/upper/\n" +
		"mount -t overlay overlay -o lowerdir=/etc,upperdir=" + w + "/upper,workdir=" + w + "/work /etc\n"
	if u.tun != "" {
		s += "mount --bind " + u.tun + " /dev/net/tun\n"
	}
	for _, d := range u.cgroup {
		s += "echo $$ > " + d + "/cgroup.procs\n"
	}
	return s + fmt.Sprintf("exec setpriv --reuid=%d --regid=%d --clear-groups -- \"$@\"\n", u.uid, u.uid)
}

// command is args run as the user, in its mount namespace, with env and
// nothing else in its environment.
func (u *testUser) command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", u.setup(), "sh"}, args...)...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", cliEnv, quickExit}, env...)
	cmd.Dir = "/"
	return cmd
}

// run runs the crucible binary as the user and returns its exit code,
// stdout and stderr.
func (u *testUser) run(t *testing.T, bin string, stdin io.Reader, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := u.command(env, append([]string{bin}, args...)...)
	cmd.Stdin = stdin
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	code := 0
	if ee != nil {
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}
