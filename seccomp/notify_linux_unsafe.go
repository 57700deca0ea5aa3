//go:build linux

package seccomp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// response is the kernel's struct seccomp_notif_resp.
type response struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// The ioctl numbers encode these sizes; a mismatch fails to compile.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(Notification{})-80]
	_ = [1]struct{}{}[unsafe.Sizeof(response{})-24]
)

func recv(listener int, n *Notification) error {
	return ioctl(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n))
}

func send(listener int, r *response) error {
	return ioctl(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(r))
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}
