package jail

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// closer records that it was closed.
type closer struct{ closed bool }

func (c *closer) Close() error { c.closed = true; return nil }

// created creates a jail whose command leaves a mark in its workspace
// (dir) and prints "ran".
func created(t *testing.T) (j *Jail, dir string, out *bytes.Buffer) {
	t.Helper()
	testenv.NeedRoot(t, "the cgroup layer")
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	s := spec("/bin/sh", "-c", "echo ran >/workspace/mark; echo ran")
	s.Workspace = dir
	out = &bytes.Buffer{}
	s.Stdout, s.Stderr = out, out
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	j, err := Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return j, dir, out
}

// ran says whether the command of created's jail left its mark.
func ran(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "mark"))
	return err == nil
}

// A created jail has its own network namespace and runs nothing of its
// command until Start: its network is built before the command could use
// it, and closed once the jail has exited.
func TestCreateNetworkStart(t *testing.T) {
	j, dir, out := created(t)
	var own, theirs unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &own); err != nil {
		t.Fatal(err)
	}
	c := &closer{}
	err := j.Network(func(netns *os.File) (io.Closer, error) {
		if err := unix.Fstat(int(netns.Fd()), &theirs); err != nil {
			return nil, err
		}
		if ran(dir) {
			t.Error("the command ran before its network was built")
		}
		return c, nil
	})
	if !jailIDs().privileged {
		// Rootless, no network can be built: the jail refuses it.
		var se *SetupError
		if !errors.As(err, &se) || se.Layer != "network" {
			t.Errorf("rootless Network: %v, want a network SetupError", err)
		}
		if _, err := j.Close(); err == nil || ran(dir) {
			t.Errorf("closed unstarted: %v, ran %v", err, ran(dir))
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if theirs.Ino == own.Ino && theirs.Dev == own.Dev {
		t.Error("the jail's network namespace is ours")
	}
	if err := j.Network(func(*os.File) (io.Closer, error) { return &closer{}, nil }); err == nil {
		t.Error("a second Network was taken")
	}
	if ran(dir) || out.Len() != 0 {
		t.Fatal("the command ran before Start")
	}
	j.Start()
	j.Start() // does nothing
	j.Begin()
	res, err := j.Close()
	if err != nil || res.ExitCode != 0 || out.String() != "ran\n" || !ran(dir) {
		t.Fatalf("started: %v %+v %q", err, res, out.String())
	}
	if !c.closed {
		t.Error("the network was not closed with the jail")
	}
	if err := j.Network(func(*os.File) (io.Closer, error) { return &closer{}, nil }); err == nil {
		t.Error("a Network after Start was taken")
	}
}

// A created jail closed unstarted runs nothing: its init is killed and
// reaped, its network closed, and Close says it never started.
func TestCreateClosedUnstarted(t *testing.T) {
	for _, withNetwork := range []bool{false, true} {
		j, dir, out := created(t)
		c := &closer{}
		if withNetwork {
			if err := j.Network(func(*os.File) (io.Closer, error) { return c, nil }); err != nil {
				if !jailIDs().privileged {
					t.Skip("rootless: no network (TestCreateNetworkStart checks its refusal)")
				}
				t.Fatal(err)
			}
		}
		pid := j.x.cmd.Process.Pid
		// Wait on an unstarted jail does not wait for an outcome that
		// cannot come: it closes it.
		res, err := j.Wait()
		if res != nil || err == nil {
			t.Errorf("closed unstarted: %+v, %v; want an error", res, err)
		}
		if ran(dir) || out.Len() != 0 {
			t.Errorf("the command of an unstarted jail ran: %q", out.String())
		}
		if err := unix.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("init of an unstarted jail is still there: %v", err)
		}
		if withNetwork && !c.closed {
			t.Error("the network of an unstarted jail was not closed")
		}
		if _, err2 := j.Close(); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("a second Close: %v, want %v", err2, err)
		}
	}
}

// A network that cannot be built refuses the execution: a SetupError of
// layer "network", and nothing of the command runs.
func TestCreateNetworkFails(t *testing.T) {
	j, dir, out := created(t)
	err := j.Network(func(*os.File) (io.Closer, error) { return nil, errors.New("no tun device") })
	var se *SetupError
	if !errors.As(err, &se) || se.Layer != "network" {
		t.Errorf("a failed network: %v, want a network SetupError", err)
	}
	if _, err := j.Close(); err == nil {
		t.Error("closed after a failed network: no error")
	}
	if ran(dir) || out.Len() != 0 {
		t.Errorf("the command ran without its network: %q", out.String())
	}
}

// A late workspace is not bound to an unstarted jail, whose init would
// never answer: Bind refuses at once.
func TestCreateBindUnstarted(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	if !jailIDs().privileged {
		t.Skip("rootless: no late workspace")
	}
	s := spec("/bin/true")
	s.Late = true
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	j, err := Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- j.Bind(t.TempDir()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("an unstarted jail took a workspace")
		}
	case <-time.After(30 * time.Second):
		t.Error("Bind on an unstarted jail blocked")
	}
	if _, err := j.Close(); err == nil {
		t.Error("closed unstarted: no error")
	}
}
