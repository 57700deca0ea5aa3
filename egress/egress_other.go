//go:build !linux

package egress

import (
	"errors"
	"os"
)

// ErrUnsupported is returned on platforms without tun devices and network
// namespaces.
var ErrUnsupported = errors.New("egress: only supported on Linux")

// Stack is one execution's network.
type Stack struct{}

// Start is not supported on this platform.
func Start(netns *os.File, o Options) (*Stack, error) { return nil, ErrUnsupported }

// Close does nothing.
func (s *Stack) Close() error { return nil }

// OfflineServer is a jail's resolver without a network.
type OfflineServer struct{}

// Offline is not supported on this platform.
func Offline(netns *os.File, reason string, report func(Event)) (*OfflineServer, error) {
	return nil, ErrUnsupported
}

// Close does nothing.
func (s *OfflineServer) Close() error { return nil }
