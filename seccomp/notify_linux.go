package seccomp

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Serve answers the syscalls that reach listener through [Notify], one at a
// time: each fails with the errno handle returns, or EPERM if it returns 0, so
// a handler can never make a syscall succeed without running it.
//
// Serve returns nil once every process using the filter has begun to exit
// (the kernel releases a process's filter early in its exit, before it
// tears its memory down; none of them can run or make a syscall again), and
// ctx.Err() when ctx is done. It does not close listener; the
// caller closes it after Serve returns, which fails any syscall still waiting
// with ENOSYS.
func Serve(ctx context.Context, listener int, handle func(Notification) syscall.Errno) error {
	// An eventfd that ctx's cancellation makes readable, so poll can block
	// without a timeout and still return as soon as ctx is done.
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("creating eventfd: %w", err)
	}
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(woken)
		_, _ = unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0}) // an eventfd write of 1 cannot fail
	})
	defer func() {
		if !stop() {
			<-woken // do not close wake under the writer's feet
		}
		unix.Close(wake)
	}()

	fds := []unix.PollFd{
		{Fd: int32(listener), Events: unix.POLLIN},
		{Fd: int32(wake), Events: unix.POLLIN},
	}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("polling seccomp listener: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ev := fds[0].Revents
		switch {
		case ev&unix.POLLNVAL != 0:
			return fmt.Errorf("polling seccomp listener: %w", unix.EBADF)
		case ev&unix.POLLIN != 0:
			if err := serveOne(listener, handle); err != nil {
				return err
			}
		case ev&unix.POLLHUP != 0:
			// The kernel reports POLLHUP when the filter has no users left:
			// no syscall can reach the listener any more.
			return nil
		}
	}
}

// serveOne receives one notification, which poll said is waiting, and
// answers it.
func serveOne(listener int, handle func(Notification) syscall.Errno) error {
	var n Notification
	for {
		n = Notification{} // the kernel rejects a buffer that is not zeroed
		err := recv(listener, &n)
		if err == nil {
			break
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ENOENT) {
			return nil // the caller died between poll and recv
		}
		return fmt.Errorf("receiving seccomp notification: %w", err)
	}

	errno := handle(n)
	if errno == 0 {
		errno = unix.EPERM
	}
	resp := response{ID: n.ID, Error: -int32(errno)}
	for {
		err := send(listener, &resp)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil // ENOENT: the caller died while we decided
		}
		return fmt.Errorf("answering seccomp notification: %w", err)
	}
}
