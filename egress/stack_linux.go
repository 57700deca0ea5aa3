package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/cruciblehq/crucible/policy/netpolicy"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

const (
	nicID      = tcpip.NICID(1)
	defaultMTU = 65520
	// maxNames bounds the distinct names one execution may resolve.
	maxNames = 4096
	// maxHandshakes bounds TCP handshakes in flight; the rest are dropped
	// and retried by the jail's kernel.
	maxHandshakes = 256
	// dnsTimeout bounds a DNS-over-TCP connection.
	dnsTimeout = 10 * time.Second
)

// Stack is one execution's network: the tun device in the jail's network
// namespace and the userspace stack that answers it.
type Stack struct {
	*proxy
	s     *stack.Stack
	link  *endpoint // on fd
	fd    int
	names *names
	dns   *dnsServer
	udp   *gonet.UDPConn
}

// Start creates the tun device in netns (an open /proc/PID/ns/net) and runs
// the stack on it until Close. The caller needs CAP_NET_ADMIN over netns and
// CAP_SYS_ADMIN to enter it, as root has.
func Start(netns *os.File, o Options) (*Stack, error) {
	if o.Policy == nil {
		return nil, errors.New("egress: no policy")
	}
	if o.Secrets != nil && (o.Secrets.Set == nil || o.Secrets.CA == nil) {
		return nil, errors.New("egress: secrets without their set or CA")
	}
	fd, err := openTun(netns, cmp(o.MTU, defaultMTU))
	if err != nil {
		return nil, err
	}
	st, err := newStack(fd, &o)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return st, nil
}

func newStack(fd int, o *Options) (*Stack, error) {
	st := &Stack{proxy: newProxy(o), fd: fd, names: newNames(maxNames)}
	st.dns = &dnsServer{policy: o.Policy, names: st.names, report: st.report}
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
	})
	st.s = s
	sack := tcpip.TCPSACKEnabled(true)
	_ = s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)

	// The handlers go in before the NIC: CreateNIC starts reading the tun at
	// once, and setting a handler is not synchronized with that.
	tcpFwd := tcp.NewForwarder(s, 0, maxHandshakes, st.handleTCP)
	s.SetTransportProtocolHandler(tcp.ProtocolNumber, tcpFwd.HandlePacket)
	udpFwd := udp.NewForwarder(s, st.handleUDP)
	s.SetTransportProtocolHandler(udp.ProtocolNumber, udpFwd.HandlePacket)

	ep, err := newEndpoint(fd, cmp(o.MTU, defaultMTU))
	if err != nil {
		s.Destroy()
		return nil, fmt.Errorf("egress: link endpoint: %w", err)
	}
	st.link = ep
	fail := func(what string, e tcpip.Error) (*Stack, error) {
		st.stop()
		return nil, fmt.Errorf("egress: %s: %s", what, e)
	}
	if e := s.CreateNIC(nicID, ep); e != nil {
		return fail("creating the NIC", e)
	}
	// Take packets for every destination, and answer from any: the jail's
	// whole network is this stack.
	if e := s.SetPromiscuousMode(nicID, true); e != nil {
		return fail("promiscuous mode", e)
	}
	if e := s.SetSpoofing(nicID, true); e != nil {
		return fail("spoofing", e)
	}
	s.SetRouteTable([]tcpip.Route{
		{Destination: header.IPv4EmptySubnet, NIC: nicID},
		{Destination: header.IPv6EmptySubnet, NIC: nicID},
	})
	// The resolver is a bound UDP endpoint, which needs its address on the
	// NIC; TCP to it goes through the forwarder like everything else.
	if e := s.AddProtocolAddress(nicID, tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddrFrom4(Resolver.As4()).WithPrefix(),
	}, stack.AddressProperties{}); e != nil {
		return fail("resolver address", e)
	}
	udpConn, err := gonet.DialUDP(s, &tcpip.FullAddress{NIC: nicID, Addr: tcpip.AddrFrom4(Resolver.As4()), Port: 53}, nil, ipv4.ProtocolNumber)
	if err != nil {
		st.stop()
		return nil, fmt.Errorf("egress: resolver: %w", err)
	}
	st.udp = udpConn
	st.begin()
	go st.serveDNS()
	return st, nil
}

// Close ends every connection, stops the stack and closes the tun device.
// The jail's processes should be gone: it keeps nothing of theirs alive.
func (st *Stack) Close() error {
	_ = st.udp.Close()
	// First our own goroutines, while packets still flow: a handshake in
	// progress (CreateEndpoint) waits for the jail's answer, which is the
	// dead jail's kernel resetting it.
	st.shutdown()
	st.stop()
	return unix.Close(st.fd)
}

// stop stops the stack and waits for its goroutines, after which nothing
// reads or writes fd, and the link endpoint holds no fd of its own.
//
// The order matters, or Close can hang for good. The link endpoint's reader
// (endpoint.read) takes each packet up to the transport layer on its own
// goroutine. There a segment of no connection is answered with a reset
// (tcp's replyWithReset), which takes the stack's lock (FindRoute, and
// FindNICNameFromID to write). stack.Wait removes the NIC holding that
// lock, and nic.remove calls Attach(nil), which waits for the reader: a
// reader in the middle of a reset and a Wait in the middle of removing the
// NIC would wait for each other forever.
//
// So the reader is stopped first, with no lock of the stack held:
// Attach(nil) tells it to stop (a flag it looks at before each read, and
// an eventfd that wakes it from its poll) and waits until it has returned,
// its last packet and reset included. Nothing else reads fd, so no packet
// from the jail enters the stack after that, and no new endpoint appears
// while Close aborts the registered ones. When Wait then removes the NIC,
// Attach(nil) finds the reader stopped and returns at once. The default
// queueing discipline (CreateNIC is given none) writes inline, with no
// goroutine of its own to outlive Wait; our own goroutines are done
// (shutdown) or never write (handleTCP). The endpoint's Close, last,
// closes its eventfd (Wait calls it too, but only for a NIC it created).
// The caller closes fd only after this, so that no write goes to a reused
// fd number.
func (st *Stack) stop() {
	st.link.Attach(nil)
	st.s.Close()
	st.s.Wait()
	st.link.Close()
}

// serveDNS answers the jail's DNS over UDP.
func (st *Stack) serveDNS() {
	defer st.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, from, err := st.udp.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if resp := st.dns.answer(buf[:n]); resp != nil {
			_, _ = st.udp.WriteTo(resp, from)
		}
	}
}

// handleUDP gets every datagram not for the resolver: it is dropped, and
// recorded. (QUIC falls back to TCP.)
func (st *Stack) handleUDP(r *udp.ForwarderRequest) bool {
	id := r.ID()
	dst := addrOf(id.LocalAddress)
	st.report(Event{Kind: KindUDP, Name: dst.String(), Port: id.LocalPort,
		Reason: "UDP goes only to the sandbox's DNS resolver"})
	return true
}

// handleTCP gets every new connection from the jail, in its own goroutine.
func (st *Stack) handleTCP(r *tcp.ForwarderRequest) {
	if !st.begin() {
		// Closing: nothing waits for this goroutine, so it must not write
		// (a reset could reach fd after Close has closed it). The jail is
		// gone; its SYN is dropped.
		r.Complete(false)
		return
	}
	defer st.wg.Done()
	id := r.ID()
	dst := netip.AddrPortFrom(addrOf(id.LocalAddress), id.LocalPort)

	if dst.Addr() == Resolver && dst.Port() == 53 {
		// DNS over TCP holds a goroutine and a 64 KiB buffer: it counts
		// against the connection limit like any other connection.
		if !st.acquire(Resolver.String(), 53) {
			r.Complete(true)
			return
		}
		defer st.release()
		c, _, ok := st.accept(r)
		if ok {
			_ = c.SetDeadline(time.Now().Add(dnsTimeout))
			_ = st.dns.serveStream(c)
			st.untrack(c)
		}
		return
	}
	name, ok := st.names.lookup(dst.Addr())
	if !ok {
		// Not an address our DNS gave out: only a literal Allow rule lets
		// it through, and it is refused before the handshake.
		v := st.policy.Decide(st.ctx, netpolicy.Request{Name: dst.Addr().String(), Port: dst.Port()})
		if !v.Allow {
			st.report(Event{Kind: KindConnect, Name: dst.Addr().String(), Port: dst.Port(), Reason: v.Reason, Rule: v.Rule})
			r.Complete(true)
			return
		}
		name = ""
	}
	target := name
	if target == "" {
		target = dst.Addr().String()
	}
	if !st.acquire(target, dst.Port()) {
		r.Complete(true)
		return
	}
	defer st.release()
	c, ep, ok := st.accept(r)
	if !ok {
		return
	}
	defer st.untrack(c)
	st.serve(c, func() { ep.Abort() }, name, dst)
}

// accept completes the handshake and tracks the connection.
func (st *Stack) accept(r *tcp.ForwarderRequest) (*gonet.TCPConn, tcpip.Endpoint, bool) {
	var wq waiter.Queue
	ep, e := r.CreateEndpoint(&wq)
	if e != nil {
		r.Complete(true)
		return nil, nil, false
	}
	r.Complete(false)
	ep.SocketOptions().SetDelayOption(false) // no Nagle: we relay what we get
	c := gonet.NewTCPConn(&wq, ep)
	if !st.track(c) {
		return nil, nil, false
	}
	return c, ep, true
}

// addrOf converts a stack address; the stack only hands us 4- or 16-byte
// ones.
func addrOf(a tcpip.Address) netip.Addr {
	ip, _ := netip.AddrFromSlice(a.AsSlice())
	return ip.Unmap()
}
