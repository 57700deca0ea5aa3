//go:build !linux

package seccomp

import (
	"context"
	"fmt"
	"syscall"
)

// Install returns [ErrUnsupported]: seccomp exists only on Linux.
func Install(prog []Instruction, flags InstallFlags) (listener int, err error) {
	return -1, fmt.Errorf("installing seccomp filter: %w", ErrUnsupported)
}

// Serve returns [ErrUnsupported]: seccomp exists only on Linux.
func Serve(ctx context.Context, listener int, handle func(Notification) syscall.Errno) error {
	return fmt.Errorf("serving seccomp notifications: %w", ErrUnsupported)
}
