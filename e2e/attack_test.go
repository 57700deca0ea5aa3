package e2e

// Attacks: each test is something hostile code would try, run for real inside
// a jail through the CLI. Each asserts what the attacker got (an error, an
// empty output, a dead process) and, where seccomp denies a syscall, that the
// supervisor recorded the violation by name.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/cli"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/sandbox"
	"golang.org/x/sys/unix"
)

// jailed runs `crucible exec --json FLAGS -- CMD...` and decodes the result.
func jailed(t *testing.T, flags []string, cmd ...string) *sandbox.Result {
	t.Helper()
	args := append(append([]string{"exec", "--json"}, flags...), "--")
	return jsonRun(t, "", append(args, cmd...)...)
}

func jailSh(t *testing.T, script string, flags ...string) *sandbox.Result {
	t.Helper()
	return jailed(t, flags, "/bin/sh", "-c", script)
}

// jailPy runs a python3 program in a jail; args become sys.argv[1:].
func jailPy(t *testing.T, prog string, flags []string, args ...string) *sandbox.Result {
	t.Helper()
	testenv.NeedTool(t, "python3") // the jail has the host's /usr
	return jailed(t, flags, append([]string{"python3", "-c", prog}, args...)...)
}

// pyRaw lets a python program make raw syscalls: raw(nr, args...) returns
// "result errno", so a denied call reads "-1 1" (EPERM); call(f, args...)
// does the same for a libc function. case(name, f) prints "name<TAB>f()",
// an OSError as "-1 errno", and so lets one jail run a whole table of
// attacks (a jail costs a process start; under -race, a second at exit).
const pyRaw = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(f, *args):
    ctypes.set_errno(0)
    r = f(*args)
    return "%d %d" % (r, ctypes.get_errno())
def raw(nr, *args):
    return call(libc.syscall, ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
def case(name, f):
    try:
        out = f()
    except OSError as e:
        out = "-1 %d" % e.errno
    print("%s\t%s" % (name, out), flush=True)
`

// results maps the first tab-separated field of each output line to the rest.
func results(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "\t"); ok {
			m[k] = v
		}
	}
	return m
}

// denied is what a syscall the policy refuses returns: -1, EPERM.
const denied = "-1 1"

func dump(r *sandbox.Result) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

var tokenSeq atomic.Int64

// token returns a number unique to this test process, to be passed to sleep
// (or as an argument) so that the host can find the jail's processes by
// their command line, whatever else runs on the machine.
func token(base int) string {
	return fmt.Sprintf("%d.%d%03d", base, os.Getpid(), tokenSeq.Add(1))
}

// hostProcs returns the command lines of the host's processes that mention
// tok, other than this one.
func hostProcs(tok string) []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), tok) {
			found = append(found, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	return found
}

// waitNoProcs fails the test unless, within d, no host process mentions tok.
// The kernel tears a pid namespace down asynchronously, hence the poll.
func waitNoProcs(t *testing.T, tok string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ps := hostProcs(tok)
		if len(ps) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d jail process(es) still alive on the host %v later:\n%s", len(ps), d, strings.Join(ps, "\n"))
			for _, p := range ps { // do not leave them to the next test
				if pid, err := strconv.Atoi(strings.SplitN(p, ":", 2)[0]); err == nil {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jailCgroups returns the cgroup directories that a crucible supervisor with
// the given pid created (named crucible-PID-N), at any depth that matters.
func jailCgroups(pid int) []string {
	var found []string
	for depth := 0; depth <= 5; depth++ {
		m, _ := filepath.Glob("/sys/fs/cgroup" + strings.Repeat("/*", depth) + fmt.Sprintf("/crucible-%d-*", pid))
		found = append(found, m...)
	}
	return found
}

// Attack: read the host's secrets and home directories. The jail's /etc is
// synthesized and the host's /root, /home, /var, /run, /sys are not there
// (the jail's /run is its own, and holds only the workspace).
func TestAttackHostSecretFiles(t *testing.T) {
	requireRoot(t)
	paths := []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/root", "/home",
		"/var", "/run/user", "/run/systemd", "/run/lock", "/sys", "/boot", "/proc/1/root/etc/shadow"}
	r := jailed(t, nil, append([]string{"/bin/sh", "-c", `for p in "$@"; do if [ -e "$p" ]; then echo "VISIBLE $p"; fi; done; cat /etc/shadow; ls -A /run; echo done`, "sh"}, paths...)...)
	if r.Stdout != "workspace\ndone\n" {
		t.Errorf("host paths visible in the jail:\n%s", dump(r))
	}
	if !strings.Contains(r.Stderr, "/etc/shadow: No such file or directory") {
		t.Errorf("cat /etc/shadow: stderr %q, want No such file or directory", r.Stderr)
	}
}

// Attack: look at the host through /proc. The jail's /proc is its own pid
// namespace's: pid 1 is crucible's init (whose environment the command cannot
// read) and only the jail's few processes are listed.
func TestAttackHostProc(t *testing.T) {
	requireRoot(t)
	r := jailSh(t, `echo "environ=$(tr '\0' ' ' </proc/1/environ 2>/dev/null)"; echo "cmdline=$(tr '\0' ' ' </proc/1/cmdline)"; `+
		`echo "fd=$(ls /proc/1/fd 2>/dev/null)"; echo "pids=$(ls /proc | grep -c '^[0-9]')"`)
	hostInit, _ := os.ReadFile("/proc/1/cmdline")
	hostArg0 := strings.SplitN(string(hostInit), "\x00", 2)[0]
	lines := strings.Split(r.Stdout, "\n")
	// Empty or unreadable, both are safe.
	if len(lines) < 4 || lines[0] != "environ=" || lines[2] != "fd=" {
		t.Fatalf("the jail init's environment or descriptors are readable:\n%s", dump(r))
	}
	if cmdline := strings.TrimPrefix(lines[1], "cmdline="); hostArg0 != "" && strings.Contains(cmdline, hostArg0) {
		t.Errorf("/proc/1/cmdline in the jail is the host's init %q: %q", hostArg0, cmdline)
	}
	// init, sh, ls, grep and the subshell: far fewer than the host's.
	if n, err := strconv.Atoi(strings.TrimPrefix(lines[3], "pids=")); err != nil || n > 8 {
		t.Errorf("the jail's /proc lists %q processes, want only the jail's few", lines[3])
	}
}

// Attack: steal secrets from the supervisor's environment, directly or
// through any process's /proc/PID/environ.
func TestAttackHostEnvCanary(t *testing.T) {
	requireRoot(t)
	const canary = "s3cret-canary"
	t.Setenv("CRUCIBLE_CANARY", canary)
	r := jailSh(t, `env; for f in /proc/[0-9]*/environ; do cat "$f"; done; cat /proc/self/environ; echo done`)
	if !strings.Contains(r.Stdout, "USER=sandbox") || !strings.HasSuffix(r.Stdout, "done\n") {
		t.Fatalf("the probe did not run:\n%s", dump(r))
	}
	if strings.Contains(r.Stdout+r.Stderr, canary) || strings.Contains(r.Stdout, "CRUCIBLE_CANARY") {
		t.Errorf("the host's environment leaked into the jail:\n%s", dump(r))
	}
}

// Attack: write outside /tmp and /workspace: the root, /usr, /etc, the
// kernel's sysctls and sysrq. Every write fails and nothing appears, in the
// jail or on the host.
func TestAttackWriteReadOnly(t *testing.T) {
	requireRoot(t)
	// The content starts with 'h': should a write to sysrq-trigger ever
	// succeed, it would only print the sysrq help to the kernel log.
	const content = "h-crucible-pwned"
	const rofs = "Read-only file system"
	cases := []struct {
		path   string
		exists bool   // an existing file, checked unchanged; else it must not appear
		err    string // what the shell says
	}{
		{"/crucible-pwned", false, rofs},
		{"/usr/crucible-pwned", false, rofs},
		{"/usr/bin/crucible-pwned", false, rofs},
		{"/bin/crucible-pwned", false, rofs},
		{"/etc/crucible-pwned", false, rofs},
		{"/etc/ssl/certs/crucible-pwned", false, rofs},
		{"/dev/crucible-pwned", false, rofs},
		{"/proc/crucible-pwned", false, "Directory nonexistent"}, // procfs creates no files
		{"/etc/passwd", true, rofs},
		{"/etc/hostname", true, rofs},
		{"/proc/sys/kernel/hostname", true, rofs},
		{"/proc/sysrq-trigger", true, "Permission denied"}, // owned by host root
	}
	args := []string{"/bin/sh", "-c", `c=$1; shift
for p in "$@"; do
	msg=$( (echo "$c" > "$p") 2>&1 ); rc=$?
	e=absent; if [ -e "$p" ]; then e=exists; fi
	printf '%s\t%s %s %s %s\n' "$p" "$rc" "$e" "$(grep -s -c -- "$c" "$p")" "$msg"
done
echo "hostname=$(cat /proc/sys/kernel/hostname)"`, "sh", content}
	for _, tc := range cases {
		args = append(args, tc.path)
	}
	r := jailed(t, nil, args...)
	got := results(r.Stdout)
	if !strings.HasSuffix(r.Stdout, "hostname=sandbox\n") {
		t.Errorf("the jail's hostname changed, or the probe did not run:\n%s", dump(r))
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			if _, err := os.Stat(tc.path); tc.exists && strings.HasPrefix(tc.path, "/proc/") && err != nil {
				// This kernel has no such file (no sysrq, say): the write
				// must fail as for any file procfs lacks.
				tc.exists, tc.err = false, "Directory nonexistent"
			}
			// Exit 2, the shell's "cannot create"; then what is there.
			want := "2 absent "
			switch {
			case tc.path == "/proc/sysrq-trigger" && tc.exists: // write-only: grep cannot count
				want = "2 exists "
			case tc.exists:
				want = "2 exists 0"
			}
			want += " sh: "
			rest, ok := strings.CutPrefix(got[tc.path], want)
			if !ok || !strings.HasSuffix(rest, ": cannot create "+tc.path+": "+tc.err) {
				t.Errorf("got %q, want %q and %q", got[tc.path], want+"N: cannot create "+tc.path, tc.err)
			}
			if !tc.exists {
				if _, err := os.Lstat(tc.path); err == nil {
					t.Errorf("%s appeared on the host", tc.path)
				}
			}
		})
	}
}

// Attack: escape /workspace through symlinks to /etc/passwd and to /. They
// resolve inside the jail, so the attacker only ever sees the jail's files.
func TestAttackSymlinkEscape(t *testing.T) {
	requireRoot(t)
	host, err := os.ReadFile("/etc/passwd")
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("no host /etc/passwd to compare with: %v", err))
	}
	r := jailSh(t, `cat /etc/passwd; echo ---
ln -s /etc/passwd /workspace/x && ln -s / /workspace/root || exit 99
cat /workspace/x; echo ---; ls -A /workspace/root/; echo ---; cat /workspace/root/etc/passwd`)
	parts := strings.Split(r.Stdout, "---\n")
	if r.ExitCode != 0 || len(parts) != 4 || !strings.Contains(parts[0], "sandbox:x:1000:1000:") {
		t.Fatalf("the probe did not run:\n%s", dump(r))
	}
	// A line of the host's passwd that the jail's synthesized one lacks:
	// seeing it through a link would mean reading the host's.
	for _, l := range strings.Split(string(host), "\n") {
		if l != "" && !strings.Contains(parts[0], l) {
			if strings.Contains(parts[1]+parts[3], l) {
				t.Errorf("the host's /etc/passwd line %q was read through a symlink:\n%s", l, r.Stdout)
			}
			break
		}
	}
	if parts[1] != parts[0] || parts[3] != parts[0] {
		t.Errorf("the links show another passwd than the jail's own:\n%s", r.Stdout)
	}
	listing := strings.Split(parts[2], "\n")
	for _, name := range []string{"root", "home", "var", "boot"} {
		if slices.Contains(listing, name) {
			t.Errorf("/workspace/root lists the host's /%s: %q", name, listing)
		}
	}
}

// fileSum hashes a host file, or says why it cannot.
func fileSum(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// Attack: with a host directory as /workspace, plant symlinks to host files
// and write through them, climb out with .., and hardlink host files into the
// workspace (to keep them, or to write them later). Every write lands in the
// jail's read-only view, hardlinks cross mounts and fail, and from the host
// side nothing outside the workspace was created or changed.
func TestAttackHostWorkspaceEscape(t *testing.T) {
	requireRoot(t)
	ws := hostWorkspace(t)
	parent := filepath.Dir(ws)
	watched := []string{"/etc/passwd", "/etc/shadow", "/etc/hostname", "/usr/bin/env"}
	sums := map[string]string{}
	for _, p := range watched {
		sums[p] = fileSum(p)
	}
	siblings := testenv.DirNames(t, parent)

	r := jailSh(t, `cd /workspace || exit 99
ln -s /etc/shadow shadow; echo h-pwned > shadow; echo "shadow rc=$?"
ln -s /etc/passwd passwd; echo h-pwned >> passwd; echo "passwd rc=$?"
ln -s .. up; echo h-pwned > up/escape; echo "up rc=$?"
echo h-pwned > /workspace/../escape2; echo "dotdot rc=$?"
ln /usr/bin/env h; echo "ln usr rc=$?"
ln /etc/hostname h2; echo "ln etc rc=$?"
ln /etc/ld.so.cache h3; echo "ln bound rc=$?"`, "--workspace", ws)
	want := "shadow rc=2\npasswd rc=2\nup rc=2\ndotdot rc=2\nln usr rc=1\nln etc rc=1\nln bound rc=1\n"
	if r.Stdout != want {
		t.Errorf("stdout %q, want %q\n%s", r.Stdout, want, dump(r))
	}
	if !strings.Contains(r.Stderr, "Invalid cross-device link") {
		t.Errorf("hardlinks: stderr %q, want Invalid cross-device link", r.Stderr)
	}
	for _, p := range watched {
		if s := fileSum(p); s != sums[p] {
			t.Errorf("host %s changed", p)
		}
	}
	if got := testenv.DirNames(t, parent); !slices.Equal(got, siblings) {
		t.Errorf("the workspace's host parent changed: %q, was %q", got, siblings)
	}
	if got, want := testenv.DirNames(t, ws), []string{"passwd", "shadow", "up"}; !slices.Equal(got, want) {
		t.Errorf("the workspace holds %q, want only the symlinks %q", got, want)
	}
}

// Attack: plant a setuid (or setgid) program in a host workspace, for a host
// user to run later, outside the jail and its nosuid mounts. Whoever the
// files belong to on the host, none of what the jail leaves behind may carry
// those bits.
func TestAttackWorkspaceSetuid(t *testing.T) {
	requireRoot(t)
	ws := hostWorkspace(t)
	r := jailPy(t, `import os, shutil
shutil.copy("/usr/bin/id", "/workspace/chmod")
for name, f in (("chmod", lambda: os.chmod("/workspace/chmod", 0o6755)),
                ("open", lambda: os.close(os.open("/workspace/open", os.O_CREAT | os.O_WRONLY, 0o6755))),
                ("mknod", lambda: os.mknod("/workspace/mknod", 0o104755))):
    try:
        f(); print(name, "done")
    except OSError as e:
        print(name, e.strerror)`, []string{"--workspace", ws})
	if r.ExitCode != 0 {
		t.Fatalf("the probe did not run:\n%s", dump(r))
	}
	for _, v := range []string{"chmod", "open", "mknod"} {
		if !violated(r, v) || !strings.Contains(r.Stdout, v+" Operation not permitted") {
			t.Errorf("setuid by %s: not refused and recorded:\n%s", v, dump(r))
		}
	}
	err := filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			t.Errorf("the jail left %s on the host with mode %o, owned by uid %d gid %d", p, st.Mode&0o7777, st.Uid, st.Gid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.Logf("in the jail:\n%s", r.Stdout)
	}
}

// Attack, in two runs: plant a symlink to a host directory in the
// workspace, and wait for the operator to hand that "project directory" to a
// later run as its workspace. The supervisor must not follow the jail's
// link: the later run either refuses, or neither reads nor writes the host
// directory (here a root-only one) behind it.
func TestAttackWorkspaceSymlinkPlant(t *testing.T) {
	requireRoot(t)
	secretDir := t.TempDir() // root's, 0700
	secret := filepath.Join(secretDir, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := hostWorkspace(t)
	r := jailed(t, []string{"--workspace", ws}, "ln", "-s", secretDir, "/workspace/proj")
	if r.ExitCode != 0 {
		t.Fatalf("planting the link failed:\n%s", dump(r))
	}

	code, out, errs := run(t, "", "exec", "--workspace", filepath.Join(ws, "proj"), "--",
		"/bin/sh", "-c", "cat /workspace/secret.txt; echo h-pwned >> /workspace/secret.txt; ls -ln /workspace")
	if strings.Contains(out+errs, "s3cret-file") {
		t.Errorf("the jail read the host's root-only file through its own symlink (exit %d):\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(secret); string(b) != "s3cret-file\n" {
		t.Errorf("the jail wrote the host's root-only file through its own symlink: now %q", b)
	}
}

// Attack: regain root through a setuid binary. /usr is mounted nosuid and
// no_new_privs is set: the binary runs with the caller's ids and no
// capabilities. To see its credentials, it is made to block on a full pipe
// while its /proc/PID/status is read; then the setuid mount(8) is asked to
// mount, and cannot.
func TestAttackSetuid(t *testing.T) {
	requireRoot(t)
	r := jailPy(t, `import os, stat, fcntl, subprocess, sys, time
cands = [p for p in ("/usr/bin/mount", "/usr/bin/su", "/usr/bin/passwd", "/usr/bin/umount", "/usr/bin/chsh")
         if os.path.exists(p) and os.stat(p).st_mode & stat.S_ISUID]
if not cands:
    print("no setuid binary"); sys.exit()
rd, wr = os.pipe()
fcntl.fcntl(wr, 1031, 4096)  # F_SETPIPE_SZ
os.write(wr, b"x" * 4096)    # full: the binary blocks on its first write
p = subprocess.Popen([cands[0], "--help"], stdin=subprocess.DEVNULL, stdout=wr, stderr=wr)
name = "Name:\t" + os.path.basename(cands[0]) + "\n"
for _ in range(500):
    st = open("/proc/%d/status" % p.pid).read()
    if name in st:
        break
    time.sleep(0.01)
for l in st.splitlines():
    if l.startswith(("Name", "Uid", "Gid", "CapEff", "NoNewPrivs")):
        print(l)
p.kill(); p.wait()
if "/usr/bin/mount" in cands:
    rc = subprocess.run(["mount", "-t", "tmpfs", "none", "/workspace"], stderr=subprocess.DEVNULL).returncode
    print("mount rc=%d mounts=%d" % (rc, sum(" /run/workspace " in l for l in open("/proc/self/mounts"))))
`, nil)
	if strings.Contains(r.Stdout, "no setuid binary") {
		testenv.Missing(t, "no setuid binary under /usr to try (install mount, su or passwd)")
	}
	for _, w := range []string{"Uid:\t1000\t1000\t1000\t1000\n", "Gid:\t1000\t1000\t1000\t1000\n",
		"CapEff:\t0000000000000000\n", "NoNewPrivs:\t1\n"} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("the setuid binary's status lacks %q:\n%s", w, dump(r))
		}
	}
	// 32: mount(8) failed; the workspace is still mounted once (/workspace
	// is a symlink to /run/workspace).
	if strings.Contains(r.Stdout, "mount rc=") && !strings.Contains(r.Stdout, "mount rc=32 mounts=1\n") {
		t.Errorf("the setuid mount(8) mounted:\n%s", dump(r))
	}
}

// Attack: read or control another process of the jail (here a sleeping
// child, and init) through ptrace, process_vm_readv/writev and /proc/PID/mem,
// or kill the jail's init.
func TestAttackPtrace(t *testing.T) {
	requireRoot(t)
	r := jailPy(t, pyRaw+`import subprocess
p = subprocess.Popen(["sleep", "30"])
buf = ctypes.create_string_buffer(8)
local = (ctypes.c_ulong * 2)(ctypes.addressof(buf), 8)
remote = (ctypes.c_ulong * 2)(0x400000, 8)
case("attach child", lambda: raw(101, 16, p.pid, 0, 0))  # PTRACE_ATTACH
case("attach init", lambda: raw(101, 16, 1, 0, 0))
case("traceme", lambda: raw(101, 0, 0, 0, 0))
case("vm_readv", lambda: raw(310, p.pid, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0))
case("vm_writev", lambda: raw(311, p.pid, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0))
case("init mem", lambda: open("/proc/1/mem", "rb") and "opened")
case("kill init", lambda: os.kill(1, 9) or "killed")
p.kill(); p.wait()
`, nil)
	want := map[string]string{"attach child": denied, "attach init": denied, "traceme": denied,
		"vm_readv": denied, "vm_writev": denied,
		"init mem":  "-1 13", // EACCES: init is not dumpable
		"kill init": denied}  // init runs as the jail's root, not the sandbox user
	if got := results(r.Stdout); !maps.Equal(got, want) {
		t.Errorf("got %q\nwant %q\n%s", got, want, dump(r))
	}
	for _, v := range []string{"ptrace", "process_vm_readv", "process_vm_writev"} {
		if !violated(r, v) {
			t.Errorf("no %s violation recorded: %v", v, r.Violations)
		}
	}
}

// Attack: rebuild the filesystem view or gain capabilities in a namespace of
// one's own: mount, and namespaces through unshare and clone.
func TestAttackNamespaces(t *testing.T) {
	requireRoot(t)
	// clone(2) raw, with fork's stack: a child, if any, leaves at once.
	r := jailPy(t, pyRaw+`def clone(flags):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(56), ctypes.c_long(flags | 17), 0, 0, 0, 0)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    return "%d %d" % (r, ctypes.get_errno())
case("mount", lambda: call(libc.mount, b"none", b"/tmp", b"tmpfs", 0, None))
case("umount2", lambda: call(libc.umount2, b"/proc", 2))
case("clone CLONE_NEWUSER", lambda: clone(0x10000000))
case("clone CLONE_NEWNET", lambda: clone(0x40000000))
case("clone CLONE_NEWNS", lambda: clone(0x00020000))
`, nil)
	want := map[string]string{"mount": denied, "umount2": denied,
		"clone CLONE_NEWUSER": denied, "clone CLONE_NEWNET": denied, "clone CLONE_NEWNS": denied}
	if got := results(r.Stdout); !maps.Equal(got, want) {
		t.Errorf("got %q\nwant %q\n%s", got, want, dump(r))
	}
	for _, v := range []string{"mount", "umount2", "clone"} {
		if !violated(r, v) {
			t.Errorf("no %s violation recorded: %v", v, r.Violations)
		}
	}

	r = jailSh(t, `for c in "unshare -U true" "unshare -r true" "unshare -m true" "unshare -n true"; do
	msg=$($c 2>&1); printf '%s\t%s %s\n' "$c" "$?" "$msg"
done`)
	for c, out := range results(r.Stdout) {
		if out != "1 unshare: unshare failed: Operation not permitted" {
			t.Errorf("%s: %q, want it to fail with EPERM", c, out)
		}
	}
	if len(results(r.Stdout)) != 4 || !violated(r, "unshare") {
		t.Errorf("want four refused unshare(1) and an unshare violation\n%s", dump(r))
	}
}

// Attack: reach kernel interfaces that exploits favour, or that leave the
// jail's namespaces. Each is refused with EPERM before the kernel looks at
// the arguments, and recorded by name.
func TestAttackDeniedSyscalls(t *testing.T) {
	requireRoot(t)
	cases := []struct {
		name string
		nr   int
	}{
		{"bpf", unix.SYS_BPF},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP},
		{"keyctl", unix.SYS_KEYCTL},
		{"add_key", unix.SYS_ADD_KEY},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN},
		{"userfaultfd", unix.SYS_USERFAULTFD},
		{"init_module", unix.SYS_INIT_MODULE},
		{"finit_module", unix.SYS_FINIT_MODULE},
		{"kexec_load", unix.SYS_KEXEC_LOAD},
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT},
		{"setns", unix.SYS_SETNS},
		{"unshare", unix.SYS_UNSHARE},
		{"pivot_root", unix.SYS_PIVOT_ROOT},
		{"chroot", unix.SYS_CHROOT},
		{"fsopen", unix.SYS_FSOPEN},
		{"open_tree", unix.SYS_OPEN_TREE},
		{"move_mount", unix.SYS_MOVE_MOUNT},
		{"pidfd_getfd", unix.SYS_PIDFD_GETFD},
		{"sethostname", unix.SYS_SETHOSTNAME},
		{"syslog", unix.SYS_SYSLOG},
		{"reboot", unix.SYS_REBOOT},
		{"iopl", unix.SYS_IOPL},
	}
	prog := pyRaw
	for _, tc := range cases {
		prog += fmt.Sprintf("case(%q, lambda: raw(%d, 0, 0, 0, 0, 0))\n", tc.name, tc.nr)
	}
	r := jailPy(t, prog, nil)
	got := results(r.Stdout)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got[tc.name] != denied {
				t.Errorf("got %q, want %q (EPERM)\n%s", got[tc.name], denied, dump(r))
			}
			if !violated(r, tc.name) {
				t.Errorf("no %s violation recorded: %v", tc.name, r.Violations)
			}
		})
	}
}

// Attack: push keystrokes into a terminal with TIOCSTI (or TIOCLINUX), to be
// run by the user's shell once the jail is gone; also with the request's high
// half set, which the kernel ignores but a careless filter would not. The
// answer is EPERM, not ENOTTY: the filter refused, not the pipe on fd 0.
func TestAttackTIOCSTI(t *testing.T) {
	requireRoot(t)
	r := jailPy(t, pyRaw+`import fcntl, termios
c = ctypes.c_char(b"x")
case("TIOCSTI", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x"))
case("TIOCSTI high bits", lambda: raw(16, 0, 0x100005412, ctypes.addressof(c)))
case("TIOCLINUX", lambda: raw(16, 0, 0x541C, ctypes.addressof(ctypes.c_char(b"\x02"))))
case("/dev/tty", lambda: os.open("/dev/tty", os.O_RDWR) and "opened")
`, nil)
	want := map[string]string{"TIOCSTI": denied, "TIOCSTI high bits": denied, "TIOCLINUX": denied,
		"/dev/tty": "-1 2"} // ENOENT: the jail has no terminal at all
	if got := results(r.Stdout); !maps.Equal(got, want) {
		t.Errorf("got %q\nwant %q\n%s", got, want, dump(r))
	}
	for _, v := range r.Violations {
		if v.Syscall == "ioctl" && v.Count != 3 {
			t.Errorf("%d ioctl violations recorded, want 3", v.Count)
		}
	}
	if !violated(r, "ioctl") {
		t.Errorf("no ioctl violation recorded: %v", r.Violations)
	}
}

// Attack: open raw and packet sockets (to forge traffic past any proxy) and
// unusual families (kernel attack surface). Only routing netlink, which glibc
// needs, opens.
func TestAttackSockets(t *testing.T) {
	requireRoot(t)
	cases := []struct {
		name        string
		family, typ uint64
		proto       int
		allowed     bool
	}{
		{name: "inet raw icmp", family: unix.AF_INET, typ: unix.SOCK_RAW, proto: unix.IPPROTO_ICMP},
		{name: "inet raw nonblock", family: unix.AF_INET, typ: unix.SOCK_RAW | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, proto: unix.IPPROTO_TCP},
		{name: "inet6 raw", family: unix.AF_INET6, typ: unix.SOCK_RAW, proto: unix.IPPROTO_ICMPV6},
		{name: "inet packet", family: unix.AF_INET, typ: unix.SOCK_PACKET},
		{name: "packet raw", family: unix.AF_PACKET, typ: unix.SOCK_RAW},
		{name: "packet dgram", family: unix.AF_PACKET, typ: unix.SOCK_DGRAM},
		// The kernel reads the family as an int: the high half must not matter.
		{name: "packet dgram high bits", family: 1<<32 | unix.AF_PACKET, typ: unix.SOCK_DGRAM},
		{name: "netlink audit", family: unix.AF_NETLINK, typ: unix.SOCK_RAW, proto: unix.NETLINK_AUDIT},
		{name: "netlink audit dgram", family: unix.AF_NETLINK, typ: unix.SOCK_DGRAM, proto: unix.NETLINK_AUDIT},
		{name: "vsock", family: unix.AF_VSOCK, typ: unix.SOCK_STREAM},
		{name: "netlink route", family: unix.AF_NETLINK, typ: unix.SOCK_RAW, proto: unix.NETLINK_ROUTE, allowed: true},
	}
	prog := pyRaw + `def sock(*args):
    r = raw(41, *args)
    return r if r.startswith("-") else "open"
`
	for _, tc := range cases {
		prog += fmt.Sprintf("case(%q, lambda: sock(%d, %d, %d))\n", tc.name, tc.family, tc.typ, tc.proto)
	}
	r := jailPy(t, prog, nil)
	got := results(r.Stdout)
	refused := 0
	for _, tc := range cases {
		if !tc.allowed {
			refused++
		}
		t.Run(tc.name, func(t *testing.T) {
			want := denied
			if tc.allowed {
				want = "open"
			}
			if got[tc.name] != want {
				t.Errorf("socket(%#x, %#x, %d): got %q, want %q\n%s", tc.family, tc.typ, tc.proto, got[tc.name], want, dump(r))
			}
		})
	}
	// Each refused socket is one violation; the allowed one none.
	if !slices.ContainsFunc(r.Violations, func(v sandbox.Violation) bool { return v.Syscall == "socket" && v.Count == refused }) {
		t.Errorf("want %d socket violations: %v", refused, r.Violations)
	}
}

// Attack: make syscalls through another ABI, where the numbers mean other
// calls and a filter written for x86_64 would misread them. The process is
// killed by SIGSYS; or, where the kernel has no such ABI at all (no IA32
// emulation), by what the kernel does outside any jail too (SIGSEGV for
// int 0x80), which the same program run on the host shows first.
func TestAttackForeignABI(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct{ name, call string }{
		// x32: getpid with the x32 bit.
		{"x32", `libc.syscall(ctypes.c_long(0x40000000 | 39))`},
		// i386: "mov eax, 20 (getpid); int 0x80; ret", run from an
		// executable page; no 32-bit toolchain needed.
		{"i386 int 0x80", `import mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(b"\xb8\x14\x00\x00\x00\xcd\x80\xc3")
ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := pyRaw + "print('alive', flush=True)\n" + tc.call + "\nprint('survived')"
			want := "SIGSYS"
			if host := hostSignal(t, prog); host != "" {
				// The kernel itself refuses the ABI: the filter never sees
				// the call, and the process dies as it does on the host.
				t.Logf("on the host, outside any jail, the call ends the process with %s", host)
				want = host
			}
			r := jailPy(t, prog, nil)
			if r.Stdout != "alive\n" || r.Signal != want || r.ExitCode != 128+int(unix.SignalNum(want)) {
				t.Errorf("want the process killed by %s after 'alive'\n%s", want, dump(r))
			}
		})
	}
}

// hostSignal runs a python3 program on the host, outside any jail, and
// returns the signal that killed it ("" if none did).
func hostSignal(t *testing.T, prog string) string {
	t.Helper()
	cmd := exec.Command(testenv.NeedTool(t, "python3"), "-c", prog)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			t.Fatalf("the probe did not run on the host: %v", err)
		}
		return ""
	}
	if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
		return unix.SignalName(ws.Signal())
	}
	return ""
}

// Attack: reach host services through unix sockets: a socket file in a host
// directory, and an abstract socket (which no path or mount confines).
func TestAttackHostUnixSockets(t *testing.T) {
	requireRoot(t)
	path := filepath.Join(t.TempDir(), "host.sock")
	pl, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	abstract := fmt.Sprintf("crucible-test-%s", token(1))
	al, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()

	r := jailPy(t, `import socket, errno, sys
for a in (sys.argv[1], "\0" + sys.argv[2]):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(a); print("connected")
    except OSError as e:
        print(errno.errorcode[e.errno])
    s.close()`, nil, path, abstract)
	lines := strings.Split(r.Stdout, "\n")
	if len(lines) != 3 || lines[0] != "ENOENT" || (lines[1] != "ECONNREFUSED" && lines[1] != "EPERM") {
		t.Errorf("stdout %q, want ENOENT then ECONNREFUSED (or EPERM)\n%s", r.Stdout, dump(r))
	}
	for _, l := range []net.Listener{pl, al} {
		ul := l.(*net.UnixListener)
		_ = ul.SetDeadline(time.Now())
		if c, err := ul.Accept(); err == nil {
			c.Close()
			t.Errorf("the host socket %s accepted a connection from the jail", l.Addr())
		}
	}
}

// Attack: fork bomb. Every process of the bomb forks forever; a watcher
// counts the jail's processes until a fork of its own is refused. The pids
// limit holds (the count never passes it, the refusal is EAGAIN), the
// result says the limit was hit, and no process of the jail survives it.
// Nothing here depends on how fast the bomb or the machine is: the watcher
// stops when the kernel refuses it, however long that takes.
func TestAttackForkBomb(t *testing.T) {
	requireRoot(t)
	tok := token(7)
	const pids = 32
	r := jailPy(t, `import os, sys
if os.fork() == 0:
    while True:
        try:
            os.fork()
        except OSError:
            pass
most = 0
while True:
    most = max(most, sum(1 for d in os.listdir("/proc") if d.isdigit()))
    try:
        c = os.fork()
    except OSError as e:
        print("refused", e.errno, "most", most, flush=True)
        break
    if c == 0:
        os._exit(0)
    os.waitpid(c, 0)
`, []string{"--pids", strconv.Itoa(pids), "--memory", "512MiB", "--timeout", "2m"}, tok)
	var errno, most int
	if _, err := fmt.Sscanf(r.Stdout, "refused %d most %d\n", &errno, &most); err != nil || errno != int(unix.EAGAIN) {
		t.Errorf("want the watcher's fork refused with EAGAIN (%d): %v\n%.2000s", unix.EAGAIN, err, dump(r))
	}
	t.Logf("the watcher saw at most %d processes before its fork was refused", most)
	if most > pids {
		t.Errorf("the jail held %d processes, over its limit of %d", most, pids)
	}
	if !hasLimit(r, "pids") || hasLimit(r, "timeout") {
		t.Errorf("limits %q; want the pids limit hit (and no timeout)\n%.2000s", r.LimitsHit, dump(r))
	}
	waitNoProcs(t, tok, time.Minute)
	if left := jailCgroups(os.Getpid()); len(left) > 0 {
		t.Errorf("cgroups left behind: %q", left)
	}
}

// Attack: exhaust the host's memory. The cgroup kills the jail at its limit.
func TestAttackMemoryBomb(t *testing.T) {
	requireRoot(t)
	r := jailPy(t, `chunks = []
for i in range(64):
    chunks.append(b"x" * (16 << 20))  # 1 GiB in all, every page touched
print("allocated 1 GiB")`, []string{"--memory", "64MiB"})
	if r.ExitCode != jail.ExitMemory || !hasLimit(r, "memory") || strings.Contains(r.Stdout, "allocated") {
		t.Errorf("want exit 137 with the memory limit hit\n%s", dump(r))
	}
}

// Attack: fill the disk through /tmp and /workspace, with one huge file and
// with many small ones. Writes stop at the tmpfs size.
func TestAttackDiskFill(t *testing.T) {
	requireRoot(t)
	r := jailSh(t, `for d in /tmp /workspace; do
	dd if=/dev/zero of=$d/big bs=1M count=100 2>/dev/null; rc=$?
	size=$(stat -c %s $d/big); rm -f $d/big
	full=no; i=0
	while [ $i -lt 8 ]; do
		i=$((i+1))
		if dd if=/dev/zero of=$d/f$i bs=1M count=1 2>&1 | grep -q 'No space left on device'; then full=yes; fi
	done
	printf '%s\t%s %s %s %s\n' $d $rc $size $full $(du -sk $d | cut -f1)
done`, "--tmp-size", "4MiB")
	got := results(r.Stdout)
	for _, dir := range []string{"/tmp", "/workspace"} {
		t.Run(dir, func(t *testing.T) {
			var rc, size, kib int
			var full string
			if _, err := fmt.Sscanf(got[dir], "%d %d %s %d", &rc, &size, &full, &kib); err != nil {
				t.Fatalf("the probe did not run: %v\n%s", err, dump(r))
			}
			if rc == 0 || size > 4<<20 {
				t.Errorf("writing 100 MiB to %s: dd exit %d, file of %d bytes; want a failure at 4 MiB", dir, rc, size)
			}
			if full != "yes" || kib > 4096 {
				t.Errorf("small files: %s holds %d KiB, No space left on device seen: %s; want at most 4096 KiB", dir, kib, full)
			}
		})
	}
}

// Attack: spin forever. The time limit kills it.
func TestAttackInfiniteLoop(t *testing.T) {
	requireRoot(t)
	r := jailSh(t, `while :; do :; done`, "--timeout", "1s")
	// A generous bound, not a benchmark: the loop must not outlive its limit.
	if r.ExitCode != jail.ExitTimeout || !hasLimit(r, "timeout") || r.DurationMS >= 10000 {
		t.Errorf("want exit 124, the timeout limit, and an end within 10s\n%s", dump(r))
	}
}

// Attack: outlive the jail with daemons: a new session (setsid) and a
// double-forked orphan. Both die with the jail's pid namespace.
func TestAttackDaemonizedGrandchild(t *testing.T) {
	requireRoot(t)
	a, b := token(1000), token(1001)
	r := jailed(t, nil, "/bin/sh", "-c", `setsid sh -c "sleep $1" & (sh -c "sleep $2 &" &); sleep 0.1; echo started`, "sh", a, b)
	if r.Stdout != "started\n" {
		t.Fatalf("the probe did not run:\n%s", dump(r))
	}
	waitNoProcs(t, a, time.Minute)
	waitNoProcs(t, b, time.Minute)
}

// supervisorArgs, when set, makes TestAttackSupervisorProcess a crucible
// supervisor with these (JSON) arguments, for TestAttackSupervisorKilled.
const supervisorArgs = "CRUCIBLE_ATTACK_SUPERVISOR_ARGS"

// TestAttackSupervisorProcess is not a test: it lets TestAttackSupervisorKilled
// run the crucible CLI in a process of its own, which it then kills.
func TestAttackSupervisorProcess(t *testing.T) {
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(supervisorArgs)), &args); err != nil {
		t.Skip("helper process for TestAttackSupervisorKilled")
	}
	os.Exit(cli.Run(context.Background(), args, cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}

// Attack (on the host side): the supervisor is SIGKILLed mid-run, so it
// cleans up nothing. PR_SET_PDEATHSIG kills the jail's init, and with it the
// whole pid namespace; its cgroup is left empty.
func TestAttackSupervisorKilled(t *testing.T) {
	requireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tok := token(1234)
	args, _ := json.Marshal([]string{"exec", "--timeout", "60s", "--", "/bin/sh", "-c", "sleep " + tok + "; :"})
	cmd := exec.Command(exe, "-test.run=^TestAttackSupervisorProcess$")
	cmd.Env = append(os.Environ(), supervisorArgs+"="+string(args))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	supervisor := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for len(hostProcs(tok)) == 0 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("the jail's sleep never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoProcs(t, tok, time.Minute)

	// A dead supervisor cannot remove its cgroups; the next one sweeps them.
	// They must hold no process; remove them here so as to leave the host clean.
	// A cgroup whose last process has just exited may stay busy a moment
	// (the kernel releases it after the exit): on a loaded machine, the
	// removal is retried, for ten seconds at most.
	for _, d := range jailCgroups(supervisor) {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err == nil && len(strings.TrimSpace(string(b))) > 0 {
			t.Errorf("the killed supervisor's cgroup %s still holds processes %q", d, b)
		}
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(end) {
				t.Errorf("removing %s: %v", d, err)
				break
			}
		}
	}
}

// Attack: find a descriptor the supervisor leaked (a host file, directory or
// socket) and use it. Only stdio is open, on pipes or /dev/null.
func TestAttackInheritedFDs(t *testing.T) {
	requireRoot(t)
	r := jailSh(t, `ls /proc/$$/fd; readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2`)
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	if len(lines) != 6 || strings.Join(lines[:3], " ") != "0 1 2" {
		t.Fatalf("want descriptors 0 1 2 only\n%s", dump(r))
	}
	for _, target := range lines[3:] {
		if !regexp.MustCompile(`^(pipe:\[\d+\]|/dev/null)$`).MatchString(target) {
			t.Errorf("stdio points at %q, want a pipe or /dev/null", target)
		}
	}
}

// Attack: reach the network. The jail has only a loopback interface, so a
// connection to the internet fails at once without a packet leaving.
func TestAttackNetwork(t *testing.T) {
	requireRoot(t)
	r := jailPy(t, `import socket
print(" ".join(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]))
for fam, addr in ((socket.AF_INET, ("1.1.1.1", 53)), (socket.AF_INET6, ("2606:4700:4700::1111", 53))):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(addr); print("connected")
    except OSError as e:
        print(e.strerror)
    s.close()`, nil)
	lines := strings.Split(r.Stdout, "\n")
	if len(lines) != 4 || lines[0] != "lo" || lines[1] != "Network is unreachable" || lines[2] == "connected" {
		t.Errorf("want only lo and unreachable networks\n%s", dump(r))
	}
}

// Attack: reach a service listening on the host's loopback (a database, a
// metadata proxy, the agent's own server) at 127.0.0.1. The jail's 127.0.0.1
// is its own lo: the connection is refused there, and the host's listener
// never sees a connection.
func TestAttackHostLoopback(t *testing.T) {
	requireRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	r := jailPy(t, `import socket, sys
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", int(sys.argv[1]))); print("connected")
except OSError as e:
    print(e.strerror)`, nil, strconv.Itoa(port))
	if strings.TrimSpace(r.Stdout) != "Connection refused" {
		t.Errorf("connecting to the host's loopback port from the jail:\n%s", dump(r))
	}
	select {
	case <-accepted:
		t.Error("the host's listener accepted a connection from the jail")
	default:
	}
}

// Attack: flood the supervisor (and the model's context) with output. Each
// stream is cut at --max-output, and the result says so.
func TestAttackOutputFlood(t *testing.T) {
	requireRoot(t)
	r := jailPy(t, `import sys
sys.stdout.write("o" * (1 << 20)); sys.stderr.write("e" * (1 << 20))`, []string{"--max-output", "1KiB"})
	if r.ExitCode != 0 || r.Stdout != strings.Repeat("o", 1024) || r.Stderr != strings.Repeat("e", 1024) ||
		!r.Truncated || !hasLimit(r, "output") {
		t.Errorf("exit %d, %d bytes out, %d bytes err, truncated %v, limits %q; want 0, 1024, 1024, true, output",
			r.ExitCode, len(r.Stdout), len(r.Stderr), r.Truncated, r.LimitsHit)
	}
}

// Attack: leave a background process behind so that the jail's cgroup
// cannot be removed. After exec returns, no cgroup of this supervisor is
// left.
func TestAttackLeavesNoCgroup(t *testing.T) {
	requireRoot(t)
	tok := token(999)
	r := jailed(t, nil, "/bin/sh", "-c", `sleep "$1" & echo started`, "sh", tok)
	if r.Stdout != "started\n" {
		t.Fatalf("the probe did not run:\n%s", dump(r))
	}
	if left := jailCgroups(os.Getpid()); len(left) > 0 {
		t.Errorf("cgroups left behind: %q", left)
	}
	waitNoProcs(t, tok, time.Minute)
}
