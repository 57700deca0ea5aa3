package jail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"golang.org/x/sys/unix"
)

// selfTest is where TestSelf binds this test binary in the jail.
const selfTest = FilesDir + "/bin/self-test"

func TestMain(m *testing.M) {
	if os.Args[0] == selfTest {
		// TestSelf's command: this binary, run inside the jail.
		err := os.WriteFile(selfTest, nil, 0)
		fmt.Printf("self in the jail, uid %d, writable: %v, timer slack %d\n", os.Getuid(), err == nil, ownSlack())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestCapWriter(t *testing.T) {
	var b bytes.Buffer
	w := &capWriter{w: &b, left: 5}
	for _, s := range []string{"ab", "cde", "fgh", ""} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want all of it taken", s, n, err)
		}
	}
	if b.String() != "abcde" || !w.cut {
		t.Fatalf("passed %q, cut %v; want abcde, true", b.String(), w.cut)
	}
	w = &capWriter{left: 3}
	_, _ = w.Write([]byte("abc"))
	if w.cut {
		t.Fatal("exactly the cap was reported as cut")
	}
}

func TestEventCount(t *testing.T) {
	p := filepath.Join(t.TempDir(), "memory.events")
	if err := os.WriteFile(p, []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd := openEvents(p)
	defer unix.Close(fd)
	if n := readEvent(fd, "oom_kill"); n != 2 {
		t.Errorf("oom_kill = %d, want 2", n)
	}
	if n := readEvent(fd, "oom"); n != 1 {
		t.Errorf("oom = %d, want 1", n)
	}
	if n := readEvent(openEvents(filepath.Join(t.TempDir(), "absent")), "max"); n != 0 {
		t.Errorf("absent file = %d, want 0", n)
	}
}

func spec(args ...string) *Spec {
	return &Spec{Args: args, Env: []string{"PATH=/usr/bin:/bin"}, TmpSize: 4 << 20, WorkspaceSize: 4 << 20,
		Memory: 128 << 20, Pids: 32, CPUs: 1, MaxOutput: 1 << 20, Timeout: 10 * time.Second}
}

// A layer that cannot be built refuses the run with a SetupError that names
// the layer; nothing of the command runs.
func TestSetupErrorIsReported(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", "echo ran")
	s.ReadOnly = []string{"/nonexistent/crucible-test"}
	var out bytes.Buffer
	s.Stdout = &out
	_, err := Run(context.Background(), s)
	var se *SetupError
	if !errors.As(err, &se) || se.Layer != "mount" {
		t.Fatalf("err = %v, want a mount SetupError", err)
	}
	if out.Len() != 0 {
		t.Fatalf("the command ran: %q", out.String())
	}
}

func TestRunCancelled(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := Run(ctx, spec("/bin/sleep", "60"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("cancel took %s", d)
	}
}

// Files appear read-only under FilesDir, and the command's fd 3 is the
// result channel.
func TestFilesAndResult(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", `cat /crucible/py/x.txt; echo '{"v":1}' >&3; ls /proc/self/fd | tr '\n' ' '; echo >/crucible/py/x.txt || echo ro`)
	s.Files = []File{{Path: "/crucible/py/x.txt", Data: []byte("hello file\n")}}
	var out, result bytes.Buffer
	s.Stdout, s.Stderr, s.Result = &out, &out, &result
	r, err := Run(context.Background(), s)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("run: %v %+v\n%s", err, r, out.String())
	}
	if result.String() != "{\"v\":1}\n" {
		t.Errorf("result = %q", result.String())
	}
	for _, want := range []string{"hello file\n", "0 1 2 3 ", "ro"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in %q", want, out.String())
		}
	}

	s = spec("/bin/true")
	s.Files = []File{{Path: "/etc/passwd"}}
	if _, err := Run(context.Background(), s); err == nil {
		t.Error("a file outside the files directory was accepted")
	}
}

// Self binds the running binary, read-only, for a command that is this
// binary; it runs with every layer on, as the sandbox user.
func TestSelf(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec(selfTest)
	s.Self = selfTest
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	r, err := Run(context.Background(), s)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("run: %v %+v\n%s", err, r, out.String())
	}
	// A command of this binary is a Go runtime like init: it gets the
	// jail's own timer slack (child.GoSlack).
	if want := fmt.Sprintf("self in the jail, uid %d, writable: false, timer slack %d\n", SandboxUID, goSlack); out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	s.Self = "/usr/bin/x"
	if _, err := Run(context.Background(), s); err == nil {
		t.Error("a self path outside the files directory was accepted")
	}
}

// Any other command keeps the caller's timer slack: the jail's own, which
// lets a Go runtime's timers fire up to a millisecond late, is not the
// command's business.
func TestTimerSlackIsTheCallers(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	if ownSlack() == goSlack {
		t.Fatal("the test's own timer slack is the jail's: nothing to tell them apart")
	}
	var out bytes.Buffer
	s := spec("/bin/cat", "/proc/self/timerslack_ns")
	s.Stdout, s.Stderr = &out, &out
	r, err := Run(context.Background(), s)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("run: %v %+v\n%s", err, r, out.String())
	}
	if want := fmt.Sprintf("%d\n", ownSlack()); out.String() != want {
		t.Errorf("the command's timer slack: %q, want the caller's %q", out.String(), want)
	}
}

// The timeout counts from Begin: a warm jail may
// wait longer than its timeout for work, then gets the whole timeout. No
// clock: the timeout is a millisecond, so that, were it counted from the
// start, the command would die long before it had printed and read; the
// test calls Begin only once the command has done both.
func TestBegin(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", `echo ready; read line; echo "got $line"; exec sleep 1000`)
	s.Timeout = time.Millisecond
	in, feed := pipe(t)
	out := &syncBuffer{}
	s.Stdin, s.Stdout = in, out
	j, done := startAsync(t, s)
	out.waitFor(t, "ready\n")
	if _, err := feed.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got x\n")
	j.Begin()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.ExitCode != ExitTimeout || !slices.Contains(r.res.LimitsHit, "timeout") || out.String() != "ready\ngot x\n" {
		t.Errorf("exit %d, limits %q, output %q; want a timeout after the begin, with only %q", r.res.ExitCode, r.res.LimitsHit, out.String(), "ready\ngot x\n")
	}
}

// deadline bounds what a test waits for: generous, as a slow VM under the
// race detector needs; a test that passes never waits for it.
const deadline = 60 * time.Second

// syncBuffer is an output that a test can wait on.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wrote == nil {
		w.wrote = make(chan struct{}, 1)
	}
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until the output holds want.
func (w *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	w.mu.Lock()
	if w.wrote == nil {
		w.wrote = make(chan struct{}, 1)
	}
	wrote := w.wrote
	w.mu.Unlock()
	timeout := time.After(deadline)
	for !strings.Contains(w.String(), want) {
		select {
		case <-wrote:
		case <-timeout:
			t.Fatalf("no %q in the output after %s: %q", want, deadline, w.String())
		}
	}
}

// pipe returns an os.Pipe, closed when the test ends.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

type runResult struct {
	res *Result
	err error
}

// runAsync runs s on a goroutine, bounded by deadline.
func runAsync(t *testing.T, s *Spec) <-chan runResult {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	done := make(chan runResult, 1)
	go func() {
		res, err := Run(ctx, s)
		done <- runResult{res, err}
	}()
	return done
}

// startAsync starts s, bounded by deadline, and waits for its end on a
// goroutine: Close's outcome. The caller begins it.
func startAsync(t *testing.T, s *Spec) (*Jail, <-chan runResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	j, err := Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan runResult, 1)
	go func() {
		res, err := j.Close()
		done <- runResult{res, err}
	}()
	return j, done
}

// A tools channel of two pipes is the command's fds 4 (the answers, read)
// and 5 (the requests, written), with or without a result channel at fd
// 3, and the command opens each again by /dev/fd/N (as Deno does), which
// it may since the jail gives them to the sandbox user.
func TestToolsPipes(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	for _, withResult := range []bool{false, true} {
		answersR, answersW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		requestsR, requestsW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		s := spec("/bin/sh", "-c", `echo ping >/dev/fd/5; read -r a </dev/fd/4; echo "$a"; ls /proc/self/fd | tr '\n' ' '`)
		var out, result bytes.Buffer
		s.Stdout, s.Stderr, s.Tools, s.ToolsOut = &out, &out, answersR, requestsW
		if withResult {
			s.Result = &result
		}
		go func() {
			b := make([]byte, 5)
			if _, err := io.ReadFull(requestsR, b); err == nil && string(b) == "ping\n" {
				_, _ = answersW.Write([]byte("pong\n"))
			}
		}()
		r, err := Run(context.Background(), s)
		for _, f := range []*os.File{answersR, answersW, requestsR, requestsW} {
			f.Close()
		}
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("run: %v %+v\n%s", err, r, out.String())
		}
		want := "pong\n0 1 2 3 4 5 " // without a result channel, 3 is ls's own directory
		if withResult {
			want = "pong\n0 1 2 3 4 5 6 "
		}
		if out.String() != want {
			t.Errorf("result channel %v: output %q, want %q", withResult, out.String(), want)
		}
	}
}

// The tools socket is the command's fd 4, with or without a result channel
// at fd 3, and no other descriptor comes with it.
func TestToolsSocket(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	for _, withResult := range []bool{false, true} {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
		// The command asks on fd 4 and prints the answer with its fds.
		s := spec("/bin/sh", "-c", `echo ping >&4; read -r a <&4; echo "$a"; ls /proc/self/fd | tr '\n' ' '`)
		var out, result bytes.Buffer
		s.Stdout, s.Stderr, s.Tools = &out, &out, theirs
		if withResult {
			s.Result = &result
		}
		go func() {
			b := make([]byte, 5)
			if _, err := io.ReadFull(ours, b); err == nil && string(b) == "ping\n" {
				_, _ = ours.Write([]byte("pong\n"))
			}
		}()
		r, err := Run(context.Background(), s)
		theirs.Close()
		ours.Close()
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("run: %v %+v\n%s", err, r, out.String())
		}
		want := "pong\n0 1 2 3 4 " // 3 is ls's own directory
		if withResult {
			want = "pong\n0 1 2 3 4 5 "
		}
		if out.String() != want {
			t.Errorf("result channel %v: output %q, want %q", withResult, out.String(), want)
		}
	}
}
