package jail

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/owncgroup"
	"golang.org/x/sys/unix"
)

var measurePids = flag.Bool("pidsfloor", false, "TestPidsFloor: also measure how few pids the jail runs under, to set MinPids")

// A pids limit counts the jail's own processes (init, the exec stage, their
// Go threads): below MinPids the jail's own runtime could not start a
// thread, and would die with a stack dump on the command's stderr. Such a
// limit is refused, by the pids layer; at MinPids every run succeeds.
func TestPidsFloor(t *testing.T) {
	testenv.NeedRoot(t, "the pids cgroup")
	for _, p := range []int{1, 2, 8, MinPids - 1} {
		var out bytes.Buffer
		s := spec("/bin/sh", "-c", "echo ran")
		s.Pids, s.Stdout, s.Stderr = p, &out, &out
		_, err := Run(context.Background(), s)
		var se *SetupError
		if !errors.As(err, &se) || se.Layer != LayerPids || !strings.Contains(se.Fix, strconv.Itoa(MinPids)) {
			t.Errorf("pids %d: err %v, output %q; want a pids SetupError naming %d", p, err, out.String(), MinPids)
		}
	}
	for i := range 10 {
		var out bytes.Buffer
		s := spec("/bin/sh", "-c", "echo ran")
		s.Pids, s.Stdout, s.Stderr = MinPids, &out, &out
		r, err := Run(context.Background(), s)
		if err != nil || r.ExitCode != 0 || out.String() != "ran\n" {
			t.Fatalf("run %d at pids %d: %v %+v %q", i, MinPids, err, r, out.String())
		}
	}
	if *measurePids {
		// How the floor was found: the lowest limit at which every one of
		// 50 runs succeeds; MinPids adds a margin above it.
		for p := 6; p < MinPids; p++ {
			ok := 0
			for range 50 {
				s := spec("/bin/true")
				s.Pids = p
				if j, err := create(context.Background(), s); err == nil { // without check's floor
					j.Start()
					j.Begin()
					if r, err := j.Close(); err == nil && r.ExitCode == 0 {
						ok++
					}
				}
			}
			t.Logf("pids %d: %d of 50 runs succeeded", p, ok)
		}
	}
}

// jailCgroup returns this process's jail cgroup directories (one per
// controller on v1, one on v2), polled for until one exists.
func jailCgroup(t *testing.T) (v2 bool, dirs map[string]string) {
	t.Helper()
	parent, err := cgroupParents()
	if err != nil {
		t.Fatal(err)
	}
	dirs = map[string]string{}
	for i, p := range parent.dirs {
		m, _ := filepath.Glob(filepath.Join(p, fmt.Sprintf("crucible-%d-*", os.Getpid())))
		if len(m) != 1 {
			t.Fatalf("want one jail cgroup under the parent, found %q", m)
		}
		if parent.v2 {
			dirs[""] = m[0]
		} else {
			dirs[owncgroup.Controllers[i]] = m[0]
		}
	}
	return parent.v2, dirs
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// A zero limit means no limit of that kind, as Spec promises: nothing is
// written for it (a 0 written would be a memory limit of nothing, which on
// cgroup v1 made the OOM killer pick the supervisor, no process at all, and
// a 1% CPU quota). A non-zero one is written as given.
func TestZeroLimitsMeanNoLimit(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	for _, zero := range []bool{true, false} {
		t.Run(fmt.Sprintf("zero=%v", zero), func(t *testing.T) {
			s := spec("/bin/sh", "-c", "echo ready; read x; exit 0")
			if zero {
				s.Memory, s.Pids, s.CPUs = 0, 0, 0
			} else {
				s.Memory, s.Pids, s.CPUs = 96<<20, 40, 0.5
			}
			in, feed := pipe(t)
			out := &syncBuffer{}
			s.Stdin, s.Stdout, s.Stderr = in, out, out
			done := runAsync(t, s)
			out.waitFor(t, "ready\n")

			v2, dirs := jailCgroup(t)
			var mem, pids, cpu string
			if v2 {
				mem = readTrim(t, filepath.Join(dirs[""], "memory.max"))
				pids = readTrim(t, filepath.Join(dirs[""], "pids.max"))
				cpu = strings.Fields(readTrim(t, filepath.Join(dirs[""], "cpu.max")))[0]
			} else {
				mem = readTrim(t, filepath.Join(dirs["memory"], "memory.limit_in_bytes"))
				pids = readTrim(t, filepath.Join(dirs["pids"], "pids.max"))
				cpu = readTrim(t, filepath.Join(dirs["cpu"], "cpu.cfs_quota_us"))
			}
			feed.Close()
			r := <-done
			if r.err != nil || r.res.ExitCode != 0 {
				t.Fatalf("run: %v %+v %q", r.err, r.res, out.String())
			}

			if zero {
				// v1 shows "no memory limit" as a huge number of bytes.
				if n, err := strconv.ParseInt(mem, 10, 64); mem != "max" && (err != nil || n < 1<<62) {
					t.Errorf("memory limit %q, want none", mem)
				}
				if pids != "max" {
					t.Errorf("pids limit %q, want max", pids)
				}
				if cpu != "max" && cpu != "-1" {
					t.Errorf("CPU quota %q, want none", cpu)
				}
			} else if mem != strconv.Itoa(96<<20) || pids != "40" || cpu != "50000" {
				t.Errorf("memory %q, pids %q, CPU quota %q; want %d, 40, 50000", mem, pids, cpu, 96<<20)
			}
		})
	}
	s := spec("/bin/true")
	s.Memory = -1
	if _, err := Run(context.Background(), s); err == nil {
		t.Error("a negative memory limit was accepted")
	}
}

// Attack on the supervisor: a memory limit far too small for anything. The
// jail's cgroup may refuse the clone (v2: ENOMEM, the memory layer), or
// kill the jail's own processes at once (v1: init is placed after the
// clone); never the supervisor, which on v1 once sat in the jail's cgroup
// during the clone and was the OOM killer's only choice. Nothing of the
// command runs.
func TestTinyMemoryLimit(t *testing.T) {
	testenv.NeedRoot(t, "the memory cgroup")
	var out bytes.Buffer
	s := spec("/bin/sh", "-c", "echo ran")
	s.Memory, s.Stdout, s.Stderr = 4096, &out, &out
	r, err := Run(context.Background(), s)
	var se *SetupError
	switch {
	case errors.As(err, &se):
		if se.Layer != LayerMemory {
			t.Errorf("refused by layer %q (%v), want memory", se.Layer, err)
		}
	case err != nil:
		t.Fatal(err)
	case r.ExitCode != ExitMemory || !slices.Contains(r.LimitsHit, "memory"):
		t.Errorf("exit %d, limits %q; want 137 and the memory limit hit", r.ExitCode, r.LimitsHit)
	}
	if strings.Contains(out.String(), "ran") {
		t.Errorf("the command ran in a jail of 4 KiB: %q", out.String())
	}
	t.Logf("result %+v, err %v", r, err) // the supervisor is still here to say so
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			n, _ := strconv.Atoi(e.Name())
			kids = append(kids, n)
		}
	}
	return kids
}

// A command that has ended is reported as it ended, even when ctx is
// cancelled before Run returns (here Run is held up delivering the
// output): os/exec's rule, ctx's error only when its kill cut the command
// short.
func TestRunReportsExitBeforeCancel(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", "echo out; exit 7")
	release := make(chan struct{})
	writing := make(chan struct{})
	s.Stdout = writerFunc(func(p []byte) (int, error) {
		select {
		case <-writing:
		default:
			close(writing)
		}
		<-release
		return len(p), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan runResult, 1)
	go func() {
		res, err := Run(ctx, s)
		done <- runResult{res, err}
	}()
	select {
	case <-writing:
	case <-time.After(deadline):
		t.Fatal("the command wrote nothing")
	}
	// Once init is reaped, the command has ended and said so.
	end := time.Now().Add(deadline)
	for len(childrenOf(os.Getpid())) > 0 {
		if time.Now().After(end) {
			t.Fatalf("init still running after %s", deadline)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	close(release)
	r := <-done
	if r.err != nil || r.res.ExitCode != 7 {
		t.Errorf("got %+v, %v; want the command's own exit 7", r.res, r.err)
	}

	// Cancelled while the command runs: ctx's error.
	ctx, cancel = context.WithCancel(context.Background())
	out := &syncBuffer{}
	s = spec("/bin/sh", "-c", "echo ready; exec sleep 1000")
	s.Stdout = out
	go func() {
		out.waitFor(t, "ready\n")
		cancel()
	}()
	if _, err := Run(ctx, s); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled mid-run: err %v, want context.Canceled", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// stdinCopiers counts the goroutines of this package (not of its tests)
// that are reading a file: copying a Spec.Stdin.
func stdinCopiers() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "os.(*File).Read(") && strings.Contains(g, "created by github.com/cruciblehq/crucible/jail.") {
			n++
		}
	}
	return n
}

// A Stdin that never ends (a pipe whose writer stays open, as a server's
// connection may) does not keep a goroutine per execution once the jail has
// ended, and is left as it was: nothing read from it, no deadline on it.
func TestStdinCopyEndsWithTheJail(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	in, feed := pipe(t)
	for range 3 {
		s := spec("/bin/true")
		s.Stdin = in
		if r, err := Run(context.Background(), s); err != nil || r.ExitCode != 0 {
			t.Fatalf("run: %v %+v", err, r)
		}
	}
	if n := stdinCopiers(); n != 0 {
		t.Errorf("%d stdin copiers left after three jails ended", n)
	}
	if _, err := feed.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 16)
		n, err := in.Read(b)
		got <- fmt.Sprintf("%q, %v", b[:n], err)
	}()
	select {
	case s := <-got:
		if want := `"after", <nil>`; s != want {
			t.Errorf("reading the caller's stdin after the jails: %s; want %s", s, want)
		}
	case <-time.After(deadline):
		t.Error("what was written to the caller's stdin after the jails never came: a copier took it")
	}
}

// The errno of a failed clone names the layer to fix, not always user
// namespaces: a process limit is the pids layer, no memory the memory layer.
func TestCloneErrorLayers(t *testing.T) {
	for _, tc := range []struct {
		errno syscall.Errno
		layer string
	}{
		{unix.EPERM, LayerUserns},
		{unix.ENOSPC, LayerUserns},
		{unix.EUSERS, LayerUserns},
		{unix.EAGAIN, LayerPids},
		{unix.ENOMEM, LayerMemory},
		{unix.EINVAL, "namespaces"},
	} {
		err := startError(fmt.Errorf("fork/exec /proc/self/exe: %w", tc.errno))
		var se *SetupError
		if !errors.As(err, &se) || se.Layer != tc.layer || se.Fix == "" {
			t.Errorf("%v: got %#v, want layer %q with a fix", tc.errno, err, tc.layer)
		}
		if strings.Contains(se.Error(), "/proc/self/exe") {
			t.Errorf("%v: a path in %q", tc.errno, se.Error())
		}
	}
}

// A path that is not on the host is a mount SetupError whose message, which
// the model may read, names neither the host path nor a kernel upgrade; the
// operator's Detail has the path.
func TestMountErrorKeepsHostPathsOut(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	const secret = "/nonexistent/crucible-host-secret"
	for _, tc := range []struct {
		name string
		set  func(*Spec)
		what string
	}{
		{"ro", func(s *Spec) { s.ReadOnly = []string{secret} }, "a path to bind read-only was not found"},
		{"workspace", func(s *Spec) { s.Workspace = secret }, "the workspace was not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec("/bin/sh", "-c", "echo ran")
			tc.set(s)
			var out bytes.Buffer
			s.Stdout, s.Stderr = &out, &out
			_, err := Run(context.Background(), s)
			var se *SetupError
			if !errors.As(err, &se) || se.Layer != "mount" {
				t.Fatalf("err = %v, want a mount SetupError", err)
			}
			if msg := se.Error(); strings.Contains(msg, "nonexistent") || strings.Contains(msg, "Linux 5.12") || !strings.Contains(msg, tc.what) {
				t.Errorf("message %q: want %q, no host path, no kernel advice", msg, tc.what)
			}
			if !strings.Contains(se.Detail, secret) {
				t.Errorf("detail %q lacks the host path, which the operator needs", se.Detail)
			}
			if out.Len() != 0 {
				t.Errorf("the command ran: %q", out.String())
			}
		})
	}
}

// A program that is not in the jail (a runtime configured at a path the
// host lacks) is reported as such, with the shell's 127, not as a kernel
// problem.
func TestMissingProgram(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	for _, tc := range []struct{ arg0, want string }{
		{"/usr/bin/crucible-no-such-program", "crucible: /usr/bin/crucible-no-such-program: not found in the jail"},
		{"crucible-no-such-program", "crucible: crucible-no-such-program: command not found in the jail's PATH"},
	} {
		var errb bytes.Buffer
		s := spec(tc.arg0)
		s.Stderr = &errb
		r, err := Run(context.Background(), s)
		if err != nil || r.ExitCode != 127 || !strings.HasPrefix(errb.String(), tc.want) {
			t.Errorf("%s: %v, exit %v, stderr %q; want 127 and %q", tc.arg0, err, r, errb.String(), tc.want)
		}
	}
}
