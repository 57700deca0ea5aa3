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

// WantSystemdScope: there is no systemd to ask off Linux.
func WantSystemdScope() (manager, v2 string) { return "", "" }

// OwnCgroupV2: there are no cgroups off Linux.
func OwnCgroupV2() string { return "" }

// SystemdScopeFailed has nothing to record off Linux.
func SystemdScopeFailed(err error) {}
