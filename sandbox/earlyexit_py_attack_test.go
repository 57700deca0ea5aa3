package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/violation"
)

// Attacks on the early end's copies (jail's stopCopies): once the seccomp
// listener hangs up, every output's copy is stopped at once and what the
// pipes hold is taken as all there is, also when the report gives no exit
// code. Python programs, on a warm pool, whose processes (forked children,
// grandchildren that left the runner's session, subprocesses, threads,
// descriptors duplicated or passed over a socket) write more than a pipe
// holds right up to their exits: the result must have every byte, the
// program's own exit code, its violations, and the output limit. (A
// Python runner does not report its exit, so its pool waits for init
// whatever the listener says; the JavaScript one at the end ends on a
// report with no exit code, its worker's own timeout.)

// pyWrite is Python that defines w(fd, data): every byte written, however
// the pipe splits it.
const pyWrite = `import os, sys, time
def w(fd, b):
    while b:
        b = b[os.write(fd, b):]
`

// runPool runs src on p and fails the test on a setup error.
func runPool(t *testing.T, p *Pool, src string) *Result {
	t.Helper()
	x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "-"})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// counts checks that s holds exactly want[c] bytes c for each c, and
// nothing else.
func counts(t *testing.T, what, s string, want map[byte]int) {
	t.Helper()
	n := 0
	for c, k := range want {
		if got := strings.Count(s, string(c)); got != k {
			t.Errorf("%s: %d bytes %q; want %d", what, got, c, k)
		}
		n += k
	}
	if len(s) != n {
		t.Errorf("%s: %d bytes in all; want %d", what, len(s), n)
	}
}

// A tree of writers, each writing 200 000 bytes (three pipes' worth) to
// stdout and to stderr just before it exits: a thread, a forked child, a
// grandchild in a session of its own reparented to init (the runner waits
// only for its end of a pipe to close, which it does by exiting), and a
// subprocess running another interpreter. The runner exits 7 right after
// the last of them has begun to exit.
func TestPyEarlyEndWriterTree(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox.MaxOutput = 8 * config.MiB
	p := pyPool(t, cfg, PoolOptions{Size: 1})
	src := pyWrite + `import subprocess, threading
N = 200000
def both(c):
    w(1, c.encode() * N)
    w(2, c.upper().encode() * N)
if os.fork() == 0:
    both("c")
    os._exit(0)
r, wr = os.pipe()
if os.fork() == 0:
    os.close(r)
    os.setsid()
    if os.fork() == 0:
        both("g")
        os._exit(0)  # closes wr: the runner's read ends
    os._exit(0)
os.close(wr)
t = threading.Thread(target=both, args=("t",))
t.start()
os.wait()
os.wait()
os.read(r, 1)
subprocess.run([sys.executable, "-I", "-c",
    "import os\nfor fd, c in ((1, b's'), (2, b'S')):\n    b = c * 200000\n    while b: b = b[os.write(fd, b):]\n"], check=True)
t.join()
sys.exit(7)
`
	for i := range 3 {
		x := runPool(t, p, src)
		if x.ExitCode != 7 || x.Truncated || len(x.Violations) != 0 {
			t.Errorf("run %d: exit %d, truncated %v, violations %+v; want 7, not, none (stderr %.200q)", i, x.ExitCode, x.Truncated, x.Violations, x.Stderr)
		}
		counts(t, fmt.Sprint("run ", i, " stdout"), x.Stdout, map[byte]int{'t': 200000, 'c': 200000, 'g': 200000, 's': 200000})
		counts(t, fmt.Sprint("run ", i, " stderr"), x.Stderr, map[byte]int{'T': 200000, 'C': 200000, 'G': 200000, 'S': 200000})
	}
}

// The output pipes by other names: stdout duplicated to fd 50 and
// written there, and passed over a unix socket (SCM_RIGHTS) to a child
// that closed its own stdout and writes through the received descriptor;
// a grandchild in a session of its own with PR_SET_PDEATHSIG writes through
// a dup of stderr. Each writes 300 000 bytes just before its exit; the
// runner exits 3.
func TestPyEarlyEndDescriptorsElsewhere(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox.MaxOutput = 8 * config.MiB
	p := pyPool(t, cfg, PoolOptions{Size: 1})
	src := pyWrite + `import ctypes, socket, signal
N = 300000
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
if os.fork() == 0:
    a.close()
    os.close(1)
    _, fds, _, _ = socket.recv_fds(b, 16, 1)
    w(fds[0], b"p" * N)
    os._exit(0)
b.close()
socket.send_fds(a, [b"x"], [1])
a.close()
os.dup2(1, 50)
w(50, b"d" * N)
r, wr = os.pipe()
if os.fork() == 0:
    os.close(r)
    os.setsid()
    parent = os.getpid()
    if os.fork() == 0:
        for _ in range(500):  # until init has it
            if os.getppid() != parent:
                break
            time.sleep(0.01)
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: init's death
        e = os.dup(2)
        os.close(2)
        w(e, b"q" * N)
        os._exit(0)
    os._exit(0)
os.close(wr)
os.wait()
os.wait()
os.read(r, 1)
os.close(50)
sys.exit(3)
`
	for i := range 3 {
		x := runPool(t, p, src)
		if x.ExitCode != 3 || x.Truncated || len(x.Violations) != 0 {
			t.Errorf("run %d: exit %d, truncated %v, violations %+v; want 3, not, none (stderr %.300q)", i, x.ExitCode, x.Truncated, x.Violations, x.Stderr)
		}
		counts(t, fmt.Sprint("run ", i, " stdout"), x.Stdout, map[byte]int{'p': 300000, 'd': 300000})
		counts(t, fmt.Sprint("run ", i, " stderr"), x.Stderr, map[byte]int{'q': 300000})
	}
}

// A forged report with exit code 0 (see forge), then the program writes
// on: a thread and a child, 300 000 bytes each, the thread's last just
// before the runner's exit with 5. The forged code changes nothing.
func TestPyEarlyEndForgedThenWrites(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox.MaxOutput = 8 * config.MiB
	p := pyPool(t, cfg, PoolOptions{Size: 1})
	src := forge + pyWrite + `import threading
N = 300000
if os.fork() == 0:
    time.sleep(0.2)
    w(2, b"c" * N)
    os._exit(0)
def late():
    os.wait()
    time.sleep(0.2)
    w(1, b"t" * N)
threading.Thread(target=late).start()
sys.exit(5)
`
	for i := range 3 {
		x := runPool(t, p, src)
		if x.ExitCode != 5 {
			t.Errorf("run %d: exit %d; want the program's 5, not the forged 0 (stderr %.300q)", i, x.ExitCode, x.Stderr)
		}
		counts(t, fmt.Sprint("run ", i, " stdout"), x.Stdout, map[byte]int{'t': 300000})
		counts(t, fmt.Sprint("run ", i, " stderr"), x.Stderr, map[byte]int{'c': 300000})
	}
}

// Writers past the output limit (64 KiB per stream), then a denied
// syscall from a grandchild just before its exit and from the runner just
// before its own: the output is cut at the limit and says so, and both
// refusals are in the result.
func TestPyEarlyEndLimitAndViolations(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox.MaxOutput = 64 * config.KiB
	p := pyPool(t, cfg, PoolOptions{Size: 1})
	src := pyWrite + `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for i in range(4):
    if os.fork() == 0:
        if os.fork() == 0:
            w(1, b"o" * 300000)
            w(2, b"e" * 300000)
            if i == 3:
                libc.syscall(165, 0, 0, 0, 0, 0)  # mount
            os._exit(0)
        os.wait()
        os._exit(0)
for i in range(4):
    os.wait()
libc.unshare(0x10000000)
sys.exit(9)
`
	for i := range 3 {
		x := runPool(t, p, src)
		var sys []string
		for _, v := range x.Violations {
			if v.Kind == violation.Syscall {
				sys = append(sys, v.Syscall)
			}
		}
		slices.Sort(sys)
		if x.ExitCode != 9 || !x.Truncated || !slices.Contains(x.LimitsHit, "output") || !slices.Equal(sys, []string{"mount", "unshare"}) {
			t.Errorf("run %d: exit %d, truncated %v, limits %q, syscall violations %q; want 9, truncated, output, mount and unshare", i, x.ExitCode, x.Truncated, x.LimitsHit, sys)
		}
		if len(x.Stdout) != 64<<10 || strings.Trim(x.Stdout, "o") != "" || len(x.Stderr) > 64<<10 || strings.Trim(x.Stderr, "e") != "" {
			t.Errorf("run %d: %d bytes of stdout, %d of stderr; want stdout cut at 64 KiB, stderr no more", i, len(x.Stdout), len(x.Stderr))
		}
	}
}

// A grandchild in a session of its own (and a second fork, as a daemon
// does) keeps writing 4 KiB at a time (a pipe write the kernel keeps
// whole; paced, or a fast supervisor reads the output limit's 64 MiB
// before the runner writes its line) after the runner's exit with 4: the execution ends with the
// runner, long before its timeout, with the runner's code; what the
// grandchild wrote is whole writes only; nothing of the jail is left
// once the pool is closed.
func TestPyEarlyEndOutlivesRunner(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox.Timeout = config.Duration(20 * time.Second)
	cfg.Sandbox.MaxOutput = 64 * config.MiB
	p := pyPool(t, cfg, PoolOptions{Size: 1})
	src := pyWrite + `r, wr = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(wr, b"!")
        chunk = b"g" * 4096
        while True:
            os.write(1, chunk)
            time.sleep(0.0005)  # well under the output limit by main's line
    os._exit(0)
os.wait()
os.read(r, 1)
time.sleep(0.2)
w(1, b"main done\n")
sys.exit(4)
`
	for i := range 3 {
		start := time.Now()
		x := runPool(t, p, src)
		took := time.Since(start)
		g := strings.Replace(x.Stdout, "main done\n", "", 1)
		if x.ExitCode != 4 || slices.Contains(x.LimitsHit, "timeout") || took > 10*time.Second {
			t.Errorf("run %d: exit %d, limits %q after %s; want the runner's 4, at its exit", i, x.ExitCode, x.LimitsHit, took)
		}
		if !strings.Contains(x.Stdout, "main done\n") || len(g)%4096 != 0 || strings.Trim(g, "g") != "" || len(g) == 0 {
			t.Errorf("run %d: %d bytes of stdout (main's line there: %v); want main's line and whole 4 KiB writes", i, len(x.Stdout), strings.Contains(x.Stdout, "main done\n"))
		}
	}
	p.Close()
	if left := children(); len(left) != 0 {
		t.Errorf("processes left after the pool's Close: %q", left)
	}
}

// The engine's worker reports no exit code when it stops the program for
// its timeout itself: the execution waits for init's exit code, and the
// copies are stopped when the listener hangs up. A program writes
// numbered lines of 70 000 bytes (more than a pipe holds, so that each
// write ends with the pipe full) until the worker stops it: the result
// has every line whole, in order, from the first, and the worker's
// TimeoutError on stderr. (Should the jail's kill come first on a loaded
// machine, the copies run to their end as before, and only the write it
// interrupted may be cut.)
func TestJSEarlyEndNoExitCodeOutput(t *testing.T) {
	cfg := embedded()
	cfg.Sandbox.Timeout = config.Duration(3 * time.Second)
	cfg.Sandbox.MaxOutput = 256 * config.MiB
	p, err := NewPool(cfg, "js", PoolOptions{Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const src = `const pad = "x".repeat(69990);
for (let i = 0; ; i++) {
  const t = Date.now();
  while (Date.now() - t < 3) {}
  console.log(String(i).padStart(9, "0") + pad);
}`
	byWorker := 0
	for i := range 4 {
		// A jail still starting when the job comes has the jail's clock
		// running before the worker's (see stopBefore) by as long as its
		// engine takes to start; a ready one only by the job's reading.
		awaitReady(t, p, 1)
		x := runPool(t, p, src)
		if x.ExitCode != jail.ExitTimeout || !slices.Contains(x.LimitsHit, "timeout") {
			t.Errorf("run %d: exit %d, limits %q; want %d and timeout", i, x.ExitCode, x.LimitsHit, jail.ExitTimeout)
		}
		if x.Error != nil && x.Error.Name == "TimeoutError" {
			// Else the jail's kill came first (a loaded machine): the
			// copies then run to their end, as before.
			byWorker++
			if !strings.Contains(x.Stderr, "TimeoutError") {
				t.Errorf("run %d: stderr %q lacks the TimeoutError", i, x.Stderr)
			}
		}
		lines := strings.Split(x.Stdout, "\n")
		if x.Error == nil {
			// The jail's SIGKILL may cut the write it interrupts.
			lines[len(lines)-1] = ""
		}
		if lines[len(lines)-1] != "" || len(lines) < 11 {
			t.Errorf("run %d: %d bytes of stdout, %d lines, its end %q; want 10 lines or more, the last whole (error %+v, stderr %.300q)", i, len(x.Stdout), len(lines)-1, x.Stdout[max(0, len(x.Stdout)-20):], x.Error, x.Stderr)
			continue
		}
		for n, l := range lines[:len(lines)-1] {
			if len(l) != 69999 || l[:9] != fmt.Sprintf("%09d", n) {
				t.Errorf("run %d: line %d is %d bytes, %.12q; want 69999, numbered %d", i, n, len(l), l, n)
				break
			}
		}
	}
	if byWorker == 0 {
		t.Error("the worker's own stop never came first: the early end without an exit code was not reached")
	}
}
