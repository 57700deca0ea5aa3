//go:build !linux

package jail

import (
	"context"
	"io"
	"os"
)

// Run reports that the jail needs Linux.
func Run(ctx context.Context, s *Spec) (*Result, error) { return nil, ErrUnsupported }

// Jail is a running jail; there is none off Linux.
type Jail struct{}

// Start reports that the jail needs Linux.
func Start(ctx context.Context, s *Spec) (*Jail, error) { return nil, ErrUnsupported }

// Create reports that the jail needs Linux.
func Create(ctx context.Context, s *Spec) (*Jail, error) { return nil, ErrUnsupported }

// Network reports that the jail needs Linux.
func (j *Jail) Network(setup func(netns *os.File) (io.Closer, error)) error { return ErrUnsupported }

// Start does nothing off Linux.
func (j *Jail) Start() {}

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
