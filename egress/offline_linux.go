package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/cruciblehq/crucible/policy/netpolicy"
	"golang.org/x/sys/unix"
)

// Offline serves a resolver on lo of netns (a jail's network namespace, which
// has no other device) that answers every name with NXDOMAIN, as the
// sandbox resolver answers a name it may not resolve, and reports each as
// refused, for reason. A jail with no network then says why a
// program cannot reach a host: without it, a lookup fails as "connection
// refused", which reads as a fault, and nothing is recorded. Nothing leaves
// the namespace either way; this only answers.
//
// Close stops it.
func Offline(netns *os.File, reason string, report func(Event)) (*OfflineServer, error) {
	fd, err := openIn(netns, func() (int, error) { return udpSocket(OfflineResolver) })
	if err != nil {
		return nil, fmt.Errorf("egress: the offline resolver: %w", err)
	}
	f := os.NewFile(uintptr(fd), "offline resolver")
	c, err := net.FilePacketConn(f)
	f.Close() // FilePacketConn has its own copy
	if err != nil {
		return nil, fmt.Errorf("egress: the offline resolver: %w", err)
	}
	s := &OfflineServer{conn: c, done: make(chan struct{})}
	d := &dnsServer{policy: refuseAll(reason), report: report}
	go s.serve(d)
	return s, nil
}

// OfflineServer is a jail's [Offline] resolver.
type OfflineServer struct {
	conn net.PacketConn
	done chan struct{}
}

// serve answers each datagram until Close. The datagrams come from inside
// the jail: answer bounds what it does with each.
func (s *OfflineServer) serve(d *dnsServer) {
	defer close(s.done)
	buf := make([]byte, 512)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if resp := d.answer(buf[:n]); resp != nil {
			_, _ = s.conn.WriteTo(resp, from)
		}
	}
}

// Close stops the resolver and waits for it.
func (s *OfflineServer) Close() error {
	err := s.conn.Close()
	<-s.done
	return err
}

// udpSocket opens a non-blocking UDP socket bound to port 53 of addr (an
// IPv4 address) in the calling thread's network namespace.
func udpSocket(addr netip.Addr) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: addr.As4(), Port: 53}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// refuseAll is the policy of a jail without a network: no name, no
// connection, for one reason. (The resolver asks only DecideName; the rest
// is Policy's, and refuses as well.)
type refuseAll string

func (r refuseAll) DecideName(string) netpolicy.Verdict { return netpolicy.Verdict{Reason: string(r)} }
func (r refuseAll) Decide(_ context.Context, _ netpolicy.Request) netpolicy.Verdict {
	return netpolicy.Verdict{Reason: string(r)}
}
func (r refuseAll) AddressAllowed(netip.Addr) (bool, string) { return false, string(r) }
func (r refuseAll) Host(string) (netip.Addr, bool)           { return netip.Addr{}, false }
