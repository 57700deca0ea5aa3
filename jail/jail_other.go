//go:build !linux

package jail

import (
	"context"
	"os"
)

// Run reports that the jail needs Linux.
func Run(ctx context.Context, s *Spec) (*Result, error) { return nil, ErrUnsupported }

// Jail is a running jail; there is none off Linux.
type Jail struct{}

// Start reports that the jail needs Linux.
func Start(ctx context.Context, s *Spec) (*Jail, error) { return nil, ErrUnsupported }

// Bind reports that the jail needs Linux.
func (j *Jail) Bind(dir string, over ...Layer) error { return ErrUnsupported }

// Begin does nothing off Linux.
func (j *Jail) Begin() {}

// Stdin is nil off Linux.
func (j *Jail) Stdin() *os.File { return nil }

// Kill does nothing off Linux.
func (j *Jail) Kill() {}

// Wait reports that the jail needs Linux.
func (j *Jail) Wait() (*Result, error) { return nil, ErrUnsupported }

// Close reports that the jail needs Linux.
func (j *Jail) Close() (*Result, error) { return nil, ErrUnsupported }

// Diagnose reports that the jail needs Linux.
func Diagnose(ctx context.Context) []Check {
	return []Check{{Feature: "operating system", Status: StatusMissing, Required: true, Detail: "the jail needs Linux"}}
}
