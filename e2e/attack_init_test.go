package e2e

// Attacks on the jail's init, which now starts the command itself from a
// thread that drops its own privileges first: the command goes for init's
// threads (that one included, while it lasts), its descriptors and /proc
// files, the credentials the thread handed down, and the signal state it
// inherits.

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// Attack: signal, trace, read or write init and each of its threads through
// kill, tgkill, tkill, ptrace, pidfds and /proc/1/task/TID. Every thread of
// init is the jail's root (real and saved uid 0), so the sandbox user can
// signal none; init is not dumpable, so none of its /proc files open.
func TestAttackInitThreads(t *testing.T) {
	requireRoot(t)
	r := jailPy(t, pyRaw+`tids = sorted(int(t) for t in os.listdir("/proc/1/task"))
print("threads\t%d" % len(tids))
def write(p, data):
    fd = os.open(p, os.O_WRONLY)
    try:
        return "wrote %d" % os.write(fd, data)
    finally:
        os.close(fd)
def read(p):
    if p.endswith(("/fd", "/fdinfo")):
        return "listed %d" % len(os.listdir(p))
    if p.endswith(("/cwd", "/root", "/exe")):
        return os.readlink(p)
    with open(p, "rb") as f:
        return "read %d" % len(f.read(1))
for t in tids:
    d = "/proc/1/task/%d" % t
    ids = [l.split()[1:] for l in open(d + "/status").read().splitlines() if l.startswith(("Uid:", "Gid:"))]
    print("ids %d\t%s" % (t, " ".join(sum(ids, []))))
    case("kill %d" % t, lambda: os.kill(t, 9) or "killed")
    case("tgkill %d" % t, lambda: raw(234, 1, t, 9))
    case("tkill %d" % t, lambda: raw(200, t, 15))
    case("tkill stop %d" % t, lambda: raw(200, t, 19))
    case("ptrace seize %d" % t, lambda: raw(101, 0x4206, t, 0, 0))
    for f in ("mem", "environ", "auxv", "syscall", "stack", "maps", "pagemap", "cwd", "root", "exe", "fd", "fdinfo"):
        case("read %s %d" % (f, t), lambda: read(d + "/" + f))
    for f in ("comm", "oom_score_adj", "attr/current", "clear_refs", "loginuid", "uid_map", "gid_map", "setgroups", "sched"):
        case("write %s %d" % (f, t), lambda: write(d + "/" + f, b"0"))
pfd = os.pidfd_open(1)
case("pidfd_send_signal", lambda: raw(424, pfd, 9, 0, 0))
case("pidfd_getfd", lambda: raw(438, pfd, 3, 0))
for fd in range(3, 16):
    case("open init fd %d" % fd, lambda: os.open("/proc/1/fd/%d" % fd, os.O_RDWR) and "opened")
case("kill -1", lambda: os.kill(-1, 9) or "killed")
`, nil)
	got := results(r.Stdout)
	if r.ExitCode != 0 || got["threads"] == "" || got["threads"] == "0" {
		t.Fatalf("the probe did not run to its end:\n%s", dump(r))
	}
	for k, v := range got {
		switch {
		case k == "threads":
		case strings.HasPrefix(k, "ids "):
			// Real, effective, saved, fs: 0 for uid and gid alike, never
			// the sandbox user's 1000, which could signal the thread.
			if v != "0 0 0 0 0 0 0 0" {
				t.Errorf("init thread %s has ids %q, want the jail root's only", k[4:], v)
			}
		case k == "kill -1":
			if v != "-1 3" { // ESRCH: nothing the sandbox user may signal but itself
				t.Errorf("%s: %q, want ESRCH", k, v)
			}
		case strings.HasPrefix(k, "kill "), strings.HasPrefix(k, "tgkill "), strings.HasPrefix(k, "tkill "), k == "pidfd_send_signal":
			if v != denied {
				t.Errorf("%s: %q, want EPERM", k, v)
			}
		case strings.HasPrefix(k, "ptrace "), k == "pidfd_getfd":
			if v != denied {
				t.Errorf("%s: %q, want the filter's EPERM", k, v)
			}
		case strings.HasPrefix(k, "open init fd "), strings.HasPrefix(k, "read "), strings.HasPrefix(k, "write "):
			// EACCES for the most, ENOENT where the kernel lacks the
			// file, EPERM where a task may only write its own.
			if v != "-1 13" && v != "-1 2" && v != denied {
				t.Errorf("%s: %q, want it refused", k, v)
			}
		default:
			t.Errorf("unexpected line %s: %s", k, v)
		}
	}
	for _, v := range []string{"ptrace", "pidfd_getfd"} {
		if !violated(r, v) {
			t.Errorf("no %s violation recorded: %v", v, r.Violations)
		}
	}
}

// Attack: race init's thread from the command's first instruction: a
// shell that at once, and 200 times over, sends SIGKILL, SIGSTOP and the
// terminating signals to pid 1, to every thread of init (the one that
// started it included, if still there), to every other pid and to -1. None
// lands: the command ends on its own terms, with its own exit code.
func TestAttackInitRace(t *testing.T) {
	requireRoot(t)
	r := jailSh(t, `i=0
while [ $i -lt 200 ]; do
	for p in 1 /proc/1/task/* /proc/[0-9]*; do
		p=${p##*/}
		[ "$p" = $$ ] && continue
		for s in KILL STOP TERM HUP INT SEGV; do kill -s $s "$p" 2>/dev/null; done
	done
	kill -s KILL -1 2>/dev/null
	i=$((i+1))
done
kill -s KILL 1 && echo "init signalled"
echo survived; exit 7`)
	if r.ExitCode != 7 || r.Signal != "" || r.Stdout != "survived\n" {
		t.Errorf("want the shell's own exit 7 and nothing signalled:\n%s", dump(r))
	}
	if len(r.Violations) != 0 {
		t.Errorf("violations recorded for plain kills: %v", r.Violations)
	}
}

// Attack: win back what init's thread had before it dropped it, from the
// command: set uid, gid and groups to root's, raise capabilities (capset,
// ambient), unlock securebits, keep caps, clear no_new_privs, and get a new
// user namespace through clone3, whose flags a filter cannot read. The
// command's status shows nothing gained, before and after.
func TestAttackInitCredentials(t *testing.T) {
	requireRoot(t)
	r := jailPy(t, pyRaw+`def status(tag):
    for l in open("/proc/self/status").read().splitlines():
        k, _, v = l.partition(":")
        if k in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
            print("%s %s\t%s" % (tag, k, " ".join(v.split())))
status("before")
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)(*([0xffffffff] * 6))
groups = (ctypes.c_uint32 * 1)(0)
args = (ctypes.c_uint64 * 11)(0x10000000, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0)  # CLONE_NEWUSER, SIGCHLD
def clone3():
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(435), ctypes.addressof(args), ctypes.c_long(88))
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    return "%d %d" % (r, ctypes.get_errno())
case("setuid", lambda: raw(105, 0))
case("setgid", lambda: raw(106, 0))
case("setresuid", lambda: raw(117, 0, 0, 0))
case("setresgid", lambda: raw(119, 0, 0, 0))
case("setgroups", lambda: raw(116, 1, ctypes.addressof(groups)))
raw(122, 0)  # setfsuid: answers with the old fsuid, never an error
case("fsuid", lambda: raw(122, 0xffffffff).split()[0])
case("capset", lambda: raw(126, ctypes.addressof(hdr), ctypes.addressof(data)))
case("securebits", lambda: raw(157, 28, 0, 0, 0, 0))
case("keepcaps", lambda: raw(157, 8, 1, 0, 0, 0))
case("ambient raise", lambda: raw(157, 47, 2, 21, 0, 0))
case("no_new_privs off", lambda: raw(157, 38, 0, 0, 0, 0))
case("clone3 newuser", clone3)
status("after")
`, nil)
	got := results(r.Stdout)
	want := map[string]string{"setuid": denied, "setgid": denied, "setresuid": denied, "setresgid": denied,
		"setgroups": denied, "fsuid": "1000", "capset": denied, "securebits": denied, "keepcaps": denied,
		"ambient raise": denied, "no_new_privs off": "-1 22", "clone3 newuser": "-1 38"} // ENOSYS: glibc then tries clone
	for _, tag := range []string{"before", "after"} {
		for k, v := range map[string]string{"Uid": "1000 1000 1000 1000", "Gid": "1000 1000 1000 1000", "Groups": "",
			"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
			"CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"} {
			want[tag+" "+k] = v
		}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
	if t.Failed() {
		t.Log(dump(r))
	}
}

// Attack (on the operator's side): start crucible with signals ignored, as
// nohup and a non-interactive shell's background jobs do, or blocked, so
// that the command, which inherits whatever init leaves ignored, cannot be
// hung up or stopped by its own signals. It must start with every
// disposition at its default and nothing blocked, as from a login shell.
func TestAttackInitInheritedSignals(t *testing.T) {
	requireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// $0 is the test binary, run as main runs crucible (CRUCIBLE_TEST_CLI).
	probe := `exec "$0" exec -- /bin/sh -c 'grep -E "^Sig(Blk|Ign):" /proc/self/status'`
	check := func(t *testing.T, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, append(args, exe)...)
		cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_CLI=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("crucible exec: %v\n%s", err, out)
		}
		if want := "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"; string(out) != want {
			t.Errorf("the command's signal state:\n%swant\n%s", out, want)
		}
	}
	t.Run("blocked", func(t *testing.T) {
		testenv.NeedTool(t, "python3")
		check(t, "python3", "-c", `import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGCHLD})
os.execv("/bin/sh", ["sh", "-c", sys.argv[1], sys.argv[2]])`, probe)
	})
	t.Run("ignored", func(t *testing.T) {
		check(t, "/bin/sh", "-c", `trap "" HUP INT QUIT TERM PIPE USR1; `+probe)
	})
}

// Attack: find a descriptor of init's in the command (the control socket,
// the spec pipe, detached mounts, the seccomp listener) and use it; then
// close the result pipe, fd 3, and put /dev/null in its place. Past stdio
// the command holds the result pipe and the files it opened itself, and the
// jail ends normally without its result.
func TestAttackInitDescriptors(t *testing.T) {
	requireRoot(t)
	testenv.NeedTool(t, "python3")
	r := jsonRun(t, `import os
for fd in range(1024):
    try:
        os.fstat(fd)
    except OSError:
        continue
    print("fd %d\t%s" % (fd, os.readlink("/proc/self/fd/%d" % fd).split("[")[0]))
os.close(3)
print("reopened\t%d" % os.open("/dev/null", os.O_RDWR))
`, "run", "--json", "--lang", "py", "-")
	got := results(r.Stdout)
	if r.ExitCode != 0 || got["reopened"] != "3" || got["fd 3"] != "pipe:" {
		t.Fatalf("want the result pipe at fd 3, replaced, and a normal end:\n%s", dump(r))
	}
	for k, v := range got {
		if strings.HasPrefix(k, "fd ") && (strings.HasPrefix(v, "socket:") || strings.HasPrefix(v, "anon_inode:") || v == "/") {
			t.Errorf("%s is %q: a descriptor of init's reached the command", k, v)
		}
	}
}

// Init's thread runs Go after it installs the command's filter (until it
// ends), and forks under it: none of that may count against the command.
// A command that makes no refused call has no violation, time after time.
func TestAttackInitNoSpuriousViolations(t *testing.T) {
	requireRoot(t)
	for range 3 {
		r := jailed(t, nil, "/bin/true")
		if r.ExitCode != 0 || len(r.Violations) != 0 {
			t.Fatalf("want a clean exit and no violation:\n%s", dump(r))
		}
	}
}

// Attack: exhaust the jail's pids limit from the command's first
// instruction, while init's thread may still be on its way out and init
// may want a thread of its own: init still reaps the command and reports
// its own exit code, and the limit is recorded. (The shell forks its sleep
// before the bomb and nothing after it: a shell that cannot fork exits 2,
// as init's runtime does when it cannot make a thread.)
func TestAttackInitForkBombAtStart(t *testing.T) {
	requireRoot(t)
	r := jailSh(t, `sleep 1 & s=$!; b() { b | b & }; b & wait $s; echo survived; exit 3`, "--pids", "16", "--timeout", "30s")
	if r.ExitCode != 3 || r.Stdout != "survived\n" {
		t.Errorf("want the shell's own exit 3 past the bomb:\n%.2000s", dump(r))
	}
	if !hasLimit(r, "pids") {
		t.Errorf("the pids limit is not recorded: %v", r.LimitsHit)
	}
}
