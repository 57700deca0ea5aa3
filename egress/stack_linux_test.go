package egress

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/policy/netpolicy"
	"golang.org/x/sys/unix"
)

// rawSocket returns a raw IPv4 TCP socket in netns, bound to the jail's
// address: it sends hand-made segments from the jail's side, and sees every
// TCP segment the stack sends back. The bind fails in a namespace without
// the jail's address, so the segments cannot leave by another route.
func rawSocket(t testing.TB, netns *os.File) int {
	t.Helper()
	fd, err := openIn(netns, func() (int, error) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
		if err != nil {
			return -1, err
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: Local4.As4()}); err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	})
	if err != nil {
		t.Fatalf("raw socket in the jail's namespace: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	// A bounded wait for each segment the stack sends back.
	must(t, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1}))
	return fd
}

// ackSegment is a bare TCP ACK from the jail's address, port sport, to
// dst:dport, with its checksum: a segment of no connection, which the stack
// answers with a reset.
func ackSegment(dst [4]byte, sport, dport uint16, seq uint32) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint32(b[4:], seq)
	binary.BigEndian.PutUint32(b[8:], seq^0x5a5a5a5a) // acknowledgment number
	b[12] = 5 << 4                                    // data offset: no options
	b[13] = 0x10                                      // ACK
	binary.BigEndian.PutUint16(b[14:], 1024)          // window
	src := Local4.As4()
	pseudo := append(append(append([]byte{}, src[:]...), dst[:]...), 0, unix.IPPROTO_TCP, 0, 20)
	binary.BigEndian.PutUint16(b[16:], checksum(append(pseudo, b...)))
	return b
}

// checksum is the Internet checksum (RFC 1071) of b, of even length.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// awaitReset reads the raw socket until a reset from dst arrives, for up to
// 10s.
func awaitReset(fd int, dst [4]byte) bool {
	buf := make([]byte, 1500)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			continue // the 1s receive timeout, or EINTR
		}
		p := buf[:n]
		ihl := int(p[0]&0xf) * 4
		if n >= ihl+20 && [4]byte(p[12:16]) == dst && p[ihl+13]&0x04 != 0 {
			return true
		}
	}
	return false
}

// TestCloseUnderResets closes stacks while the jail floods them with
// segments of no connection, each of which the stack answers with a reset
// on the packet path itself: a teardown that holds the stack's lock while it
// waits for that path would hang for good, as crucible did after killing a
// jail that held a keep-alive connection.
//
// With that bug back (stop without its Attach(nil)), six runs under the
// race detector all hung in the first or second iteration; twenty leave a
// wide margin, and each costs a core flooding for ~0.6 s.
func TestCloseUnderResets(t *testing.T) {
	needRoot(t)
	policy, err := netpolicy.Compile(netpolicy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	const (
		iterations = 20
		// A hang, not a speed: a Close takes milliseconds.
		closeBound = 30 * time.Second
	)
	stopAt := time.Now().Add(time.Minute)
	dst := [4]byte{198, 18, 0, 9} // synthetic, never handed out
	for i := range iterations {
		if time.Now().After(stopAt) {
			t.Logf("time is up after %d iterations", i)
			break
		}
		ok := t.Run(fmt.Sprint(i), func(t *testing.T) {
			ns, _ := newNetns(t)
			st, err := Start(ns, Options{Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			raw := rawSocket(t, ns)
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				to := &unix.SockaddrInet4{Addr: dst}
				for n := uint32(0); !stop.Load(); n++ {
					seg := ackSegment(dst, uint16(20000+n%20000), uint16(1+n%60000), n*7919)
					_ = unix.Sendto(raw, seg, 0, to) // a full tun queue drops
				}
			}()
			defer func() {
				stop.Store(true)
				wg.Wait()
			}()
			if !awaitReset(raw, dst) {
				t.Fatal("the stack never answered with a reset")
			}
			closed := make(chan error, 1)
			go func() { closed <- st.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(closeBound):
				t.Fatalf("Close still blocked after %v:\n%s", closeBound, stacks("gvisor", "egress"))
			}
			checkThreads(t)
		})
		if !ok {
			break
		}
	}
}

// stacks returns the stacks of the goroutines that mention any of words.
func stacks(words ...string) string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, w := range words {
			if strings.Contains(g, w) {
				out = append(out, g)
				break
			}
		}
	}
	return strings.Join(out, "\n\n")
}
