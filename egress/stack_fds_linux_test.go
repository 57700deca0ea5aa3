package egress

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/policy/netpolicy"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// TestStackKeepsNoFDs starts and closes stacks that carried traffic, and
// counts this process's open fds: a server runs one stack per execution, so
// a single fd left behind by each would run it out of descriptors after a
// thousand executions, as gVisor's fdbased endpoint did with the eventfd of
// its reader.
func TestStackKeepsNoFDs(t *testing.T) {
	needRoot(t)
	policy, err := netpolicy.Compile(netpolicy.Rules{Allow: []string{"api.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	cycle := func(t *testing.T) {
		// Each stack needs a namespace of its own (its tun0 is persistent
		// and exclusive); the subtest closes it, and ends its process.
		ns, _ := newNetns(t)
		st, err := Start(ns, Options{Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := st.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}()
		query := msg{id: 7, name: "api.example.com.", typ: dnsmessage.TypeA}.build(t)
		for _, typ := range []int{unix.SOCK_DGRAM, unix.SOCK_STREAM} {
			c := dialResolver(t, ns, typ)
			out := query
			if typ == unix.SOCK_STREAM {
				out = frame(query)
			}
			if _, err := c.Write(out); err != nil {
				c.Close()
				t.Fatalf("sending the query: %v", err)
			}
			var resp []byte
			if typ == unix.SOCK_STREAM {
				resp, err = readFrame(c)
			} else {
				buf := make([]byte, 512)
				var n int
				n, err = c.Read(buf)
				resp = buf[:n]
			}
			c.Close()
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			if r := mustParse(t, resp); r.hdr.ID != 7 || len(r.answers) != 1 {
				t.Fatalf("answer %+v, want one address", r)
			}
		}
	}
	// Whatever the runtime opens once (its poller) is opened here.
	for range 3 {
		t.Run("warm-up", cycle)
	}
	before := fdList(t)
	const cycles = 50
	for range cycles {
		if !t.Run("cycle", cycle) {
			return
		}
	}
	if after := fdList(t); len(after) != len(before) {
		t.Errorf("%d fds open after %d stacks, %d before\nbefore: %v\nafter:  %v",
			len(after), cycles, len(before), before, after)
	}
}

// dialResolver connects a socket of type typ (SOCK_STREAM or SOCK_DGRAM)
// from the jail's side of netns to the sandbox's resolver, with a deadline.
func dialResolver(t *testing.T, netns *os.File, typ int) net.Conn {
	t.Helper()
	fd, err := openIn(netns, func() (int, error) {
		return unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
	})
	if err != nil {
		t.Fatalf("socket in the jail's namespace: %v", err)
	}
	// A blocking connect, bounded by the send timeout.
	must(t, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{Sec: 20}))
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: Resolver.As4(), Port: 53}); err != nil {
		unix.Close(fd)
		t.Fatalf("connecting to the resolver: %v", err)
	}
	f := os.NewFile(uintptr(fd), "resolver")
	c, err := net.FileConn(f) // a dup of fd
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// fdList returns what each of this process's open fds is, as
// /proc/self/fd's links name it ("anon_inode:[eventfd]", "socket:[...]").
func fdList(t *testing.T) []string {
	t.Helper()
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(int(d.Fd()))
	var out []string
	for _, n := range names {
		if l, err := os.Readlink("/proc/self/fd/" + n); err == nil && n != self {
			out = append(out, n+"="+l)
		}
	}
	return out
}

// TestStackDeviceDeleted deletes the tun device from inside the jail's
// namespace, as a jail with CAP_NET_ADMIN there could: the stack's reader
// must end (not spin on a device that says nothing but errors), and Close
// must still work.
func TestStackDeviceDeleted(t *testing.T) {
	needRoot(t)
	policy, err := netpolicy.Compile(netpolicy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	ns, pid := newNetns(t)
	st, err := Start(ns, Options{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	inNetns(t, pid, "ip", "link", "del", tunName)
	select {
	case <-st.link.done:
	case <-time.After(30 * time.Second): // a reader that never ends, not a speed
		t.Errorf("the reader still runs 30s after its device was deleted")
	}
	if err := st.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
