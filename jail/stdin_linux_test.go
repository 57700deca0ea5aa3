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

// takeStdin is a Stdin that writes the command's input itself (stdinTaker).
type takeStdin chan *os.File

func (takeStdin) Read([]byte) (int, error) {
	return 0, errors.New("read: the jail should have handed over its pipe")
}

func (c takeStdin) UseStdinPipe(w *os.File) { c <- w }

// pipe waits for the jail to hand over its stdin pipe.
func (c takeStdin) pipe(t *testing.T) *os.File {
	t.Helper()
	select {
	case w := <-c:
		return w
	case <-time.After(deadline):
		t.Fatal("the jail never handed over its stdin pipe")
		return nil
	}
}

// A Stdin that takes the pipe gets it once the jail runs, and what it
// writes reaches the command: more than a pipe holds at once too, the
// write waiting for the command to read.
func TestStdinTaker(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", "wc -c")
	in := make(takeStdin, 1)
	var out bytes.Buffer
	s.Stdin, s.Stdout = in, &out
	done := runAsync(t, s)
	w := in.pipe(t)
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
	in := make(takeStdin, 1)
	s.Stdin = in
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, s)
		done <- err
	}()
	w := <-in
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
		t.Errorf("Run: %v, want context.Canceled", err)
	}
}
