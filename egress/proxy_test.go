package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/policy/netpolicy"
)

// The proxy on its own, with real TCP on loopback standing in for both the
// jail's side (which the stack would hand it) and the host's.

const svc = "svc.test"

type proxyFix struct {
	p    *proxy
	port uint16 // the upstream server's
	rec  *recorder
}

// testDeadline bounds every wait of these tests: long enough for a slow VM
// under the race detector, short enough that a relay that holds bytes back
// fails the test instead of hanging it.
const testDeadline = 30 * time.Second

// newProxyFix starts upstream on loopback and a proxy whose policy allows
// svc on its port, pinned to 127.0.0.1.
func newProxyFix(t testing.TB, h http.Handler, lim Limits) *proxyFix {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return proxyTo(t, srv.Listener.Addr(), lim)
}

// newRawFix is newProxyFix with an upstream that speaks raw bytes: serve
// runs on each connection the proxy opens, and decides what is sent when.
// It runs on its own goroutine: it reports through channels, not t.
func newRawFix(t testing.TB, serve func(net.Conn), lim Limits) *proxyFix {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(testDeadline))
				serve(c)
			}()
		}
	}()
	return proxyTo(t, ln.Addr(), lim)
}

func proxyTo(t testing.TB, upstream net.Addr, lim Limits) *proxyFix {
	t.Helper()
	port := netip.MustParseAddrPort(upstream.String()).Port()
	pol, err := netpolicy.Compile(netpolicy.Rules{
		Allow:        []string{fmt.Sprintf("%s:%d", svc, port)},
		Hosts:        map[string]netip.Addr{svc: netip.MustParseAddr("127.0.0.1")},
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	p := newProxy(&Options{Policy: pol, Report: rec.report, Limits: lim})
	t.Cleanup(p.shutdown)
	return &proxyFix{p: p, port: port, rec: rec}
}

// dial hands the proxy a new connection from "the jail" to svc, and returns
// the jail's end.
func (f *proxyFix) dial(t testing.TB) net.Conn {
	return f.dialWrap(t, nil)
}

// dialWrap is dial with the proxy's end of the connection wrapped, to watch
// what the proxy does with it.
func (f *proxyFix) dialWrap(t testing.TB, wrap func(net.Conn) net.Conn) net.Conn {
	t.Helper()
	jail, err := f.open(wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jail.Close() })
	return jail
}

// open is dial for any goroutine: it returns its error, and the caller
// closes the connection.
func (f *proxyFix) open(wrap func(net.Conn) net.Conn) (net.Conn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	jail, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, err
	}
	c, err := ln.Accept()
	if err != nil {
		jail.Close()
		return nil, err
	}
	if !f.p.begin() || !f.p.track(c) {
		jail.Close()
		return nil, errors.New("the proxy is shut down")
	}
	proxySide := c
	if wrap != nil {
		proxySide = wrap(c)
	}
	go func() {
		defer f.p.wg.Done()
		defer f.p.untrack(c)
		dst := netip.AddrPortFrom(netip.MustParseAddr("198.18.0.2"), f.port)
		f.p.serve(proxySide, func() { _ = c.(*net.TCPConn).SetLinger(0); c.Close() }, svc, dst)
	}()
	_ = jail.SetDeadline(time.Now().Add(testDeadline))
	return jail, nil
}

// TestProxyRelaysUnchanged: requests reach the host as the jail wrote them
// (no body invented for a GET, a POST's body whole, chunked or not), and
// several share one kept-alive connection.
func TestProxyRelaysUnchanged(t *testing.T) {
	type seen struct {
		method, te, ua, body string
		length               int64
	}
	var mu sync.Mutex
	var got []seen
	f := newProxyFix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, strings.Join(r.TransferEncoding, ","), r.Header.Get("User-Agent"), string(b), r.ContentLength})
		mu.Unlock()
		fmt.Fprintf(w, "%s %d", r.Method, len(b))
	}), Limits{})
	c := f.dial(t)
	host := fmt.Sprintf("%s:%d", svc, f.port)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nUser-Agent: x\r\n\r\nhello", host)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", host)
	br := bufio.NewReader(c)
	for _, want := range []string{"GET 0", "POST 5", "POST 3"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != want {
			t.Errorf("response %q, want %q", b, want)
		}
	}
	want := []seen{{"GET", "", "", "", 0}, {"POST", "", "x", "hello", 5}, {"POST", "chunked", "", "abc", -1}}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the host saw\n%v\nwant\n%v", got, want)
	}
}

// TestProxyStreams: a response the host sends in parts reaches the jail
// part by part; buffering must not hold an event back until the end.
func TestProxyStreams(t *testing.T) {
	release := make(chan struct{})
	f := newProxyFix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: two\n\n")
	}), Limits{})
	defer close(release)
	c := f.dial(t)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n", svc, f.port)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if line != "data: one\n" || err != nil {
		t.Errorf("first event: %q, %v", line, err)
	}
}

// TestProxyUpgrade: after a 101, bytes flow both ways as they are.
func TestProxyUpgrade(t *testing.T) {
	f := newProxyFix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		_ = brw.Flush()
		_, _ = io.Copy(conn, brw) // echo until the client half-closes
	}), Limits{})
	c := f.dial(t)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n", svc, f.port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(br); string(b) != "ping" {
		t.Errorf("echo %q", b)
	}
}

// TestProxyBytesOut: a request body past the execution's limit is cut off
// and reported once.
func TestProxyBytesOut(t *testing.T) {
	f := newProxyFix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}), Limits{BytesOut: 4096})
	c := f.dial(t)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: 100000\r\n\r\n", svc, f.port)
	go func() { _, _ = c.Write(make([]byte, 100000)) }()
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
		t.Error("a response came back for a request over the limit")
	}
	if n := f.events(KindLimit, "bytes sent"); n != 1 {
		t.Errorf("%d byte-limit events, want 1", n)
	}
}

// events counts the recorded events of kind whose reason says why.
func (f *proxyFix) events(kind, why string) int {
	var n int
	for _, e := range f.rec.take() {
		if e.Kind == kind && strings.Contains(e.Reason, why) {
			n++
		}
	}
	return n
}

// TestProxyShutdown: shutting down with a relay in flight ends it at once:
// both sides are closed and shutdown returns.
func TestProxyShutdown(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	f := newProxyFix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-block
	}), Limits{})
	c := f.dial(t)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n", svc, f.port)
	br := bufio.NewReader(c)
	if _, err := http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { f.p.shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown did not return")
	}
	if _, err := io.ReadAll(br); err != nil && !isClosed(err) {
		t.Errorf("the jail's side: %v", err)
	}
	if f.p.begin() {
		t.Error("a shut-down proxy took new work")
	}
}

func isClosed(err error) bool {
	return err == io.EOF || strings.Contains(err.Error(), "reset")
}
