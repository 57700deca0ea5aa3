package seccomp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests that install a filter do it in a child: a filter cannot be
// removed, and it would also filter the test binary's own thread.
const childEnv = "SECCOMP_TEST_CHILD"

var children = map[string]func() error{
	"install": childInstall,
	"kill":    childKill,
	"notify":  childNotify,
}

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		if err := children[name](); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child starts the test binary as the named child, with extra files at fd 3
// onwards.
func child(t *testing.T, name string, files ...*os.File) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	cmd.ExtraFiles = files
	return cmd
}

// childInstall denies getppid and close of one 64-bit fd value, and checks
// that they fail with the filter's errno while the rest still reach the
// kernel.
func childInstall() error {
	runtime.LockOSThread() // the filter applies to this thread only
	prog, err := (&Filter{Default: Allow, Rules: []Rule{
		{Syscall: unix.SYS_GETPPID, Action: Errno(unix.EXDEV)},
		{Syscall: unix.SYS_CLOSE, Args: []Arg{{Index: 0, Cmp: Eq, Value: 1<<32 | 99}}, Action: Errno(unix.EBADE)},
	}}).Compile()
	if err != nil {
		return err
	}
	if fd, err := Install(prog, 0); err != nil || fd != -1 {
		return fmt.Errorf("Install: %d, %w", fd, err)
	}
	for _, c := range []struct {
		nr, arg uintptr
		want    syscall.Errno
	}{
		{unix.SYS_GETPPID, 0, unix.EXDEV},
		{unix.SYS_CLOSE, 1<<32 | 99, unix.EBADE},
		{unix.SYS_CLOSE, 99, unix.EBADF}, // the high half differs: the kernel runs it
		{unix.SYS_GETPID, 0, 0},
	} {
		if _, _, errno := unix.Syscall(c.nr, c.arg, 0, 0); errno != c.want {
			return fmt.Errorf("syscall %d(%#x): got errno %d, want %d", c.nr, c.arg, int(errno), int(c.want))
		}
	}
	return nil
}

func TestInstall(t *testing.T) {
	if out, err := child(t, "install").CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// childKill makes a syscall through the x32 numbering, which the filter
// answers by killing the process with SIGSYS, even though the default allows
// everything.
func childKill() error {
	runtime.LockOSThread()
	prog, err := (&Filter{Default: Allow}).Compile()
	if err != nil {
		return err
	}
	if _, err := Install(prog, 0); err != nil {
		return err
	}
	_, _, errno := unix.Syscall(x32Bit|unix.SYS_GETPID, 0, 0, 0)
	return fmt.Errorf("x32 syscall returned, errno %d", int(errno))
}

func TestInstallKillsX32(t *testing.T) {
	out, err := child(t, "kill").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != unix.SIGSYS {
		t.Fatalf("child: got %v, want death by SIGSYS\n%s", err, out)
	}
}

// childNotify installs a filter that notifies getppid, sends the listener to
// the parent over fd 3, and expects the parent's EPERM.
func childNotify() error {
	runtime.LockOSThread()
	prog, err := (&Filter{Default: Allow, Rules: []Rule{
		{Syscall: unix.SYS_GETPPID, Action: Notify},
	}}).Compile()
	if err != nil {
		return err
	}
	listener, err := Install(prog, NewListener)
	if err != nil {
		return err
	}
	if err := unix.Sendmsg(3, []byte{0}, unix.UnixRights(listener), nil, 0); err != nil {
		return fmt.Errorf("sending listener: %w", err)
	}
	unix.Close(listener)
	if _, _, errno := unix.Syscall(unix.SYS_GETPPID, 0, 0, 0); errno != unix.EPERM {
		return fmt.Errorf("getppid: got errno %d, want EPERM", int(errno))
	}
	return nil
}

func TestNotify(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	theirs := os.NewFile(uintptr(fds[1]), "child socket")
	cmd := child(t, "notify", theirs)
	out := new(bytes.Buffer) // one writer: os/exec serialises writes for a shared Stdout and Stderr
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close() // so that recvmsg sees EOF if the child dies first

	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(fds[0], make([]byte, 1), oob, 0)
	if err != nil || oobn == 0 {
		_ = cmd.Wait()
		t.Fatalf("receiving listener: %v\n%s", err, out)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	rights, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	listener := rights[0]
	defer unix.Close(listener)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	notes := make(chan Notification, 10)
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, listener, func(n Notification) syscall.Errno {
			notes <- n
			return unix.EPERM
		})
	}()

	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	// The child is reaped, so the filter has no users: Serve must return.
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	close(notes)
	var got []Notification
	for n := range notes {
		got = append(got, n)
	}
	if len(got) != 1 || got[0].Nr != unix.SYS_GETPPID || got[0].Arch != nativeArch || int(got[0].PID) != cmd.Process.Pid {
		t.Fatalf("got notifications %+v, want one getppid from pid %d", got, cmd.Process.Pid)
	}
}

func TestServeCancel(t *testing.T) {
	// Serve only polls the listener until something arrives, so a pipe that
	// never becomes readable stands in for an idle one.
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, p[0], nil) }()
	time.Sleep(10 * time.Millisecond) // let Serve block in poll; not needed for correctness
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestServeBadListener(t *testing.T) {
	const notOpen = 1 << 30 // beyond any RLIMIT_NOFILE
	if err := Serve(context.Background(), notOpen, nil); !errors.Is(err, unix.EBADF) {
		t.Fatalf("got %v, want EBADF", err)
	}
}
