package egress

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/rawfile"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/fdbased"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// endpoint is the stack's link to the tun device. gVisor's fdbased code
// writes the stack's packets to the device; our own reader reads the
// jail's.
//
// Why not gVisor's fdbased.New, reader included: its reader waits on an
// eventfd, to be told to stop, that nothing ever closes
// (gvisor.dev/issue/14755): one fd lost per execution, so a server would
// run out after about a thousand. Closing that eventfd ourselves would mean
// reaching into gVisor's unexported fields, and closing a wrong fd the day
// gVisor closes it too (its proposed fix does, in Close). Our reader waits
// the same way, on a thread of its own in ppoll (Go's poller, tried
// instead, added 0.7 to 0.9 ms to the 95th percentile of a new connection
// in bench/egress: the poller is looked at when the scheduler gets round
// to it, a thread in ppoll is woken by the kernel), but its eventfd is
// ours to close. Like fdbased, it blocks through gVisor's BlockingPoll,
// which gives up the goroutine's P as it blocks: a plain ppoll kept it,
// with the goroutines the reader had just readied, until the runtime's
// sysmon took it back, up to 10 ms later in a young process (a cold
// `crucible exec` with the network waited ~10 ms for its jail's spec). The
// write side, fdbased's InjectableEndpoint, reads nothing and so has no
// eventfd.
//
// The reader also stops under a flood: once told to stop, it reads at most
// maxDrain more packets, where fdbased looked at its eventfd only once the
// device was empty.
type endpoint struct {
	*fdbased.InjectableEndpoint // writes; and MTU, capabilities, headers
	fd                          int
	mtu                         uint32

	stopping atomic.Bool
	mu       sync.Mutex
	stopFD   int           // an eventfd, written once to wake the reader; -1 once closed
	attached bool          // the reader runs and has not been told to stop
	done     chan struct{} // closed when the reader returns; nil before Attach
}

// newEndpoint links a stack to fd, a non-blocking tun device of MTU mtu,
// which must stay open until Close.
func newEndpoint(fd int, mtu uint32) (*endpoint, error) {
	// The kernel checked what it sends us; what we send, it checks, so we
	// must compute it.
	w, err := fdbased.NewInjectable(fd, mtu, stack.CapabilityRXChecksumOffload)
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("creating an eventfd: %w", err)
	}
	return &endpoint{InjectableEndpoint: w, fd: fd, mtu: mtu, stopFD: efd}, nil
}

// Attach starts the reader, which delivers each packet to d on its own
// goroutine (as fdbased does with one processor). Attach(nil) stops it and
// waits until it has returned, its last packet delivered; the caller must
// hold no lock that delivering a packet takes (see Stack.stop). The reader
// is started once: after Attach(nil), the endpoint stays detached.
func (e *endpoint) Attach(d stack.NetworkDispatcher) {
	e.mu.Lock()
	if d != nil {
		if e.done == nil && e.stopFD >= 0 {
			e.attached = true
			e.done = make(chan struct{})
			go e.read(d)
		}
		e.mu.Unlock()
		return
	}
	if e.attached {
		e.attached = false
		e.stopping.Store(true)
		// Never blocks, nor fails: the counter goes from 0 to 1, once.
		_, _ = unix.Write(e.stopFD, binary.NativeEndian.AppendUint64(nil, 1))
	}
	done := e.done
	// Not waited for under mu: the packet path may ask IsAttached.
	e.mu.Unlock()
	if done != nil {
		<-done
	}
}

// IsAttached implements stack.LinkEndpoint.
func (e *endpoint) IsAttached() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.attached
}

// Wait implements stack.LinkEndpoint: Attach(nil) has waited for the reader
// already.
func (e *endpoint) Wait() {}

// Close stops the reader, if it still runs, and closes the eventfd. The
// stack calls it once it has removed the NIC, with no lock held; Stack.stop
// calls it again, for a NIC that was never created. Either way, the tun
// device stays open: it is the Stack's.
func (e *endpoint) Close() {
	e.Attach(nil)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopFD >= 0 {
		unix.Close(e.stopFD)
		e.stopFD = -1
	}
}

// maxDrain bounds the packets the reader delivers once told to stop: a
// tun device's queue holds 500 by default (txqueuelen).
const maxDrain = 1024

// read reads packets from the tun device and delivers them to d until it
// is stopped and the device is empty, or the device fails.
func (e *endpoint) read(d stack.NetworkDispatcher) {
	defer close(e.done)
	// The device hands over one packet per read, at most MTU bytes, into
	// a pooled chunk that holds the MTU. A packet that fills more than half
	// of it keeps it: a chunk of its own size would be that big too (the
	// pools double in size). A smaller one is copied into a chunk of its
	// own size, so that the chunk of the MTU does not stay pinned behind a
	// small segment the stack queues.
	v := buffer.NewViewSize(int(e.mtu))
	defer func() { v.Release() }()
	// stopFD stays open until Close, which comes after Attach(nil) has
	// waited for this goroutine.
	wait := []rawfile.PollEvent{{FD: int32(e.fd), Events: unix.POLLIN}, {FD: int32(e.stopFD), Events: unix.POLLIN}}
	// Once told to stop, it still delivers what the device holds, up to
	// a bound: the jail's processes are gone or exiting by then, and a
	// datagram one sent just before its end is refused (and recorded) like
	// any other.
	for left := maxDrain; left > 0; {
		if e.stopping.Load() {
			left--
		}
		b := v.AsSlice()
		n, err := unix.Read(e.fd, b)
		if err == unix.EAGAIN {
			if e.stopping.Load() {
				return // the device is empty
			}
			// Until a packet comes, or the eventfd says stop (it then
			// stays readable, so this returns at once from then on).
			if _, errno := rawfile.BlockingPoll(&wait[0], len(wait), nil); errno != 0 && errno != unix.EINTR {
				return
			}
			continue
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // the device is gone (EBADFD): no packet will come again
		}
		var proto tcpip.NetworkProtocolNumber
		switch header.IPVersion(b[:n]) {
		case header.IPv4Version:
			proto = header.IPv4ProtocolNumber
		case header.IPv6Version:
			proto = header.IPv6ProtocolNumber
		default:
			continue // not IP: nothing the stack could take
		}
		var payload buffer.Buffer
		if 2*n > v.Capacity() {
			v.CapLength(n)
			payload = buffer.MakeWithView(v)
			v = buffer.NewViewSize(int(e.mtu))
		} else {
			payload = buffer.MakeWithData(b[:n])
		}
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: payload})
		pkt.NetworkProtocolNumber = proto
		d.DeliverNetworkPacket(proto, pkt)
		pkt.DecRef()
	}
}
