package jail

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/violation"
)

// Attacks on the early end itself (Spec.ReportedExit): a command that reports
// "ok" on fd 3, which the earlyExit of these tests reads as the exit code 3,
// and then does what it likes before its end. None of it may change what
// the execution says happened, or let Wait return while a process of the
// command can still write or raise a denied syscall. Each attack runs in
// the shell and in Python; the Python ones carry a ballast of touched
// memory, whose teardown after the exit (milliseconds) lets the report's
// end win the race with init's nearly every time, so that they go the
// early way: TestEarlyExit shows it always does.

const python3 = "/usr/bin/python3"

// attack is one command of an attack: its name, and args that write "ok"
// to fd 3 first.
type attack struct {
	name string
	args []string
}

// attacks are the shell's and Python's versions of an attack: sh follows
// `printf ok >&3`; py follows the report and a ballast of 200 MB.
func attacks(t *testing.T, sh, py string) []attack {
	t.Helper()
	testenv.NeedRoot(t, "the cgroup layer")
	if _, err := os.Stat(python3); err != nil {
		testenv.Missing(t, "needs "+python3)
	}
	return []attack{
		{"sh", []string{"/bin/sh", "-c", "printf ok >&3\n" + sh}},
		{"python", []string{python3, "-c", `import os, sys
os.write(3, b"ok")
ballast = b"y" * (200 << 20)  # touched: its teardown takes milliseconds
` + py}},
	}
}

// repeat runs an attack at least 3 times and until one run has gone the
// early way, at most 10 times: each run must have the exit code of the
// report (3) or the command's own, own, as init saw it, for init may still
// win the race (a loaded machine, a quick teardown); one of them must have
// been the report's, or the attack missed the early end.
func repeat(t *testing.T, a attack, own int, run func() *Result) {
	t.Helper()
	early := 0
	for i := 0; i < 10 && (i < 3 || early == 0); i++ {
		switch r := run(); r.ExitCode {
		case 3:
			early++
		case own:
		default:
			t.Errorf("%s: exit %d; want the reported 3 or init's %d", a.name, r.ExitCode, own)
		}
	}
	if early == 0 {
		t.Errorf("%s: no run of 10 ended on the report", a.name)
	}
}

// attackSpec is spec for a, with room for the ballast.
func attackSpec(a attack) *Spec {
	s := spec(a.args...)
	s.Memory = 512 << 20
	return s
}

// A report and then the memory exhausted: the OOM killer's kill comes
// after the report, which does not say how the command ended. The result
// is init's (exit 137, SIGKILL, memory), never the report's 3.
func TestEarlyExitAttackOOM(t *testing.T) {
	for _, a := range attacks(t, `a=x; while :; do a=$a$a; done`, `
del ballast
b = []
while True:
    b.append(bytearray(8 << 20))
`) {
		for range 3 {
			s := attackSpec(a)
			s.Memory = 64 << 20
			r, _, _ := runEarly(t, s)
			if r.ExitCode != ExitMemory || r.Signal != "SIGKILL" || !slices.Contains(r.LimitsHit, "memory") {
				t.Errorf("%s: %+v; want exit %d, SIGKILL and the memory limit", a.name, r, ExitMemory)
			}
		}
	}
}

// A report and then a sleep past the timeout: the timeout's kill ends
// every process of the command at once, which ends the seccomp filter's
// users as an exit would; the result is the timeout's (124), with the
// output written before it.
func TestEarlyExitAttackTimeout(t *testing.T) {
	for _, a := range attacks(t, `echo before; sleep 60`, `
print("before", flush=True)
import time
time.sleep(60)
`) {
		s := attackSpec(a)
		// Two seconds from its first line: Python under load may take
		// longer than that to print it.
		b := newBeginOnOutput()
		s.Stdout, s.Timeout = b, 2*time.Second
		start := time.Now()
		r, out, _ := runEarly(t, s)
		if r.ExitCode != ExitTimeout || !slices.Contains(r.LimitsHit, "timeout") || out != "before\n" {
			t.Errorf("%s: %+v, output %q; want exit %d, the timeout and before", a.name, r, out, ExitTimeout)
		}
		if took := time.Since(start); took > 60*time.Second {
			t.Errorf("%s: ran %s; the timeout is 2 s from its first line", a.name, took)
		}
	}
}

// A report and then a thread (Python only), a child and a grandchild in a
// session of its own, which write to stdout and to the workspace after a
// second, while the command waits for them: Wait returns only once all of
// them have exited, with their output and their files there. And when the
// command does not wait for them, they die with it, before Wait: nothing
// of theirs turns up later. Either way no process of the jail is left.
func TestEarlyExitAttackLive(t *testing.T) {
	const sh = `late() { sleep 1; echo $1 > /workspace/$1; echo $1; }
late child &
( setsid sh -c "sleep 1; echo grandchild > /workspace/grandchild; echo grandchild" & wait ) &
`
	const py = `
import threading, time
def late(name):
    time.sleep(1)
    with open("/workspace/" + name, "w") as f:
        f.write(name + "\n")
    os.write(1, name.encode() + b"\n")
t = threading.Thread(target=late, args=("thread",))
t.start()
pid = os.fork()
if pid == 0:
    if os.fork() == 0:
        os.setsid()
        late("grandchild")
        os._exit(0)
    late("child")
    os.wait()
    os._exit(0)
`
	for _, wait := range []bool{true, false} {
		// Without the wait they sleep 5 s, not 1: the kill must come
		// before they write, and on a slow machine it may take a second.
		shWait, pyWait := "exit 0", "os._exit(0)"
		shCmd, pyCmd := strings.ReplaceAll(sh, "sleep 1", "sleep 5"), strings.ReplaceAll(py, "time.sleep(1)", "time.sleep(5)")
		if wait {
			shWait, pyWait = "wait; exit 0", "t.join(); os.waitpid(pid, 0); os._exit(0)"
			shCmd, pyCmd = sh, py
		}
		for _, a := range attacks(t, shCmd+shWait, pyCmd+pyWait) {
			names := []string{"child", "grandchild"}
			if a.name == "python" {
				names = append(names, "thread")
			}
			run := func() *Result {
				ws := testenv.PublicDir(t)
				s := attackSpec(a)
				s.Workspace = ws
				var files []string
				var atWait time.Time
				r := runEarlyThen(t, s, func() {
					atWait = time.Now()
					files = workspaceFiles(ws)
				})
				start := atWait.Add(-r.Duration)
				if wait {
					for _, n := range names {
						if !slices.Contains(files, n) || !strings.Contains(r.out, n+"\n") {
							t.Errorf("%s: at Wait, the %s had not written: files %q, output %q", a.name, n, files, r.out)
						}
					}
					if atWait.Sub(start) < time.Second {
						t.Errorf("%s: Wait returned after %s, before the processes' 1 s sleep", a.name, atWait.Sub(start))
					}
				} else {
					// Had any survived, it would write 5 s after the start.
					time.Sleep(time.Until(start.Add(7 * time.Second)))
					if got := workspaceFiles(ws); len(files) != 0 || len(got) != 0 || r.out != "" {
						t.Errorf("%s: files %q at Wait, %q later, output %q; want none: the processes die with the command", a.name, files, got, r.out)
					}
				}
				if left := childrenOf(os.Getpid()); len(left) != 0 {
					t.Errorf("%s: processes left after Run: %v", a.name, left)
				}
				if left := jailCgroups(); len(left) != 0 {
					t.Errorf("%s: cgroups left after Run: %q", a.name, left)
				}
				return r.Result
			}
			if wait {
				repeat(t, a, 0, run)
			} else {
				// The command's main process exits first: init reports
				// its end, and the rest die with init. Their deaths then
				// end the seccomp filter's users too, so on a loaded
				// machine the report's end may be ready as soon as
				// init's, and either may be taken: the same output.
				if r := run(); r.ExitCode != 0 && r.ExitCode != 3 {
					t.Errorf("%s: exit %d; want init's 0 (or the report's 3)", a.name, r.ExitCode)
				}
			}
		}
	}
}

// outResult is a Result with the output that Wait saw.
type outResult struct {
	*Result
	out string
}

// runEarlyThen is runEarly, calling then once Wait has returned too.
func runEarlyThen(t *testing.T, s *Spec, then func()) outResult {
	t.Helper()
	var out, errb, report bytes.Buffer
	s.Stdout, s.Stderr, s.Result = &out, &errb, &report
	s.ReportedExit = earlyExit
	j := startBegun(t, s, nil)
	early, err := j.Wait()
	if err != nil {
		t.Errorf("Wait: %v", err)
	}
	then()
	outThen := out.String()
	r, err := j.Close()
	if err != nil {
		t.Fatal(err)
	}
	if r != early || outThen != out.String() {
		t.Fatalf("Close: %+v, Wait: %+v; the output grew after Wait", r, early)
	}
	return outResult{r, outThen}
}

// workspaceFiles are the names in dir.
func workspaceFiles(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*"))
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// A denied syscall right before the exit, after the report, from the main
// process, another thread (Python) and a child: each is in the result, as
// the jail recorded it before the early end.
func TestEarlyExitAttackViolation(t *testing.T) {
	for _, a := range attacks(t, `(unshare -U true 2>/dev/null); exec unshare -m true 2>/dev/null`, `
import ctypes, threading
libc = ctypes.CDLL(None, use_errno=True)
t = threading.Thread(target=lambda: libc.unshare(0x10000000))
t.start(); t.join()
if os.fork() == 0:
    libc.syscall(101, 0, 0, 0, 0)  # ptrace(PTRACE_TRACEME)
    os._exit(0)
os.wait()
libc.syscall(165, 0, 0, 0, 0, 0)  # mount
os._exit(0)
`) {
		want, own := []string{"mount", "ptrace", "unshare"}, 0
		if a.name == "sh" {
			want, own = []string{"unshare"}, 1 // its exec'd unshare fails
		}
		repeat(t, a, own, func() *Result {
			r, _, _ := runEarly(t, attackSpec(a))
			var got []string
			count := 0
			for _, v := range r.Violations {
				if v.Kind == violation.Syscall {
					got = append(got, v.Syscall)
					count += v.Count
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: syscall violations %q (%+v); want %q", a.name, got, r, want)
			}
			// The shell's unshare in a child and in the main process: two.
			if a.name == "sh" && count < 2 {
				t.Errorf("%s: %d denied syscalls recorded (%+v); want both unshares", a.name, count, r.Violations)
			}
			return r
		})
	}
}

// A report, then several processes write more than a pipe holds just
// before they exit (the last with its pipe grown to 1 MB, full when it
// exits): the result has every byte. With a smaller output limit it is cut
// at the limit and says so.
func TestEarlyExitAttackOutput(t *testing.T) {
	const n, each = 4, 300000
	as := attacks(t, `for i in 0 1 2 3; do head -c 300000 /dev/zero | tr '\0' $i & done
wait
head -c 1048576 /dev/zero | tr '\0' m
head -c 100000 /dev/zero | tr '\0' e >&2
exit 0`, `
import fcntl
for i in range(4):
    if os.fork() == 0:
        os.write(1, str(i).encode() * 300000)
        os._exit(0)
for i in range(4):
    os.wait()
fcntl.fcntl(1, 1031, 1 << 20)  # F_SETPIPE_SZ
os.write(1, b"m" * (1 << 20))
os.write(2, b"e" * 100000)
os._exit(0)
`)
	for _, a := range as {
		repeat(t, a, 0, func() *Result {
			s := attackSpec(a)
			s.MaxOutput = 8 << 20
			r, out, errb := runEarly(t, s)
			want := n*each + 1<<20
			if len(out) != want || !strings.HasSuffix(out, strings.Repeat("m", 1<<20)) || errb != strings.Repeat("e", 100000) || r.Truncated {
				t.Errorf("%s: %d bytes of stdout, %d of stderr, truncated %v; want %d, 100000 and not", a.name, len(out), len(errb), r.Truncated, want)
			}
			for i := range n {
				if c := strings.Count(out, string(rune('0'+i))); c != each {
					t.Errorf("%s: %d bytes of process %d's output; want %d", a.name, c, i, each)
				}
			}
			return r
		})
		s := attackSpec(a)
		s.MaxOutput = 64 << 10
		r, out, errb := runEarly(t, s)
		if !r.Truncated || !slices.Contains(r.LimitsHit, "output") || len(out) != 64<<10 || len(errb) != 64<<10 {
			t.Errorf("%s: %d+%d bytes, truncated %v, limits %q; want each stream cut at 64 KiB", a.name, len(out), len(errb), r.Truncated, r.LimitsHit)
		}
	}
}
