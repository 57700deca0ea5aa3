//go:build !linux

package jail

import "context"

// Run reports that the jail needs Linux.
func Run(ctx context.Context, s *Spec) (*Result, error) { return nil, ErrUnsupported }

// Diagnose reports that the jail needs Linux.
func Diagnose(ctx context.Context) []Check {
	return []Check{{Feature: "operating system", Status: StatusMissing, Required: true, Detail: "the jail needs Linux"}}
}

// Bind reports that the jail needs Linux.
func (l *LateWorkspace) Bind(dir, saved string) error { return ErrUnsupported }

// SystemdScopeFailed has nothing to record off Linux.
func SystemdScopeFailed(err error) {}
