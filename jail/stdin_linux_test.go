package jail

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"golang.org/x/sys/unix"
)

// With StdinPipe, Jail.Stdin hands over the pipe once the jail runs, and
// what its taker writes reaches the command: more than a pipe holds at
// once too, the write waiting for the command to read.
func TestStdinTaker(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", "wc -c")
	var out bytes.Buffer
	s.StdinPipe, s.Stdout = true, &out
	j, done := startAsync(t, s)
	j.Begin()
	w := stdinOf(t, j)
	job := bytes.Repeat([]byte("x"), 1<<20)
	if _, err := w.Write(job); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := <-done
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("%v %+v", r.err, r.res)
	}
	if got := bytes.TrimSpace(out.Bytes()); string(got) != strconv.Itoa(len(job)) {
		t.Errorf("the command read %s bytes, want %d", got, len(job))
	}
}

// A write to a command that never reads does not outlive the jail: when
// ctx ends it, the write returns EPIPE.
func TestStdinTakerWriteEndsWithTheJail(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sleep", "1000")
	s.StdinPipe = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	j.Begin()
	done := make(chan error, 1)
	go func() {
		_, err := j.Close()
		done <- err
	}()
	w := stdinOf(t, j)
	defer w.Close()
	wrote := make(chan error, 1)
	go func() {
		_, err := w.Write(make([]byte, 4<<20)) // far more than the pipe holds
		wrote <- err
	}()
	cancel()
	select {
	case err := <-wrote:
		if !errors.Is(err, unix.EPIPE) {
			t.Errorf("write: %v, want EPIPE", err)
		}
	case <-time.After(deadline):
		t.Fatal("the write outlived the jail")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Close: %v, want context.Canceled", err)
	}
}

// stdinOf takes j's stdin pipe, which a second call does not get again.
func stdinOf(t *testing.T, j *Jail) *os.File {
	t.Helper()
	w := j.Stdin()
	if w == nil {
		t.Fatal("the jail has no stdin pipe to hand over")
	}
	if j.Stdin() != nil {
		t.Error("the jail handed its stdin pipe over twice")
	}
	return w
}

// Kill ends a running jail at once, and its outcome says so: the command
// was killed, not timed out, and ctx did not end it.
func TestKill(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", "echo ready; exec sleep 1000")
	out := &syncBuffer{}
	s.Stdout = out
	j, done := startAsync(t, s)
	j.Begin()
	out.waitFor(t, "ready\n")
	j.Kill()
	r := <-done
	if r.err != nil || r.res.Signal != "SIGKILL" || r.res.ExitCode != 137 || len(r.res.LimitsHit) != 0 {
		t.Errorf("%v %+v; want the command killed, no limit hit", r.err, r.res)
	}
}
