package egress

// Secrets on the wire, attacked: the proxy with real TLS both ways on
// loopback. The upstream is a TLS server whose certificates a test CA
// signs (the proxy's Roots); it records every byte it receives and echoes
// the real value back in every form it may take. The jail's side is a TLS
// client that trusts the sandbox's CA.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/policy/netpolicy"
	"github.com/cruciblehq/crucible/secrets"
)

const (
	// svc receives secret A; other receives none (its TLS passes through);
	// plain is served over plain HTTP.
	other = "other.test"
	// The secrets' real values: '/', '+' and '=' must be percent-encoded
	// in a URL, and make the base64 forms differ by alphabet.
	valueA = "sk-live-Abc/123+xyz=Q"
	valueB = "tok_B-0987654321zz"
)

// upstream is a loopback TLS server that records what it receives.
type upstream struct {
	ln   net.Listener
	port uint16
	// cert picks the certificate shown for a server name.
	cert func(name string) (*tls.Certificate, error)
	// respond answers one request whose body it was given.
	respond func(w io.Writer, req *http.Request, body []byte)
	// end: after each answer, the connection ends, with a TLS
	// close_notify if clean.
	end, clean bool
	quiet      bool // record nothing (benchmarks)

	mu       sync.Mutex
	accepted int    // TCP connections
	got      []byte // every byte received after a handshake, all connections
	reqs     []seenReq
}

type seenReq struct {
	method, uri string
	header      http.Header
	body        []byte
}

func (u *upstream) serve(c net.Conn, tlsOn bool) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(testDeadline))
	conn := c
	if tlsOn {
		tc := tls.Server(c, &tls.Config{
			GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return u.cert(h.ServerName) },
			NextProtos:     []string{"h2", "http/1.1"},
		})
		if tc.Handshake() != nil {
			return
		}
		conn = tc
	}
	br := bufio.NewReader(io.TeeReader(conn, recordTo{u}))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		u.mu.Lock()
		if !u.quiet {
			u.reqs = append(u.reqs, seenReq{req.Method, req.RequestURI, req.Header, body})
		}
		respond, end, clean := u.respond, u.end, u.clean
		u.mu.Unlock()
		bw := bufio.NewWriter(conn)
		respond(bw, req, body)
		if bw.Flush() != nil {
			return
		}
		if end && clean {
			conn.Close()
		}
		if end {
			return
		}
	}
}

type recordTo struct{ u *upstream }

func (r recordTo) Write(b []byte) (int, error) {
	r.u.mu.Lock()
	if !r.u.quiet {
		r.u.got = append(r.u.got, b...)
	}
	r.u.mu.Unlock()
	return len(b), nil
}

// seen returns what the upstream received so far, and the requests.
func (u *upstream) seen() ([]byte, []seenReq) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.got), slices.Clone(u.reqs)
}

func (u *upstream) connections() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.accepted
}

type secretFix struct {
	p     *proxy
	rec   *recorder
	set   *secrets.Set
	ca    *CA            // the sandbox's
	trust *x509.CertPool // what the jail trusts: the sandbox's CA and the test CA
	up    *upstream      // TLS
	plain *upstream      // plain HTTP
}

// newSecretFix starts the upstreams and a proxy with secrets A (for svc)
// and B (for no host), svc and other allowed on the TLS upstream's port,
// plain on the plain one's; all three pinned to 127.0.0.1.
func newSecretFix(t testing.TB, lim Limits) *secretFix {
	t.Helper()
	testCA, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	set, err := secrets.New(map[string][]byte{"A": []byte(valueA), "B": []byte(valueB)})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	f := &secretFix{set: set, ca: ca, rec: &recorder{}, trust: x509.NewCertPool()}
	f.trust.AppendCertsFromPEM(ca.PEM())
	f.trust.AppendCertsFromPEM(testCA.PEM())
	f.up = startUpstream(t, true)
	f.up.cert = testCA.leaf
	f.plain = startUpstream(t, false)
	for _, u := range []*upstream{f.up, f.plain} {
		u.respond = f.echo
	}
	pol, err := netpolicy.Compile(netpolicy.Rules{
		Allow: []string{fmt.Sprintf("%s:%d", svc, f.up.port), fmt.Sprintf("%s:%d", other, f.up.port),
			fmt.Sprintf("plain.test:%d", f.plain.port)},
		Hosts: map[string]netip.Addr{svc: netip.MustParseAddr("127.0.0.1"), other: netip.MustParseAddr("127.0.0.1"),
			"plain.test": netip.MustParseAddr("127.0.0.1")},
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(testCA.PEM())
	f.p = newProxy(&Options{Policy: pol, Report: f.rec.report, Limits: lim, Secrets: &Secrets{
		Set: set, CA: ca, Roots: roots,
		For: func(name string, port uint16) []string {
			if name == svc && port == f.up.port {
				return []string{"A"}
			}
			return nil
		},
	}})
	t.Cleanup(f.p.shutdown)
	return f
}

func startUpstream(t testing.TB, tlsOn bool) *upstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	u := &upstream{ln: ln, port: netip.MustParseAddrPort(ln.Addr().String()).Port()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.accepted++
			u.mu.Unlock()
			go u.serve(c, tlsOn)
		}
	}()
	return u
}

func (f *secretFix) ph(name string) string {
	p, _ := f.set.Placeholder(name)
	return p
}

// open hands the proxy a connection from the jail to name on the TLS
// upstream's port (or the plain one's), and returns the jail's end.
func (f *secretFix) open(t testing.TB, name string, plain bool) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	jail, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jail.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if !f.p.begin() || !f.p.track(c) {
		t.Fatal("the proxy is shut down")
	}
	port := f.up.port
	if plain {
		port = f.plain.port
	}
	go func() {
		defer f.p.wg.Done()
		defer f.p.untrack(c)
		dst := netip.AddrPortFrom(netip.MustParseAddr("198.18.0.2"), port)
		f.p.serve(c, func() { _ = c.(*net.TCPConn).SetLinger(0); c.Close() }, name, dst)
	}()
	_ = jail.SetDeadline(time.Now().Add(testDeadline))
	return jail
}

// dialTLS is open with the jail's TLS on top, offering protos.
func (f *secretFix) dialTLS(t testing.TB, name string, protos ...string) (*tls.Conn, error) {
	t.Helper()
	tc := tls.Client(f.open(t, name, false), &tls.Config{ServerName: name, RootCAs: f.trust, NextProtos: protos})
	return tc, tc.Handshake()
}

// jailConn records every byte the jail receives.
type jailConn struct {
	net.Conn
	mu  sync.Mutex
	got []byte
}

func (c *jailConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.got = append(c.got, b[:n]...)
	c.mu.Unlock()
	return n, err
}

// forms is a text holding v in every form a server may echo it: the jail
// must get forms(placeholder) for forms(value), byte for byte.
func forms(v []byte) []byte {
	var b bytes.Buffer
	b.WriteString("verbatim:")
	b.Write(v)
	// Inside a longer base64 text, at each alignment; the bytes before
	// show the alphabet ('+/' or '-_'), as a real text's would.
	for align := range 3 {
		in := slices.Concat([]byte("\xfb\xff\xbf"), bytes.Repeat([]byte{'x'}, align), v, []byte("tail!"))
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			b.WriteString(" b64:")
			b.WriteString(enc.EncodeToString(in))
		}
	}
	b.WriteString(" pct:")
	for _, c := range v {
		fmt.Fprintf(&b, "%%%02X", c)
	}
	b.WriteString(" hex:" + hex.EncodeToString(v))
	b.WriteString(" HEX:" + strings.ToUpper(hex.EncodeToString(v)))
	j, _ := json.Marshal(string(v))
	b.WriteString(" json:")
	b.Write(j)
	return b.Bytes()
}

// deep is v's forms in the middle of a 1 MiB body.
func deep(v []byte) []byte {
	fill := bytes.Repeat([]byte("lorem ipsum "), (1<<20)/24)
	return slices.Concat(fill, forms(v), fill)
}

// echo answers with valueA in every form: in the status line and the head,
// and deep in a 1 MiB chunked body cut so that the forms straddle chunks.
func (f *secretFix) echo(w io.Writer, req *http.Request, _ []byte) {
	body := deep([]byte(valueA))
	fmt.Fprintf(w, "HTTP/1.1 200 Fine %s\r\nX-Echo: %s\r\nX-Echo-B64: %s\r\nX-Echo-Query: %s\r\nTransfer-Encoding: chunked\r\n\r\n",
		valueA, valueA, base64.StdEncoding.EncodeToString([]byte(valueA)), url.QueryEscape(valueA))
	for i, n := 0, 1; i < len(body); i, n = i+n, (n*7+5)%4099+1 {
		n = min(n, len(body)-i)
		fmt.Fprintf(w, "%x\r\n%s\r\n", n, body[i:i+n])
		if bw, ok := w.(*bufio.Writer); ok && n < 64 {
			_ = bw.Flush() // small chunks in TLS records of their own
		}
	}
	fmt.Fprint(w, "0\r\n\r\n")
}

// unescapesTo reports whether the percent-encoded s decodes to want: the
// swaps percent-encode as they see fit.
func unescapesTo(s, want string) bool {
	got, err := url.QueryUnescape(s)
	return err == nil && got == want
}

// leaks reports any form of a real value in b.
func (f *secretFix) leaks(b []byte) []string {
	_, u := f.set.Reverse(b)
	return u.Replaced
}

// find returns the events of kind, allowed or refused.
func find(events []Event, kind string, allowed bool) []Event {
	var out []Event
	for _, e := range events {
		if e.Kind == kind && e.Allowed == allowed {
			out = append(out, e)
		}
	}
	return out
}

// TestSecretSwapped: the jail sends A's placeholder in the URL, a header
// and deep in a 1 MiB chunked body cut inside the placeholder; the host,
// which may receive A, gets the value in each place and never the
// placeholder. The host echoes the value in every form; the jail gets
// exactly the same text with the placeholder, and no form of the value.
func TestSecretSwapped(t *testing.T) {
	f := newSecretFix(t, Limits{})
	tc, err := f.dialTLS(t, svc, "h2", "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	jc := &jailConn{Conn: tc}
	phA := f.ph("A")
	fill := strings.Repeat("lorem ipsum ", (1<<19)/12)
	fmt.Fprintf(tc, "POST /v1/x?key=%s&n=1 HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\nAccept-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
		phA, svc, f.up.port, phA)
	for _, part := range []string{fill + phA[:5], phA[5:] + fill} {
		fmt.Fprintf(tc, "%x\r\n%s\r\n", len(part), part)
	}
	fmt.Fprint(tc, "0\r\n\r\n")
	// The same again, with a length: one connection, two requests.
	body := fill + phA + "!"
	fmt.Fprintf(tc, "PUT /%s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", phA, svc, len(body), body)

	br := bufio.NewReader(jc)
	for range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != "200 Fine "+phA || resp.Header.Get("X-Echo") != phA ||
			resp.Header.Get("X-Echo-B64") != base64.StdEncoding.EncodeToString([]byte(phA)) ||
			!unescapesTo(resp.Header.Get("X-Echo-Query"), phA) {
			t.Errorf("the jail got the head %q %v", resp.Status, resp.Header)
		}
		if want := deep([]byte(phA)); !bytes.Equal(got, want) {
			t.Errorf("the jail got a body of %d bytes that differs from the placeholder's %d", len(got), len(want))
		}
	}
	if l := f.leaks(jc.got); l != nil {
		t.Errorf("the jail received a form of %v", l)
	}
	raw, reqs := f.up.seen()
	if bytes.Contains(raw, []byte(phA)) {
		t.Error("the host received A's placeholder")
	}
	if len(reqs) != 2 {
		t.Fatalf("the host got %d requests, want 2", len(reqs))
	}
	r := reqs[0]
	if q, _ := url.ParseQuery(strings.SplitN(r.uri, "?", 2)[1]); q.Get("key") != valueA {
		t.Errorf("the host's target %q, want the key %q", r.uri, valueA)
	}
	if r.header.Get("Authorization") != "Bearer "+valueA {
		t.Errorf("the host's Authorization %q", r.header.Get("Authorization"))
	}
	if r.header.Get("Accept-Encoding") != "identity" {
		t.Errorf("the host was asked for Accept-Encoding %q, want identity", r.header.Get("Accept-Encoding"))
	}
	if want := fill + valueA + fill; string(r.body) != want {
		t.Errorf("the host's body (%d bytes) is not the body with A's value (%d)", len(r.body), len(want))
	}
	if r := reqs[1]; !unescapesTo(r.uri[1:], valueA) || string(r.body) != fill+valueA+"!" {
		t.Errorf("the second request: target %q, body of %d bytes", r.uri, len(r.body))
	}
	// The receipt: one event per request and part A went in.
	var parts []string
	for _, e := range find(f.rec.take(), KindSecret, true) {
		if !slices.Equal(e.Secrets, []string{"A"}) || e.Name != svc {
			t.Errorf("substitution event %+v, want A to %s", e, svc)
		}
		parts = append(parts, e.Method+" "+e.Where)
	}
	slices.Sort(parts)
	if want := []string{"POST body", "POST header", "POST query", "PUT body", "PUT path"}; !slices.Equal(parts, want) {
		t.Errorf("substitutions %q, want %q", parts, want)
	}
}

// TestSecretLaundering: the attack sends B's placeholder to svc, which may
// receive only A, and A's placeholder to other, which may receive nothing
// (its TLS passes through). Each host gets the placeholder as it was,
// never a value, and the first is recorded as a violation naming B.
func TestSecretLaundering(t *testing.T) {
	f := newSecretFix(t, Limits{})
	phA, phB := f.ph("A"), f.ph("B")
	for _, tc := range []struct{ name, ph string }{{svc, phB}, {other, phA}} {
		c, err := f.dialTLS(t, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /?t=%s HTTP/1.1\r\nHost: %s\r\nX-Token: %s\r\nContent-Length: %d\r\n\r\n%s", tc.ph, tc.name, tc.ph, len(tc.ph), tc.ph)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	raw, reqs := f.up.seen()
	if l := f.leaks(raw); l != nil {
		t.Errorf("a host received a form of %v", l)
	}
	for i, ph := range []string{phB, phA} {
		r := reqs[i]
		if r.uri != "/?t="+ph || r.header.Get("X-Token") != ph || string(r.body) != ph {
			t.Errorf("request %d reached the host changed: %q %v %q", i, r.uri, r.header, r.body)
		}
	}
	ev := find(f.rec.take(), KindSecret, false)
	if len(ev) != 1 || !slices.Equal(ev[0].Secrets, []string{"B"}) || !strings.Contains(ev[0].Reason, "B") ||
		strings.Contains(ev[0].Reason, valueB) {
		t.Errorf("violations %+v, want one naming B", ev)
	}
}

// TestSecretCleartext: a placeholder over plain HTTP, in the target, a
// header or the body, is refused with a 403 and a violation, and the host
// receives nothing, not even a connection.
func TestSecretCleartext(t *testing.T) {
	f := newSecretFix(t, Limits{})
	ph := f.ph("A")
	for _, req := range []string{
		"GET /?k=" + ph + " HTTP/1.1\r\nHost: plain.test\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: plain.test\r\nAuthorization: Bearer " + ph + "\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: plain.test\r\nContent-Length: 28\r\n\r\n" + base64.StdEncoding.EncodeToString([]byte(ph)),
		"POST / HTTP/1.1\r\nHost: plain.test\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(ph)+2, "x="+ph),
	} {
		c := f.open(t, "plain.test", true)
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "plain HTTP") {
			t.Errorf("%q: %s %q", req, resp.Status, b)
		}
	}
	if n := f.plain.connections(); n != 0 {
		t.Errorf("the host got %d connections", n)
	}
	ev := find(f.rec.take(), KindSecret, false)
	if len(ev) != 4 || !slices.Equal(ev[0].Secrets, []string{"A"}) {
		t.Errorf("violations %+v, want 4 naming A", ev)
	}
	// Without a placeholder, plain HTTP goes through.
	c := f.open(t, "plain.test", true)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: plain.test\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
		t.Errorf("a plain request without a placeholder: %v %v", resp, err)
	}
}

// TestSecretCleartextLate: a plain HTTP body that shows the placeholder
// only after much of it went out is cut off before the placeholder: the
// host never receives it, and the violation is recorded.
func TestSecretCleartextLate(t *testing.T) {
	f := newSecretFix(t, Limits{})
	ph := f.ph("A")
	f.plain.respond = func(w io.Writer, _ *http.Request, _ []byte) {
		fmt.Fprint(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}
	c := f.open(t, "plain.test", true)
	head := 256 << 10
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: plain.test\r\nContent-Length: %d\r\n\r\n", head+len(ph))
	if _, err := c.Write(bytes.Repeat([]byte("a"), head)); err != nil {
		t.Fatal(err)
	}
	// Wait until the host has some of it: the placeholder comes later.
	for deadline := time.Now().Add(testDeadline); ; {
		if raw, _ := f.plain.seen(); len(raw) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the host received nothing of the body")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, _ = io.WriteString(c, ph)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the jail got %s %q", resp.Status, b)
	}
	ev := waitEvents(t, f.rec, KindSecret, false, 1)
	if !slices.Equal(ev[0].Secrets, []string{"A"}) {
		t.Errorf("violation %+v", ev[0])
	}
	raw, reqs := f.plain.seen()
	if bytes.Contains(raw, []byte(ph)) || len(reqs) != 0 {
		t.Errorf("the host received the placeholder (%d requests)", len(reqs))
	}
}

// waitEvents waits for n events of kind (bounded), and returns them.
func waitEvents(t *testing.T, rec *recorder, kind string, allowed bool, n int) []Event {
	t.Helper()
	return find(rec.waitFor(t, kind, allowed, n), kind, allowed)
}

// TestSecretTrace: TRACE and TRACK, which echo the request, are refused on
// a host that receives secrets; the host gets nothing.
func TestSecretTrace(t *testing.T) {
	f := newSecretFix(t, Limits{})
	for _, m := range []string{"TRACE", "TRACK"} {
		c, err := f.dialTLS(t, svc)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "%s / HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\n\r\n", m, svc, f.ph("A"))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %s", m, resp.Status)
		}
	}
	if n := f.up.connections(); n != 0 {
		t.Errorf("the host got %d connections", n)
	}
	if ev := find(f.rec.take(), KindSecret, false); len(ev) != 2 {
		t.Errorf("violations %+v, want 2", ev)
	}
}

// TestSecretUpstreamUntrusted: a host whose certificate is signed by an
// authority the sandbox does not trust, or is for another name, receives
// no byte of the request; the jail gets a 502 saying why.
func TestSecretUpstreamUntrusted(t *testing.T) {
	stranger, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	f := newSecretFix(t, Limits{})
	testCA := f.up.cert
	for _, tc := range []struct {
		name string
		cert func(string) (*tls.Certificate, error)
		why  string
	}{
		{"untrusted", func(string) (*tls.Certificate, error) { return stranger.leaf(svc) }, "not signed by an authority"},
		{"wrong name", func(string) (*tls.Certificate, error) { return testCA("elsewhere.test") }, "not valid for " + svc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.up.mu.Lock()
			f.up.cert = tc.cert
			f.up.mu.Unlock()
			c, err := f.dialTLS(t, svc)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "GET /?k=%s HTTP/1.1\r\nHost: %s\r\n\r\n", f.ph("A"), svc)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), tc.why) || strings.Count(string(b), "\n") != 1 {
				t.Errorf("the jail got %s %q", resp.Status, b)
			}
			if raw, _ := f.up.seen(); len(raw) != 0 {
				t.Errorf("the host received %d bytes", len(raw))
			}
			if ev := find(f.rec.take(), KindSecret, false); len(ev) != 1 || !strings.Contains(ev[0].Reason, tc.why) {
				t.Errorf("violations %+v", ev)
			}
		})
	}
}

// TestSecretHostMismatch: a request inside svc's TLS whose Host names
// another allowed host is refused before anything is swapped or sent, on
// the first request and on a later one.
func TestSecretHostMismatch(t *testing.T) {
	f := newSecretFix(t, Limits{})
	ph := f.ph("A")
	c, err := f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /?k=%s HTTP/1.1\r\nHost: %s\r\n\r\n", ph, other)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the first request: %v %v", resp, err)
	}
	if n := f.up.connections(); n != 0 {
		t.Errorf("the host got %d connections", n)
	}
	// A good request first, then one for another host on the same
	// connection.
	c, err = f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", svc)
	if resp, err = http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	fmt.Fprintf(c, "GET /?k=%s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", ph, other, f.up.port)
	if resp, err = http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the second request: %v %v", resp, err)
	}
	raw, reqs := f.up.seen()
	if len(reqs) != 1 || bytes.Contains(raw, []byte(valueA)) || bytes.Contains(raw, []byte(url.QueryEscape(valueA))) {
		t.Errorf("the host got %d requests, or the value", len(reqs))
	}
	if ev := find(f.rec.take(), KindHostMismatch, false); len(ev) != 2 {
		t.Errorf("host mismatches %+v, want 2", ev)
	}
}

// TestSecretLeaf: the jail is shown a certificate for the name, which
// verifies against CA.PEM alone, and HTTP/1.1 whatever else it offers;
// a client that speaks only HTTP/2 is refused.
func TestSecretLeaf(t *testing.T) {
	f := newSecretFix(t, Limits{})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(f.ca.PEM())
	tc := tls.Client(f.open(t, svc, false), &tls.Config{ServerName: svc, RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	st := tc.ConnectionState()
	if st.NegotiatedProtocol != "http/1.1" {
		t.Errorf("ALPN chose %q", st.NegotiatedProtocol)
	}
	if _, err := st.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: svc}); err != nil {
		t.Error(err)
	}
	if _, err := f.dialTLS(t, svc, "h2"); err == nil {
		t.Error("a client that speaks only HTTP/2 was accepted")
	}
	// A client that does not trust the sandbox's CA fails, recorded.
	if err := tls.Client(f.open(t, svc, false), &tls.Config{ServerName: svc}).Handshake(); err == nil {
		t.Error("a client trusting only the system roots accepted the leaf")
	}
	if ev := waitEvents(t, f.rec, KindProtocol, false, 2); !strings.Contains(ev[0].Reason, "trust the sandbox's CA") {
		t.Errorf("handshake failure %+v", ev[0])
	}
}

// TestSecretUpgrade: after a WebSocket upgrade the bytes are still swapped
// both ways; an upgrade to another protocol (h2c, whose compressed headers
// the swap cannot read) is not asked of the host.
func TestSecretUpgrade(t *testing.T) {
	f := newSecretFix(t, Limits{})
	f.up.respond = func(w io.Writer, req *http.Request, _ []byte) {
		if req.Header.Get("Upgrade") != "websocket" {
			fmt.Fprint(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno")
			return
		}
		fmt.Fprintf(w, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\nvalue=%s", valueA)
	}
	f.up.end, f.up.clean = true, true
	c, err := f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n", svc)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("h2c: %v %v", resp, err)
	}
	c, err = f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n", svc)
	br = bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("websocket: %v %v", resp, err)
	}
	if b, _ := io.ReadAll(br); string(b) != "value="+f.ph("A") {
		t.Errorf("after the upgrade the jail got %q", b)
	}
	_, reqs := f.up.seen()
	if len(reqs) != 2 || reqs[0].header.Get("Upgrade") != "" || reqs[1].header.Get("Sec-WebSocket-Extensions") != "" {
		t.Errorf("the host was asked %v", reqs)
	}
}

// TestSecretCompressed: a host that answers compressed although asked
// for identity is refused: the body could hide a value from the scan.
func TestSecretCompressed(t *testing.T) {
	f := newSecretFix(t, Limits{})
	f.up.respond = func(w io.Writer, _ *http.Request, _ []byte) {
		fmt.Fprint(w, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd")
	}
	c, err := f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", svc)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("%v %v", resp, err)
	}
	if ev := find(f.rec.take(), KindSecret, false); len(ev) != 1 || !strings.Contains(ev[0].Reason, "gzip") {
		t.Errorf("violations %+v", ev)
	}
}

// TestSecretLimits: the byte limit and the idle timeout hold on a
// terminated connection.
func TestSecretLimits(t *testing.T) {
	t.Run("bytes out", func(t *testing.T) {
		f := newSecretFix(t, Limits{BytesOut: 64 << 10})
		c, err := f.dialTLS(t, svc)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", svc, 1<<20)
		go func() { _, _ = c.Write(make([]byte, 1<<20)) }()
		if _, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			t.Error("a response came back for a request over the limit")
		}
		if ev := waitEvents(t, f.rec, KindLimit, false, 1); !strings.Contains(ev[0].Reason, "bytes sent") {
			t.Errorf("limit %+v", ev[0])
		}
	})
	t.Run("idle", func(t *testing.T) {
		f := newSecretFix(t, Limits{IdleTimeout: 2 * time.Second})
		c, err := f.dialTLS(t, svc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("an idle connection was not closed")
		}
		if ev := waitEvents(t, f.rec, KindLimit, false, 1); !strings.Contains(ev[0].Reason, "no traffic") {
			t.Errorf("limit %+v", ev[0])
		}
	})
}

// FuzzSecretRelay: any body, with A's and B's placeholders spliced in and
// sent in fuzzed pieces through a terminated connection, reaches the host
// as Forward makes it (A swapped, B left), and the host's echo of what it
// got reaches the jail as the jail sent it: no value escapes, and no other
// byte changes.
func FuzzSecretRelay(f *testing.F) {
	f.Add([]byte("hello"), uint16(3), uint8(1))
	f.Add([]byte("a=&b=c%2F/+=="), uint16(0), uint8(7))
	f.Add(bytes.Repeat([]byte("QUJD"), 100), uint16(200), uint8(0))
	fx := newSecretFix(f, Limits{})
	fx.up.respond = func(w io.Writer, req *http.Request, body []byte) {
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	phA, phB := fx.ph("A"), fx.ph("B")
	f.Fuzz(func(t *testing.T, text []byte, at uint16, cut uint8) {
		text = text[:min(len(text), 4<<10)]
		i := min(int(at), len(text))
		body := slices.Concat(text[:i], []byte(phA), text[i:], []byte(phB), text[:i])
		c, err := fx.dialTLS(t, svc)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", svc, len(body))
		go func() {
			n := 1 + int(cut)
			for b := body; len(b) > 0; b = b[min(n, len(b)):] {
				if _, err := c.Write(b[:min(n, len(b))]); err != nil {
					return
				}
			}
		}()
		jc := &jailConn{Conn: c}
		resp, err := http.ReadResponse(bufio.NewReader(jc), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		_, reqs := fx.up.seen()
		sent := reqs[len(reqs)-1].body
		if want, _ := fx.set.Forward(body, []string{"A"}); !bytes.Equal(sent, want) {
			t.Fatalf("the host got %q, want %q", sent, want)
		}
		if _, u := fx.set.Forward(sent, nil); slices.Contains(u.Refused, "A") {
			t.Fatal("A's placeholder reached the host")
		}
		if l := fx.leaks(jc.got); l != nil {
			t.Fatalf("a form of %v reached the jail", l)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("the jail got %q, sent %q", got, body)
		}
	})
}

// TestSecretUntilClose: an answer whose end is the end of the connection
// reaches the jail swapped, and its TLS ends with a close_notify (without
// one, OpenSSL's clients take the answer for cut); after a cut answer, it
// ends without one.
func TestSecretUntilClose(t *testing.T) {
	for _, cut := range []bool{false, true} {
		t.Run(fmt.Sprint("cut=", cut), func(t *testing.T) {
			f := newSecretFix(t, Limits{})
			f.up.respond = func(w io.Writer, _ *http.Request, _ []byte) {
				if cut {
					fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nvalue=%s", valueA)
					return
				}
				fmt.Fprintf(w, "HTTP/1.0 200 OK\r\n\r\nvalue=%s", valueA)
			}
			f.up.end, f.up.clean = true, true
			// TLS 1.2 shows an alert as an alert record.
			raw := &jailConn{Conn: f.open(t, svc, false)}
			c := tls.Client(raw, &tls.Config{ServerName: svc, RootCAs: f.trust, MaxVersion: tls.VersionTLS12})
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", svc)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			if cut && (err == nil || f.leaks(raw.got) != nil) || !cut && (err != nil || string(b) != "value="+f.ph("A")) {
				t.Errorf("the jail got %q, %v", b, err)
			}
			if last := lastRecord(raw.got); cut == (last == recordAlert) {
				t.Errorf("the jail's TLS ended with a record of type %d", last)
			}
		})
	}
}

const recordAlert = 21

// lastRecord returns the type of the last whole TLS record in b.
func lastRecord(b []byte) byte {
	var typ byte
	for len(b) >= 5 {
		n := 5 + (int(b[3])<<8 | int(b[4]))
		if len(b) < n {
			break
		}
		typ, b = b[0], b[n:]
	}
	return typ
}
