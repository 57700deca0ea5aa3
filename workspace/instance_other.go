//go:build !linux

package workspace

import (
	"errors"
	"log/slog"
)

// ErrUnsupported is Open's error where there are no tmpfs mounts.
var ErrUnsupported = errors.New("workspace: only supported on Linux")

type instance struct{ dir string }

func openInstance(string) (*instance, error)       { return nil, ErrUnsupported }
func openDefault(*slog.Logger) (*instance, error)  { return nil, ErrUnsupported }
func (*instance) mount(int64, int) (string, error) { return "", ErrUnsupported }
func (*instance) close() error                     { return nil }
func unmount(string)                               {}
