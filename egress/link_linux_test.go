package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"golang.org/x/sys/unix"
)

const testMTU = 65520

// needRoot skips t, or fails it under CI, unless it can create network
// namespaces and look into them.
func needRoot(t testing.TB) {
	t.Helper()
	testenv.NeedRoot(t, "creates network namespaces and tun devices")
	for _, tool := range []string{"unshare", "nsenter", "ip"} {
		testenv.NeedTool(t, tool)
	}
}

// newNetns starts a process in a network namespace of its own, and returns
// the namespace, open, and the process's pid. Both go away with the test.
func newNetns(t testing.TB) (*os.File, int) {
	t.Helper()
	cmd := exec.Command("unshare", "--net", "--", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	own := readNs(t, "/proc/self/ns/net")
	path := fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)
	// Until unshare has run, the child shares our namespace. Making one can
	// wait long on a loaded host that tears others down meanwhile.
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		if id, err := os.Readlink(path); err == nil && id != own {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f, cmd.Process.Pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the child never got a network namespace of its own")
	return nil, 0
}

func readNs(t testing.TB, path string) string {
	t.Helper()
	id, err := os.Readlink(path)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// inNetns runs a command in the network namespace of pid.
func inNetns(t testing.TB, pid int, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("nsenter", append([]string{fmt.Sprintf("--net=/proc/%d/ns/net", pid), "--"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

type ipLink struct {
	Name     string   `json:"ifname"`
	Flags    []string `json:"flags"`
	MTU      int      `json:"mtu"`
	AddrInfo []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		Prefixlen int    `json:"prefixlen"`
		Tentative bool   `json:"tentative"`
	} `json:"addr_info"`
}

type ipRoute struct {
	Dst, Dev, Scope string
}

func links(t testing.TB, pid int) map[string]ipLink {
	t.Helper()
	var ls []ipLink
	if err := json.Unmarshal(inNetns(t, pid, "ip", "-j", "addr", "show"), &ls); err != nil {
		t.Fatal(err)
	}
	m := map[string]ipLink{}
	for _, l := range ls {
		m[l.Name] = l
	}
	return m
}

func routes(t testing.TB, pid int, family string) []ipRoute {
	t.Helper()
	var rs []ipRoute
	if err := json.Unmarshal(inNetns(t, pid, "ip", "-j", family, "route", "show"), &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// hostTun returns the index of tun0 in the test's own namespace, 0 if none.
func hostTun(t testing.TB) int {
	t.Helper()
	ifc, err := net.InterfaceByName(tunName)
	if err != nil {
		return 0
	}
	return ifc.Index
}

// checkThreads fails unless every thread of the process is in our network
// namespace: openTun must leave none behind in the jail's.
func checkThreads(t testing.TB) {
	t.Helper()
	own := readNs(t, "/proc/self/ns/net")
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		id, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net")
		if err != nil {
			continue // the thread has exited
		}
		if id != own && (parked.home == "" || id != parked.home) {
			t.Errorf("thread %s is in %s, not %s", task.Name(), id, own)
		}
	}
}

func openFDs(t testing.TB) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// The parked thread, which makes tun devices where no thread may come back
// to our namespace (Crucible in a user namespace of its own): each lands in
// its jail's namespace, and the thread is never left in one.
func TestParkedThread(t *testing.T) {
	needRoot(t)
	before := hostTun(t)
	own := readNs(t, "/proc/self/ns/net") // the main thread's: it must not park
	for range 2 {
		ns, pid := newNetns(t)
		fd, err := parked.do(ns, func() (int, error) { return createTun(testMTU) })
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		if out := inNetns(t, pid, "ip", "-o", "link", "show", tunName); !strings.Contains(string(out), tunName) {
			t.Errorf("no %s in the jail's namespace: %s", tunName, out)
		}
		checkThreads(t)
	}
	if now := readNs(t, "/proc/self/ns/net"); now != own {
		t.Errorf("the main thread moved from %s to %s", own, now)
	}
	if parked.home == "" || parked.home == own {
		t.Errorf("the parked thread is in %q, not a namespace of its own", parked.home)
	}
	if got := hostTun(t); got != before {
		t.Errorf("tun0 in our own namespace: index %d, was %d", got, before)
	}
}

func TestOpenTun(t *testing.T) {
	needRoot(t)
	before := hostTun(t)
	ns, pid := newNetns(t)
	fd, err := openTun(ns, testMTU)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	checkThreads(t)
	if got := hostTun(t); got != before {
		t.Errorf("tun0 in our own namespace: index %d, was %d", got, before)
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Errorf("fd flags %#x, %v: want O_NONBLOCK", fl, err)
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("fd flags %#x, %v: want FD_CLOEXEC", fl, err)
	}

	ls := links(t, pid)
	if lo := ls["lo"]; !slices.Contains(lo.Flags, "UP") {
		t.Errorf("lo flags %v, want UP", lo.Flags)
	}
	tun, ok := ls[tunName]
	if !ok {
		t.Fatalf("no %s in the namespace: %v", tunName, ls)
	}
	if !slices.Contains(tun.Flags, "UP") || tun.MTU != testMTU {
		t.Errorf("%s: flags %v mtu %d, want UP and %d", tunName, tun.Flags, tun.MTU, testMTU)
	}
	want := map[string]int{Local4.String(): 32, Local6.String(): 128}
	for _, a := range tun.AddrInfo {
		if plen, ok := want[a.Local]; ok && plen == a.Prefixlen {
			if a.Tentative {
				t.Errorf("%s is tentative", a.Local)
			}
			delete(want, a.Local)
		}
	}
	if len(want) != 0 {
		t.Errorf("missing addresses %v on %s: %+v", want, tunName, tun.AddrInfo)
	}
	for _, family := range []string{"-4", "-6"} {
		rs := routes(t, pid, family)
		if !slices.ContainsFunc(rs, func(r ipRoute) bool { return r.Dst == "default" && r.Dev == tunName }) {
			t.Errorf("no %s default route via %s: %+v", family, tunName, rs)
		}
	}
}

// TestOpenTunDataPath sends a datagram from inside the namespace, to each
// family's default route, and expects it on the fd with the jail's address
// as its source.
func TestOpenTunDataPath(t *testing.T) {
	needRoot(t)
	python := testenv.NeedTool(t, "python3")
	ns, pid := newNetns(t)
	fd, err := openTun(ns, testMTU)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	const send = `import socket, sys
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"crucible", (sys.argv[1], 53))`
	for _, c := range []struct {
		dst   string
		match func(p []byte) bool
	}{
		{"198.18.0.9", func(p []byte) bool {
			ihl := int(p[0]&0xf) * 4
			return len(p) >= ihl+8 && p[0]>>4 == 4 && p[9] == unix.IPPROTO_UDP &&
				bytes.Equal(p[12:16], Local4.AsSlice()) && bytes.Equal(p[16:20], []byte{198, 18, 0, 9}) &&
				p[ihl+2] == 0 && p[ihl+3] == 53 && bytes.HasSuffix(p, []byte("crucible"))
		}},
		{"fd63:7275:6369::9", func(p []byte) bool {
			dst := Synthetic6.Addr().As16()
			dst[15] = 9
			return len(p) >= 48 && p[0]>>4 == 6 && p[6] == unix.IPPROTO_UDP &&
				bytes.Equal(p[8:24], Local6.AsSlice()) && bytes.Equal(p[24:40], dst[:]) &&
				p[42] == 0 && p[43] == 53 && bytes.HasSuffix(p, []byte("crucible"))
		}},
	} {
		inNetns(t, pid, python, "-c", send, c.dst)
		if !awaitPacket(t, fd, c.match) {
			t.Errorf("the datagram to %s never reached the fd", c.dst)
		}
	}
}

// awaitPacket reads packets from fd for up to 2s, until one matches.
func awaitPacket(t *testing.T, fd int, match func([]byte) bool) bool {
	t.Helper()
	buf := make([]byte, testMTU)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, int(time.Until(deadline).Milliseconds())+1); err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		n, err := unix.Read(fd, buf)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && match(buf[:n]) {
			return true
		}
	}
	return false
}

func TestOpenTunErrors(t *testing.T) {
	needRoot(t)
	ns, pid := newNetns(t)
	closed, err := os.Open("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	fds := openFDs(t)

	for _, c := range []struct {
		name  string
		netns *os.File
		mtu   uint32
		want  string
	}{
		{"closed file", closed, testMTU, "entering the jail's network namespace"},
		{"nil file", nil, testMTU, "entering the jail's network namespace"},
		{"not a namespace", devNull, testMTU, "entering the jail's network namespace: invalid argument"},
		// Fails after the tun device exists: it must go again.
		{"MTU too small", ns, 1, "setting the MTU of tun0: invalid argument"},
	} {
		fd, err := openTun(c.netns, c.mtu)
		if err == nil {
			unix.Close(fd)
			t.Errorf("%s: no error", c.name)
			continue
		}
		if fd != -1 || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "/proc") {
			t.Errorf("%s: fd %d, error %q, want one about %q", c.name, fd, err, c.want)
		}
		checkThreads(t)
	}
	if n := openFDs(t); n != fds {
		t.Errorf("%d fds open, was %d", n, fds)
	}
	if _, ok := links(t, pid)[tunName]; ok {
		t.Errorf("%s left behind after a failure", tunName)
	}

	// The namespace is still usable, and a second tun0 is refused.
	fd, err := openTun(ns, testMTU)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	fd2, err := openTun(ns, testMTU)
	if err == nil {
		unix.Close(fd2)
		t.Fatal("a second tun0 in the same namespace")
	}
	if !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "creating tun0") {
		t.Errorf("second tun0: %v, want EBUSY from creating it", err)
	}
	checkThreads(t)
}

func TestAckIn(t *testing.T) {
	msg := func(typ uint16, seq uint32, body ...byte) []byte {
		b := ne.AppendUint32(nil, uint32(unix.SizeofNlMsghdr+len(body)))
		b = ne.AppendUint16(b, typ)
		b = ne.AppendUint16(b, 0)
		b = ne.AppendUint32(b, seq)
		b = ne.AppendUint32(b, 1234)
		return append(b, body...)
	}
	errno := func(e int32) []byte { return ne.AppendUint32(nil, uint32(e)) }
	for _, c := range []struct {
		name string
		b    []byte
		done bool
		err  error
	}{
		{"ack", msg(unix.NLMSG_ERROR, 7, errno(0)...), true, nil},
		{"error", msg(unix.NLMSG_ERROR, 7, errno(-int32(unix.EEXIST))...), true, unix.EEXIST},
		{"other seq", msg(unix.NLMSG_ERROR, 6, errno(0)...), false, nil},
		{"after another message", append(msg(unix.RTM_NEWLINK, 7, 1, 2, 3, 4), msg(unix.NLMSG_ERROR, 7, errno(0)...)...), true, nil},
		{"short", msg(unix.NLMSG_ERROR, 7), true, errors.New("malformed netlink reply")},
		{"length below the header", append(ne.AppendUint32(nil, 8), make([]byte, 12)...), true, errors.New("malformed netlink reply")},
		{"length past the end", append(ne.AppendUint32(nil, 64), make([]byte, 12)...), true, errors.New("malformed netlink reply")},
		{"truncated header", ne.AppendUint32(nil, 3), false, nil},
		{"empty", nil, false, nil},
	} {
		done, err := ackIn(c.b, 7)
		if done != c.done || fmt.Sprint(err) != fmt.Sprint(c.err) {
			t.Errorf("%s: %v %v, want %v %v", c.name, done, err, c.done, c.err)
		}
	}
}

// BenchmarkOpenTun reports the median time of openTun, each call in the
// same namespace after the previous tun0 is closed.
func BenchmarkOpenTun(b *testing.B) {
	needRoot(b)
	ns, _ := newNetns(b)
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		fd, err := openTun(ns, testMTU)
		times = append(times, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		// Not persistent, so that the next openTun can create tun0 again.
		_ = unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 0)
		unix.Close(fd)
		b.StartTimer()
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "median-µs")
}
