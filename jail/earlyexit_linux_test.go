package jail

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// earlyExit is a Spec.ReportedExit that finds the exit code 3 in a report
// of "ok", and none in any other: the command's own exit code is another,
// so a Result with 3 came the early way.
func earlyExit(report []byte) (int, bool) {
	if string(report) == "ok" {
		return 3, true
	}
	return 0, false
}

// With ReportedExit, Wait returns on the command's own report once every
// process of the command has begun to exit, before the kernel has torn it
// down (here 200 MB of memory, which takes milliseconds, while the early
// end takes microseconds), and has all of its output: more than a pipe
// holds, written just before the exit.
func TestEarlyExit(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testenv.Missing(t, "needs "+python)
	}
	s := spec(python, "-c", `import os, sys
b = b"y" * (200 << 20)  # touched: its teardown takes milliseconds
sys.stdout.write("x" * 300000); sys.stdout.flush()
sys.stderr.write("err\n"); sys.stderr.flush()
os.write(3, b"ok")
os._exit(7)`)
	s.Memory = 512 << 20
	// The teardown gives the report milliseconds' start, but a loaded
	// machine may still let init's word come first: either is right, and
	// one run in ten at least must end on the report.
	reported := 0
	for i := 0; i < 10 && reported == 0; i++ {
		r, out, errb := runEarly(t, s)
		if r.ExitCode == 3 && r.Signal == "" {
			reported++
		} else if r.ExitCode != 7 {
			t.Fatalf("%+v; want the reported exit code 3, or init's 7", r)
		}
		if out != strings.Repeat("x", 300000) || errb != "err\n" {
			t.Fatalf("%d bytes of output and %q; want 300000 and err", len(out), errb)
		}
	}
	if reported == 0 {
		t.Error("no run ended on the command's report")
	}
	if left := jailCgroups(); len(left) != 0 {
		t.Errorf("cgroups left after Run: %q", left)
	}
}

// Whichever comes first, the command's report or init's, Wait has all of
// the output: here a pipeline of three processes writes just before the
// exit, and a shell's teardown is quick enough to race the report.
func TestEarlyExitOutput(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", `printf ok >&3; head -c 300000 /dev/zero | tr '\0' x; echo err >&2; exit 7`)
	for range 20 {
		r, out, errb := runEarly(t, s)
		if r.ExitCode != 3 && r.ExitCode != 7 {
			t.Fatalf("%+v; want the exit code reported (3) or init's (7)", r)
		}
		if out != strings.Repeat("x", 300000) || errb != "err\n" {
			t.Fatalf("%d bytes of output and %q; want 300000 and err", len(out), errb)
		}
	}
}

// runEarly runs s with the earlyExit above, and checks that Wait had what
// Close returns, output included. A Stdout of s that is a *beginOnOutput
// gets the output first, and begins the jail.
func runEarly(t *testing.T, s *Spec) (*Result, string, string) {
	t.Helper()
	var out, errb, report bytes.Buffer
	stdout := io.Writer(&out)
	b, begins := s.Stdout.(*beginOnOutput)
	if begins {
		b.w, stdout = &out, b
	}
	s.Stdout, s.Stderr, s.Result = stdout, &errb, &report
	s.ReportedExit = earlyExit
	j := startBegun(t, s, b)
	early, err := j.Wait()
	if err != nil {
		t.Errorf("Wait: %v", err)
	}
	outThen, errThen := out.String(), errb.String()
	r, err := j.Close()
	if err != nil {
		t.Fatal(err)
	}
	if r != early || outThen != out.String() || errThen != errb.String() {
		t.Fatalf("Close: %+v, Wait: %+v; the output grew after Wait", r, early)
	}
	return r, outThen, errThen
}

// startBegun starts s, and begins it at once, or, with b, at the command's
// first output.
func startBegun(t *testing.T, s *Spec, b *beginOnOutput) *Jail {
	t.Helper()
	j, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		j.Begin()
		return j
	}
	closed := make(chan struct{})
	t.Cleanup(func() { close(closed) })
	go func() {
		select {
		case <-b.begun:
			j.Begin()
		case <-closed:
		}
	}()
	return j
}

// beginOnOutput passes output on to w, and closes begun at its first
// write: as the Begin of runEarly's jail, it starts the timeout once the
// command has shown that it runs, however long a loaded machine took to
// start it.
type beginOnOutput struct {
	w     io.Writer
	begun chan struct{}
	once  sync.Once
}

func newBeginOnOutput() *beginOnOutput { return &beginOnOutput{begun: make(chan struct{})} }

func (b *beginOnOutput) Write(p []byte) (int, error) {
	b.once.Do(func() { close(b.begun) })
	return b.w.Write(p)
}

// Without an exit code in the report, Wait waits for init: its exit code,
// and what init itself writes after the command's processes are gone (a
// command that is not there never starts, and init says so on stderr).
func TestEarlyExitWithoutReport(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"/bin/sh", "-c", "printf no >&3; echo out; exit 5"}, 5, ""},
		{[]string{"/nonexistent/crucible-test"}, 127, "not found"},
	} {
		s := spec(c.args...)
		var out, errb, report bytes.Buffer
		s.Stdout, s.Stderr, s.Result = &out, &errb, &report
		s.ReportedExit = earlyExit
		j := startBegun(t, s, nil)
		_, _ = j.Wait()
		r, err := j.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r.ExitCode != c.code || !strings.Contains(errb.String(), c.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, r.ExitCode, errb.String(), c.code, c.stderr)
		}
		if c.code == 5 && out.String() != "out\n" {
			t.Errorf("%q: output %q", c.args, out.String())
		}
	}
}
