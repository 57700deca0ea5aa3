package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// tunName is the jail's only network device besides lo.
const tunName = "tun0"

// nlTimeout bounds the wait for each rtnetlink acknowledgement. The kernel
// acknowledges a request before sendto returns, so this only matters if
// something is badly wrong.
var nlTimeout = unix.Timeval{Sec: 5}

// openTun creates the tun device tun0 in netns (an open /proc/PID/ns/net),
// gives it the jail's addresses, MTU and default routes, brings it and lo up,
// and returns its non-blocking, close-on-exec fd. Each packet read from the fd
// is one IP packet the jail sent, with no extra header.
func openTun(netns *os.File, mtu uint32) (fd int, err error) {
	fd, err = openIn(netns, func() (int, error) { return createTun(mtu) })
	if err != nil {
		return -1, fmt.Errorf("egress: %w", err)
	}
	return fd, nil
}

// openIn calls open in the network namespace netns and returns the fd it
// opened there: a tun device or a socket, which keeps that namespace for
// good.
//
// Where a thread of ours may come back to our namespace (we are root of
// the user namespace that owns it), the work happens on a thread of its
// own, which returns; if it cannot, it is never reused: see openInLocked.
// Where none may (Crucible in a user namespace of its own, package userns,
// on the host's network namespace), it goes to the parked thread: see
// parked.
func openIn(netns *os.File, open func() (int, error)) (int, error) {
	type result struct {
		fd  int
		err error
	}
	if !canReturn() {
		return parked.do(netns, open)
	}
	done := make(chan result, 1)
	go func() {
		fd, err := openInLocked(netns, open)
		done <- result{fd, err}
	}()
	r := <-done
	return r.fd, r.err
}

// canReturn says whether a thread of ours that enters another network
// namespace may come back to ours: setns needs CAP_SYS_ADMIN over the user
// namespace that owns the namespace entered.
var canReturn = sync.OnceValue(func() bool {
	net, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true // then openInLocked says why it cannot enter
	}
	defer unix.Close(net)
	owner, err := unix.IoctlRetInt(net, unix.NS_GET_USERNS)
	if errors.Is(err, unix.EPERM) {
		return false // the owner is above our user namespace
	}
	if err != nil {
		return true
	}
	defer unix.Close(owner)
	var a, b unix.Stat_t
	if unix.Fstat(owner, &a) != nil || unix.Stat("/proc/self/ns/user", &b) != nil {
		return true
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
})

// parked is the thread that enters jails' network namespaces when no
// thread may come back to ours. It leaves ours once, for a namespace of its
// own with nothing in it, and goes back there after each job: never
// holding a jail's namespace, and never running anything else. It must
// not end, either: a jail's init dies with the thread that forked it
// (Pdeathsig), and Go may have run that fork on this thread before it was
// locked.
var parked = &parkedThread{}

type parkedThread struct {
	once sync.Once
	jobs chan parkedJob
	err  error  // why the thread could not park
	home string // its namespace, as /proc names it ("net:[...]")
}

type parkedJob struct {
	netns *os.File
	open  func() (int, error)
	done  chan parkedResult
}

type parkedResult struct {
	fd  int
	err error
}

func (p *parkedThread) do(netns *os.File, open func() (int, error)) (int, error) {
	p.once.Do(func() {
		p.jobs = make(chan parkedJob)
		ready := make(chan error)
		go p.run(ready)
		p.err = <-ready
	})
	if p.err != nil {
		return -1, p.err
	}
	j := parkedJob{netns, open, make(chan parkedResult, 1)}
	p.jobs <- j
	r := <-j.done
	return r.fd, r.err
}

// run is the parked thread: it never unlocks, and never returns once
// parked.
func (p *parkedThread) run(ready chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread, whose namespaces /proc/self/ns names: keep it
		// (locked, so that no other goroutine gets it) until another
		// thread has parked, then give it back.
		inner := make(chan error)
		go p.run(inner)
		err := <-inner
		runtime.UnlockOSThread()
		ready <- err
		return
	}
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		// A failed unshare changes nothing: the thread is still ours, and
		// goes back to the runtime. Left locked, it would end, and kill
		// any jail whose init it forked before (Pdeathsig).
		runtime.UnlockOSThread()
		ready <- fmt.Errorf("making a network namespace to park in: %w", err)
		return
	}
	home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		ready <- fmt.Errorf("opening the parking namespace: %w", err)
		select {} // in a namespace of its own: it must not serve, nor end
	}
	p.home, _ = os.Readlink("/proc/thread-self/ns/net")
	ready <- nil
	for j := range p.jobs {
		if err := enter(j.netns); err != nil {
			j.done <- parkedResult{-1, fmt.Errorf("entering the jail's network namespace: %w", err)}
			continue
		}
		fd, err := j.open()
		if e := unix.Setns(home, unix.CLONE_NEWNET); e != nil {
			// Cannot happen (the namespace is ours), and must not
			// leave a jail's namespace serving the next job.
			if err == nil {
				unix.Close(fd)
			}
			j.done <- parkedResult{-1, fmt.Errorf("returning to the parking namespace: %w", e)}
			for j := range p.jobs {
				j.done <- parkedResult{-1, errors.New("the thread that enters jails' network namespaces is lost")}
			}
		}
		j.done <- parkedResult{fd, err}
	}
}

// openInLocked does openIn's work on the calling goroutine, which it locks
// to its thread while that thread is in netns. If the thread cannot come
// back, it stays locked: once the goroutine ends, the runtime then discards
// the thread instead of running other goroutines in the jail's namespace.
func openInLocked(netns *os.File, open func() (int, error)) (int, error) {
	runtime.LockOSThread()
	// This thread's namespace, not the process's (/proc/self/ns/net is the
	// main thread's): it is the one setns below replaces. unix.Open, unlike
	// os.Open, keeps the path out of the error.
	self, err := unix.Open("/proc/self/task/"+strconv.Itoa(unix.Gettid())+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("opening our network namespace: %w", err)
	}
	defer unix.Close(self)

	if err := enter(netns); err != nil {
		// A failed setns changes nothing: the thread is still ours.
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("entering the jail's network namespace: %w", err)
	}
	fd, err := open()
	if e := unix.Setns(self, unix.CLONE_NEWNET); e != nil {
		if err == nil {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("returning to our network namespace: %w", e)
	}
	runtime.UnlockOSThread()
	return fd, err
}

// enter moves the calling thread into the network namespace netns. Going
// through SyscallConn keeps netns open for the call, and a closed or nil
// file is an error rather than fd -1.
func enter(netns *os.File) error {
	rc, err := netns.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Setns(int(fd), unix.CLONE_NEWNET)
	}); err != nil {
		return err
	}
	return serr
}

// createTun creates and configures tun0 in the calling thread's network
// namespace, and returns its fd.
func createTun(mtu uint32) (int, error) {
	// A tun device is created in the namespace of whoever opened
	// /dev/net/tun, at open time: hence the setns before this open.
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening /dev/net/tun: %w", err)
	}
	if err := setupTun(fd, mtu); err != nil {
		// Closing the only fd of a non-persistent tun also removes the
		// device, with its addresses and routes: undo setupTun's persist
		// (an error means it never got that far).
		_ = unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 0)
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func setupTun(fd int, mtu uint32) error {
	ifr, err := unix.NewIfreq(tunName)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tunName, err)
	}
	// IFF_NO_PI: bare IP packets, as gVisor's fdbased endpoint expects.
	// IFF_TUN_EXCL: never attach to a tun0 someone else made.
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_TUN_EXCL)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return fmt.Errorf("creating %s: %w", tunName, err)
	}
	// Persistent, so that closing our fd does not unregister the device:
	// that waits for an RCU barrier, ~20 ms on every execution. The device
	// goes with the jail's namespace instead, which the kernel tears down
	// in the background once the jail's last process and our fd are gone.
	if err := unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 1); err != nil {
		return fmt.Errorf("making %s persistent: %w", tunName, err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return fmt.Errorf("making %s non-blocking: %w", tunName, err)
	}

	// A netlink socket speaks to the namespace it was created in, so this
	// one configures the jail's, even after we leave it.
	nl, err := dialRoute()
	if err != nil {
		return fmt.Errorf("opening an rtnetlink socket: %w", err)
	}
	defer nl.close()
	lo, err := nl.index("lo")
	if err != nil {
		return fmt.Errorf("looking up lo: %w", err)
	}
	tun, err := nl.index(tunName)
	if err != nil {
		return fmt.Errorf("looking up %s: %w", tunName, err)
	}

	const (
		create = unix.NLM_F_CREATE | unix.NLM_F_EXCL
		// Without NODAD an IPv6 address stays tentative for a second
		// or more, and connect() from it fails meanwhile. The flag fits
		// ifa_flags, but IFA_FLAGS is where newer kernels look first.
		nodad = unix.IFA_F_NODAD
	)
	local4, local6 := Local4.As4(), Local6.As16()
	steps := []struct {
		what  string
		typ   uint16
		flags uint16
		msg   []byte
	}{
		{"bringing lo up", unix.RTM_NEWLINK, 0, ifInfo(lo, unix.IFF_UP)},
		{"setting the MTU of " + tunName, unix.RTM_NEWLINK, 0,
			attr(ifInfo(tun, 0), unix.IFLA_MTU, u32(mtu))},
		{"adding the IPv4 address", unix.RTM_NEWADDR, create,
			attr(attr(ifAddr(unix.AF_INET, 32, 0, tun), unix.IFA_LOCAL, local4[:]), unix.IFA_ADDRESS, local4[:])},
		{"adding the IPv6 address", unix.RTM_NEWADDR, create,
			attr(attr(ifAddr(unix.AF_INET6, 128, nodad, tun), unix.IFA_ADDRESS, local6[:]), unix.IFA_FLAGS, u32(nodad))},
		{"bringing " + tunName + " up", unix.RTM_NEWLINK, 0, ifInfo(tun, unix.IFF_UP)},
		// Routes last: one through a device that is down is refused.
		{"adding the default IPv4 route", unix.RTM_NEWROUTE, create,
			attr(rtMsg(unix.AF_INET, unix.RT_SCOPE_LINK), unix.RTA_OIF, u32(tun))},
		{"adding the default IPv6 route", unix.RTM_NEWROUTE, create,
			attr(rtMsg(unix.AF_INET6, unix.RT_SCOPE_UNIVERSE), unix.RTA_OIF, u32(tun))},
	}
	for _, s := range steps {
		if err := nl.do(s.typ, s.flags, s.msg); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

// rtnl is a NETLINK_ROUTE socket that sends one request at a time and waits
// for its acknowledgement.
type rtnl struct {
	fd  int
	seq uint32
	buf []byte
}

func dialRoute() (*rtnl, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &nlTimeout); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &rtnl{fd: fd, buf: make([]byte, 8192)}, nil
}

func (c *rtnl) close() { unix.Close(c.fd) }

// index returns the index of the device called name, in the socket's
// namespace (any socket answers SIOCGIFINDEX for its own).
func (c *rtnl) index(name string) (uint32, error) {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(c.fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, err
	}
	return ifr.Uint32(), nil
}

// do sends one request of type typ, whose body (the family header and
// attributes) is msg, and returns the kernel's verdict on it.
func (c *rtnl) do(typ, flags uint16, msg []byte) error {
	c.seq++
	b := make([]byte, 0, unix.SizeofNlMsghdr+len(msg))
	b = ne.AppendUint32(b, uint32(unix.SizeofNlMsghdr+len(msg)))
	b = ne.AppendUint16(b, typ)
	b = ne.AppendUint16(b, flags|unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	b = ne.AppendUint32(b, c.seq)
	b = ne.AppendUint32(b, 0) // port id: the kernel fills in ours
	b = append(b, msg...)
	if err := unix.Sendto(c.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	// One ack is expected; anything else (a stray message from the kernel,
	// another sequence number) is skipped, a bounded number of times.
	for range 8 {
		n, from, err := unix.Recvfrom(c.fd, c.buf, 0)
		if err != nil {
			return err
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue // not from the kernel
		}
		if done, err := ackIn(c.buf[:n], c.seq); done {
			return err
		}
	}
	return errors.New("no acknowledgement from the kernel")
}

// ackIn looks in b, one datagram of netlink messages, for the
// acknowledgement of request seq. It reports whether it found one, and the
// error the ack carries.
func ackIn(b []byte, seq uint32) (bool, error) {
	for len(b) >= unix.SizeofNlMsghdr {
		n := ne.Uint32(b[0:4])
		if n < unix.SizeofNlMsghdr || n > uint32(len(b)) {
			return true, errors.New("malformed netlink reply")
		}
		if ne.Uint16(b[4:6]) == unix.NLMSG_ERROR && ne.Uint32(b[8:12]) == seq {
			if n < unix.SizeofNlMsghdr+4 {
				return true, errors.New("malformed netlink reply")
			}
			if code := int32(ne.Uint32(b[16:20])); code < 0 {
				return true, unix.Errno(-code)
			}
			return true, nil
		}
		b = b[min(align(int(n)), len(b)):]
	}
	return false, nil
}

// The wire format of rtnetlink, in the host's byte order.

var ne = binary.NativeEndian

// align rounds n up to netlink's 4-byte alignment (NLMSG_ALIGN, RTA_ALIGN).
func align(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// ifInfo is a struct ifinfomsg for device index: up is IFF_UP to bring it
// up, or 0 to leave its flags alone.
func ifInfo(index uint32, up uint32) []byte {
	b := make([]byte, 0, unix.SizeofIfInfomsg)
	b = append(b, unix.AF_UNSPEC, 0)
	b = ne.AppendUint16(b, 0) // device type: unchanged
	b = ne.AppendUint32(b, index)
	b = ne.AppendUint32(b, up) // flags
	return ne.AppendUint32(b, up)
}

// ifAddr is a struct ifaddrmsg for a global address of prefix length plen on
// device index.
func ifAddr(family, plen, flags uint8, index uint32) []byte {
	b := make([]byte, 0, unix.SizeofIfAddrmsg)
	b = append(b, family, plen, flags, unix.RT_SCOPE_UNIVERSE)
	return ne.AppendUint32(b, index)
}

// rtMsg is a struct rtmsg for a default (/0) unicast route in the main
// table.
func rtMsg(family, scope uint8) []byte {
	b := make([]byte, 0, unix.SizeofRtMsg)
	b = append(b, family, 0, 0, 0, // dst_len 0: default; src_len, tos
		unix.RT_TABLE_MAIN, unix.RTPROT_BOOT, scope, unix.RTN_UNICAST)
	return ne.AppendUint32(b, 0) // flags
}

// attr appends the route attribute typ with value v to b, padded.
func attr(b []byte, typ uint16, v []byte) []byte {
	b = ne.AppendUint16(b, uint16(unix.SizeofRtAttr+len(v)))
	b = ne.AppendUint16(b, typ)
	b = append(b, v...)
	return append(b, make([]byte, align(len(v))-len(v))...)
}

func u32(v uint32) []byte { return ne.AppendUint32(nil, v) }
