package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/violation"
)

// Attacks on the early end of an execution (jail.Spec.ReportedExit): the jail
// ends a program's execution on its runner's report, with the exit code in
// it, once every process of the program has begun to exit. A Python
// program runs in its runner's process and can write that report itself,
// with any exit code, and then do what it likes before its end: none of it
// may change what the execution says happened. (Python's runner does not
// say it reports its exit, lang.Program.ReportsExit, so such a report is
// not ended on at all; these hold whatever the runner says. The jail's
// tests attack the early end itself.)

// forge is Python that writes a report with an exit code on fd 3, as the
// engine's worker does, and closes fd 3 so that run.py's own report cannot
// follow.
const forge = `import os, sys
os.write(3, b'{"result": "forged", "exit": 0}')
os.close(3)
`

// runPy runs src as a one-shot Python program with cfg.
func runPy(t *testing.T, cfg *config.Config, src string) *Result {
	t.Helper()
	return runOneShot(t, cfg, "py", src, Options{})
}

// runOneShot runs src, of language, as a one-shot program with cfg and o.
func runOneShot(t *testing.T, cfg *config.Config, language, src string, o Options) *Result {
	t.Helper()
	prog, err := Program(cfg, language, []byte(src), "-")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, prog, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// both runs src on a Python pool with cfg and one-shot, and checks each
// result.
func both(t *testing.T, cfg *config.Config, src string, check func(how string, x *Result)) {
	t.Helper()
	if cfg == nil {
		cfg = config.Default()
	}
	p := pyPool(t, cfg, PoolOptions{Size: 1})
	x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "-"})
	if err != nil {
		t.Fatal(err)
	}
	check("pool", x)
	p.Close()
	check("one-shot", runPy(t, cfg, src))
}

// A program that forges the report's exit code and then exhausts its
// memory is killed by the OOM killer: the execution says so as it would
// without the report (exit 137, SIGKILL, limits_hit memory), not with the
// forged code.
func TestEarlyExitForgedOOM(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox.Memory = 64 * config.MiB
	for range 3 {
		both(t, cfg, forge+`
b = []
while True:
    b.append(bytearray(8 << 20))
`, func(how string, x *Result) {
			if x.ExitCode != jail.ExitMemory || x.Signal != "SIGKILL" || !slices.Contains(x.LimitsHit, "memory") {
				t.Errorf("%s: exit %d, signal %q, limits %q; want %d, SIGKILL and memory", how, x.ExitCode, x.Signal, x.LimitsHit, jail.ExitMemory)
			}
		})
	}
}

// A forged report, then a sleep past the timeout: the execution ends as a
// timeout (exit 124, limits_hit timeout), not with the forged code, and the
// output written before it is there. On a pool whose jail is ready, and
// one-shot. The jail's clock runs from the job's arrival, or the one-shot
// jail's start: on a loaded machine Python may not get to its print in 2 s
// (a one-shot's interpreter starts in that time), and the kill then comes
// before it. Such a run, a timeout with no output, is run again with a
// longer timeout; the last (32 s) must have the output.
func TestEarlyExitForgedTimeout(t *testing.T) {
	const src = forge + `
import time
print("before", flush=True)
time.sleep(60)
`
	timeouts := []time.Duration{2 * time.Second, 8 * time.Second, 32 * time.Second}
	for _, how := range []string{"pool", "one-shot"} {
		for i, timeout := range timeouts {
			cfg := config.Default()
			cfg.Sandbox.Timeout = config.Duration(timeout)
			var x *Result
			if how == "pool" {
				p := pyPool(t, cfg, PoolOptions{Size: 1})
				awaitReady(t, p, 1)
				x = runPool(t, p, src)
				p.Close()
			} else {
				x = runPy(t, cfg, src)
			}
			last := i == len(timeouts)-1
			if x.ExitCode != jail.ExitTimeout || !slices.Contains(x.LimitsHit, "timeout") || x.Stdout != "before\n" && (x.Stdout != "" || last) {
				t.Errorf("%s, timeout %s: exit %d, limits %q, stdout %q; want %d, timeout and before", how, timeout, x.ExitCode, x.LimitsHit, x.Stdout, jail.ExitTimeout)
			}
			if x.Stdout != "" {
				break
			}
			if !last {
				t.Logf("%s: no output in a timeout of %s, again with a longer one", how, timeout)
			}
		}
	}
}

// A forged report, then the program's processes go on: a child and a
// grandchild in a session of its own, which write after a second (to
// stdout and to /workspace), and a thread, which writes after two and
// keeps the program's main process (Python waits for it) until then. The
// execution ends only once the main process has, as without the report
// (the jail ends with its command's main process; the others, still
// running then, would be killed with it): it has all their output, and
// their files are in the workspace when the execution is over; no
// process of the jail is left.
func TestEarlyExitForgedThenLive(t *testing.T) {
	root := t.TempDir()
	p := pyPool(t, nil, PoolOptions{Size: 1, Workspaces: true})
	dir := filepath.Join(root, "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	src := forge + `
import threading, time
def late(name, after=1):
    time.sleep(after)
    with open("/workspace/" + name, "w") as f:
        f.write(name)
    os.write(1, name.encode() + b"\n")
threading.Thread(target=late, args=("thread", 2)).start()
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        late("grandchild")
        os._exit(0)
    late("child")
    os._exit(0)
`
	start := time.Now()
	x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "-", Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, name := range []string{"thread", "child", "grandchild"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != name {
			t.Errorf("after the result (%s), %s had not written its file: %q, %v", took, name, b, err)
		}
		if !strings.Contains(x.Stdout, name+"\n") {
			t.Errorf("the output %q lacks the %s's", x.Stdout, name)
		}
	}
	if took < 2*time.Second {
		t.Errorf("the execution ended after %s, before its processes' 2 s sleep", took)
	}
	p.Close()
	if left := children(); len(left) != 0 {
		t.Errorf("processes left after the pool's Close: %q", left)
	}
}

// A denied syscall right before the exit, after a forged report, from the
// program's main thread, another thread and a child: each is in the
// result as a violation.
func TestEarlyExitForgedViolation(t *testing.T) {
	src := forge + `
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
`
	for range 3 {
		both(t, nil, src, func(how string, x *Result) {
			var got []string
			for _, v := range x.Violations {
				if v.Kind == violation.Syscall {
					got = append(got, v.Syscall)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, []string{"mount", "ptrace", "unshare"}) {
				t.Errorf("%s: syscall violations %q (%+v); want mount, ptrace and unshare", how, got, x)
			}
		})
	}
}

// A forged report, then several processes write more than a pipe holds,
// just before they exit (the last of them with a pipe grown to 1 MB, all
// full when it exits): the result has every byte; with a smaller output
// limit it is cut at the limit and says so.
func TestEarlyExitForgedOutput(t *testing.T) {
	src := forge + `
import fcntl
n = 4
for i in range(n):
    if os.fork() == 0:
        os.write(1, str(i).encode() * 300000)
        os._exit(0)
for i in range(n):
    os.wait()
fcntl.fcntl(1, 1031, 1 << 20)  # F_SETPIPE_SZ
os.write(1, b"m" * (1 << 20))
os.write(2, b"e" * 100000)
os._exit(0)
`
	cfg := config.Default()
	cfg.Sandbox.MaxOutput = 8 * config.MiB
	for range 3 {
		both(t, cfg, src, func(how string, x *Result) {
			want := 4*300000 + 1<<20
			if len(x.Stdout) != want || !strings.HasSuffix(x.Stdout, strings.Repeat("m", 1<<20)) || x.Stderr != strings.Repeat("e", 100000) || x.Truncated {
				t.Errorf("%s: %d bytes of stdout, %d of stderr, truncated %v; want %d, 100000 and not", how, len(x.Stdout), len(x.Stderr), x.Truncated, want)
			}
			for i := range 4 {
				if c := strings.Count(x.Stdout, string(rune('0'+i))); c != 300000 {
					t.Errorf("%s: %d bytes of child %d's output; want 300000", how, c, i)
				}
			}
		})
	}
	cfg.Sandbox.MaxOutput = 64 * config.KiB
	both(t, cfg, src, func(how string, x *Result) {
		if !x.Truncated || !slices.Contains(x.LimitsHit, "output") || len(x.Stdout)+len(x.Stderr) > 2*64<<10 {
			t.Errorf("%s: %d+%d bytes, truncated %v, limits %q; want the output cut at 64 KiB", how, len(x.Stdout), len(x.Stderr), x.Truncated, x.LimitsHit)
		}
	})
}
