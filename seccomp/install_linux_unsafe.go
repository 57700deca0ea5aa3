//go:build linux

package seccomp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// setFilter calls seccomp(SECCOMP_SET_MODE_FILTER, flags, &prog).
func setFilter(filter []unix.SockFilter, flags InstallFlags) (int, error) {
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(flags), uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
