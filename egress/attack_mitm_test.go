package egress

// The terminated path and the HTTP rules, attacked as hostile code in the
// jail would: request smuggling through the relay's parser, pipelining,
// Expect: 100-continue, method overrides in disguise, paths a server reads
// otherwise than the rules, upgrades that end judgment, TLS without a
// name, and responses that carry a value where the swap may not look.
// Each attack runs for real through the proxy (newRulesFix, newSecretFix)
// and asserts the safe outcome: a refused request reaches no host, and no
// form of a value reaches the jail.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"
)

// upstreamSaw returns the requests the TLS upstream received, once the
// relay had time to deliver any that were in flight: they must stay the
// same for a whole second (a slow machine delivers a leaked request late,
// and the test would then pass without having looked at it).
func upstreamSaw(f *secretFix) []seenReq {
	_, reqs := f.up.seen()
	stable := time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && time.Since(stable) < time.Second; {
		time.Sleep(100 * time.Millisecond)
		if _, again := f.up.seen(); len(again) != len(reqs) {
			reqs, stable = again, time.Now()
		}
	}
	return reqs
}

// landsOutside reports whether a request the upstream received acts,
// once a server decodes its path and resolves dot segments (as Go's
// ServeMux, nginx and most frameworks do), on a path outside /repos, or
// with a method the rules of newRulesFix refuse.
func landsOutside(r seenReq) bool {
	if r.method != "GET" && r.method != "POST" {
		return true
	}
	u, err := url.ParseRequestURI(r.uri)
	if err != nil {
		return true
	}
	p := path.Clean("/" + u.Path)
	return p != "/repos" && !strings.HasPrefix(p, "/repos/")
}

// A fragment is not part of a request target on the wire (RFC 9112), but
// Go's parser keeps a '#' in the path and the relay would re-encode it as
// %23, while a reader that stops at it judges another path: the host would
// resolve the dot segments after the %23 and act on a path no rule
// allowed, or on a _method hidden after it. A target with a '#' is refused.
func TestAttackFragmentPath(t *testing.T) {
	f := newRulesFix(t)
	for _, c := range []struct{ method, target string }{
		{"GET", "/repos/x#/../../admin"},
		{"GET", "/repos/x/y#/../../../admin?a=1"},
		{"POST", "/repos/x?a=1#&_method=DELETE"},
		{"GET", "https://" + other + "/repos/x#/../../admin"},
	} {
		tc, err := f.dialTLS(t, other, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		resps := exchange(t, tc, c.method+" "+c.target+" HTTP/1.1\r\nHost: "+other+"\r\nContent-Length: 0\r\n\r\n")
		if len(resps) != 1 || resps[0].StatusCode != http.StatusForbidden {
			t.Errorf("%q: not refused", c.target)
		}
		if reqs := upstreamSaw(f); len(reqs) != 0 {
			t.Errorf("%q: the host received %+v", c.target, reqs)
		}
		if ev := httpEvents(f); len(ev) != 1 || !strings.Contains(ev[0].Reason, "'#'") {
			t.Errorf("%q: violations %+v", c.target, ev)
		}
	}
}

// Smuggling through the relay's parser: whatever framing the jail sends,
// the host receives the relay's own serialization, so a request hidden in
// a body, a header fold or a chunk extension is either read by the relay
// (and judged) or dropped; B's placeholder hidden in them never reaches
// svc as a value.
func TestAttackSmuggling(t *testing.T) {
	for _, c := range []struct {
		name, req string
		judged    bool // the hidden DELETE is read as a request and refused
	}{
		{"CL and TE", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\nX: PHB\r\n\r\n", true},
		{"TE and CL", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", true},
		{"TE twice", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n0\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"TE xchunked", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nTransfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"TE with space", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"CL twice", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nContent-Length: 0\r\nContent-Length: 48\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"CL list", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nContent-Length: 0, 48\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"CL plus", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nContent-Length: +0\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"obs-fold TE", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"obs-fold override", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nX-HTTP-Method-Override: GET\r\n ,DELETE\r\nContent-Length: 0\r\n\r\n", true},
		{"bare LF", "POST /repos/x HTTP/1.1\nHost: {H}\nContent-Length: 0\n\nDELETE /repos/x HTTP/1.1\nHost: {H}\n\n", true},
		{"bare CR", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nX: a\rDELETE /repos/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", false},
		{"chunk extension", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nTransfer-Encoding: chunked\r\n\r\n1;x=PHB;y=\"\r\nDELETE /repos/x HTTP/1.1\r\n\"\r\nz\r\n0\r\n\r\n", false},
		{"chunk size junk", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nTransfer-Encoding: chunked\r\n\r\n1 x\r\nz\r\n0\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"trailer smuggle", "POST /repos/x HTTP/1.1\r\nHost: {H}\r\nTransfer-Encoding: chunked\r\nTrailer: X-B\r\n\r\n1\r\nz\r\n0\r\nX-B: PHB\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", true},
		{"HTTP/1.0 no Host", "DELETE /repos/x HTTP/1.0\r\n\r\n", false},
		{"CONNECT", "CONNECT {H}:443 HTTP/1.1\r\nHost: {H}\r\n\r\nDELETE /repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"absolute URI elsewhere", "DELETE https://evil.test/repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"absolute URI userinfo", "GET https://{H}@evil.test/repos/x HTTP/1.1\r\nHost: {H}\r\n\r\n", false},
		{"Host port", "GET /repos/x HTTP/1.1\r\nHost: {H}:1\r\n\r\n", false},
		{"Host twice", "GET /repos/x HTTP/1.1\r\nHost: {H}\r\nHost: evil.test\r\n\r\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newRulesFix(t)
			tc, err := f.dialTLS(t, svc, "http/1.1")
			if err != nil {
				t.Fatal(err)
			}
			jc := &jailConn{Conn: tc}
			req := strings.NewReplacer("{H}", svc, "PHB", f.ph("B")).Replace(c.req)
			if _, err := io.WriteString(jc, req); err != nil {
				t.Fatal(err)
			}
			_, _ = io.ReadAll(jc) // every answer, until the relay ends the connection
			raw := func() []byte { b, _ := f.up.seen(); return b }
			for _, r := range upstreamSaw(f) {
				if r.method != "POST" && r.method != "GET" || strings.Contains(r.uri, "evil") {
					t.Errorf("the host received %s %s", r.method, r.uri)
				}
				if vs := r.header.Values("X-Http-Method-Override"); len(vs) > 0 && !slicesEqual(vs, []string{"GET"}) {
					t.Errorf("the host received the override %q", vs)
				}
			}
			if bytes.Contains(raw(), []byte("DELETE")) {
				t.Errorf("the host received a hidden DELETE: %q", raw())
			}
			if bytes.Contains(raw(), []byte(valueB)) {
				t.Error("svc received B's value")
			}
			if l := f.leaks(jc.got); l != nil {
				t.Errorf("the jail received a form of %v", l)
			}
			if c.judged && len(httpEvents(f)) != 1 {
				t.Errorf("the hidden request was not judged: answered %q", jc.got)
			}
		})
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// Pipelined in one write: the refused second request, its body and the
// third after it never reach the host; the first does.
func TestAttackPipelined(t *testing.T) {
	f := newRulesFix(t)
	tc, err := f.dialTLS(t, svc, "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	h := "Host: " + svc + "\r\n"
	_, _ = io.WriteString(tc, "GET /repos/a HTTP/1.1\r\n"+h+"\r\n"+
		"DELETE /repos/b HTTP/1.1\r\n"+h+"Content-Length: 5\r\n\r\nBODY!"+
		"GET /repos/c HTTP/1.1\r\n"+h+"\r\n")
	br := bufio.NewReader(tc)
	var codes []int
	for range 3 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		_, _ = io.ReadAll(resp.Body)
		codes = append(codes, resp.StatusCode)
	}
	if len(codes) != 2 || codes[0] != 200 || codes[1] != 403 {
		t.Errorf("the jail got %v, want [200 403]", codes)
	}
	reqs := upstreamSaw(f)
	if len(reqs) != 1 || reqs[0].uri != "/repos/a" {
		t.Errorf("the host received %+v", reqs)
	}
	if raw, _ := f.up.seen(); bytes.Contains(raw, []byte("BODY!")) {
		t.Error("the refused request's body reached the host")
	}
	if ev := httpEvents(f); len(ev) != 1 || ev[0].Rule != "github: deny DELETE /**" {
		t.Errorf("events %+v", ev)
	}
}

// Expect: 100-continue on a refused request: the jail gets the 403, not a
// 100, and the body it sends anyway reaches no host.
func TestAttackExpectContinue(t *testing.T) {
	f := newRulesFix(t)
	for _, head := range []string{
		"POST /admin HTTP/1.1\r\nExpect: 100-continue\r\n",
		"POST /repos/x HTTP/1.1\r\nExpect: 100-continue\r\nX-HTTP-Method-Override: DELETE\r\n",
	} {
		tc, err := f.dialTLS(t, other, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(tc, head+"Host: "+other+"\r\nContent-Length: 9\r\n\r\n")
		br := bufio.NewReader(tc)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%q: %v %v", head, resp, err)
		}
		_, _ = io.WriteString(tc, "SECRETBOD")
		if n := len(httpEvents(f)); n != 1 {
			t.Errorf("%q: %d violations", head, n)
		}
	}
	if raw, reqs := f.up.seen(); len(reqs) != 0 || bytes.Contains(raw, []byte("SECRETBOD")) {
		t.Errorf("the host received %+v", reqs)
	}
}

// Method overrides in disguise: the header's name in another case or
// twice, or spelled with underscores, which CGI-style servers (Rack, PHP)
// read as the same header; a _method parameter encoded, in another case,
// spelled as PHP reads it (".method", " method", "_method[]"), after a
// ';' (a separator to older Rack and Python), or after a '#'. Each is
// judged: refused, with a violation, and the host gets nothing.
func TestAttackOverrideDisguised(t *testing.T) {
	for _, c := range []struct{ name, extra, query string }{
		{"lower case", "x-http-method-override: delete\r\n", ""},
		{"twice", "X-HTTP-Method-Override: GET\r\nX-HTTP-Method-Override: DELETE\r\n", ""},
		{"list", "X-HTTP-Method: GET, DELETE\r\n", ""},
		{"_method encoded", "", "?%5Fmethod=DELETE"},
		{"_METHOD", "", "?_METHOD=delete"},
		{"underscores", "X_HTTP_METHOD_OVERRIDE: DELETE\r\n", ""},
		{"underscores mixed", "x-method_override: DELETE\r\n", ""},
		{"php dot", "", "?.method=DELETE"},
		{"php space", "", "?+method=DELETE"},
		{"php space encoded", "", "?%20method=DELETE"},
		{"php array", "", "?_method[]=DELETE"},
		{"after #", "", "?a=1#&_method=DELETE"},
		{"after ;", "", "?a=1;_method=DELETE"},
	} {
		f := newRulesFix(t)
		tc, err := f.dialTLS(t, other, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		resps := exchange(t, tc, "POST /repos/x"+c.query+" HTTP/1.1\r\nHost: "+other+"\r\n"+c.extra+"Content-Length: 0\r\n\r\n")
		if len(resps) != 1 || resps[0].StatusCode != http.StatusForbidden {
			t.Errorf("%s: not refused", c.name)
		}
		if reqs := upstreamSaw(f); len(reqs) != 0 {
			t.Errorf("%s: the host received %+v", c.name, reqs)
		}
		if ev := httpEvents(f); len(ev) != 1 {
			t.Errorf("%s: violations %+v", c.name, ev)
		}
	}
}

// Paths a server may read otherwise: each either is refused or reaches the
// host as a path under /repos.
func TestAttackPaths(t *testing.T) {
	f := newRulesFix(t)
	for _, target := range []string{
		"/repos/%00/../../admin", "/repos/x%", "/repos/x%2", "/repos/%c0%ae%c0%ae/admin",
		"/repos/\xc0\xae\xc0\xae/admin", "/repos/\u2024\u2024/admin", "/repos/..;/admin", "/repos/x;/../../admin",
		"/repos\\..\\admin", "/repos/./../admin", "?", "/repos/..%252fadmin", "/repos/%2e%2E/admin",
		"/repos/.%2e/admin", "/repos/x/..", "/REPOS/x", "*", "repos/x", "http://" + other + "/repos/../admin",
		"https://" + other + "?/../admin", "/repos/x?/../../admin",
	} {
		tc, err := f.dialTLS(t, other, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		resps := exchange(t, tc, "GET "+target+" HTTP/1.1\r\nHost: "+other+"\r\n\r\n")
		ev := httpEvents(f)
		for _, r := range upstreamSaw(f) {
			if landsOutside(r) && r.uri != "/REPOS/x" {
				t.Errorf("%q reached the host as %q", target, r.uri)
			}
		}
		f.up.mu.Lock()
		f.up.reqs = nil
		f.up.mu.Unlock()
		if len(resps) == 1 && resps[0].StatusCode == http.StatusForbidden && len(ev) != 1 {
			t.Errorf("%q: refused with events %+v", target, ev)
		}
	}
}

// An upgrade ends judgment: the relay passes the bytes after a 101 as
// they are. A host that answers 101 without switching protocols (an
// endpoint that answers the status it is asked for, as httpbin's
// /status/101 does, or a proxy in front of it that does not) would then
// read the next bytes as requests that no rule judged. Only a 101 that
// completes the WebSocket handshake the request asked for switches; any
// other ends the connection, with a 502 and a violation.
func TestAttackUpgradeEndsJudgment(t *testing.T) {
	f := newRulesFix(t)
	f.up.respond = func(w io.Writer, req *http.Request, _ []byte) {
		switch req.URL.Path {
		case "/repos/status/101":
			fmt.Fprint(w, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		case "/repos/status/101a": // the accept of the sample key, whatever was asked
			fmt.Fprint(w, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
		default:
			fmt.Fprint(w, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
		}
	}
	const ws = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	for _, c := range []struct{ path, head string }{
		{"/repos/status/101", ""},
		{"/repos/status/101", ws},
		{"/repos/status/101a", ""},
		{"/repos/status/101a", "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"},
		{"/repos/status/101a", "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n"},
	} {
		tc, err := f.dialTLS(t, other, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(tc, "GET "+c.path+" HTTP/1.1\r\nHost: "+other+"\r\n"+c.head+"\r\n")
		br := bufio.NewReader(tc)
		if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusBadGateway {
			t.Errorf("%s %q: %v %v", c.path, c.head, resp, err)
		}
		_, _ = io.WriteString(tc, "DELETE /admin HTTP/1.1\r\nHost: "+other+"\r\n\r\n")
		_ = tc.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, _ = io.ReadAll(br)
		for _, r := range upstreamSaw(f) {
			if r.method == "DELETE" {
				t.Errorf("%s %q: DELETE /admin reached the host unjudged", c.path, c.head)
			}
		}
		if ev := find(f.rec.take(), KindProtocol, false); len(ev) != 1 || !strings.Contains(ev[0].Reason, "101") {
			t.Errorf("%s %q: violations %+v", c.path, c.head, ev)
		}
	}
}

// Content-Encoding in two header lines: the first says identity (or
// nothing), the second gzip. The response is gzip-encoded (RFC 9110 lists
// them in order), the swap cannot see into it, and the jail's client
// would decode it: every line and every coding is checked, and the
// response refused.
func TestAttackContentEncodingTwice(t *testing.T) {
	f := newSecretFix(t, Limits{})
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write([]byte(`{"authorization":"Bearer ` + valueA + `"}`))
	_ = zw.Close()
	for _, head := range []string{
		"Content-Encoding: identity\r\nContent-Encoding: gzip\r\n",
		"Content-Encoding: \r\nContent-Encoding: gzip\r\n",
		"Content-Encoding: gzip\r\n",
		"Content-Encoding: identity, gzip\r\n",
		"Content-Encoding: identity,,GZIP\r\n",
		"Content-Encoding: gzip\r\nContent-Encoding: identity\r\n",
	} {
		f.up.respond = func(w io.Writer, _ *http.Request, _ []byte) {
			fmt.Fprintf(w, "HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s", head, z.Len(), z.Bytes())
		}
		tc, err := f.dialTLS(t, svc)
		if err != nil {
			t.Fatal(err)
		}
		jc := &jailConn{Conn: tc}
		_, _ = fmt.Fprintf(jc, "GET /echo HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", svc, f.ph("A"))
		resp, err := http.ReadResponse(bufio.NewReader(jc), nil)
		if err != nil {
			t.Fatalf("%q: %v", head, err)
		}
		_, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("%q: %d", head, resp.StatusCode)
		}
		if bytes.Contains(jc.got, z.Bytes()[:16]) {
			t.Errorf("%q: the jail got the compressed body", head)
		}
		if ev := find(f.rec.take(), KindSecret, false); len(ev) != 1 || !strings.Contains(ev[0].Reason, "Content-Encoding") {
			t.Errorf("%q: violations %+v", head, ev)
		}
	}
}

// The value in a 1xx's head, a trailer and a chunk extension: the jail
// gets the placeholder or nothing, never the value.
func TestAttackResponseCorners(t *testing.T) {
	f := newSecretFix(t, Limits{})
	f.up.respond = func(w io.Writer, _ *http.Request, _ []byte) {
		fmt.Fprintf(w, "HTTP/1.1 103 Early %s\r\nLink: </%s>; rel=preload\r\n\r\n", valueA, valueA)
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Tok\r\nX-Fold: a\r\n %s\r\n\r\n", valueA)
		fmt.Fprintf(w, "4;tok=%s\r\nbody\r\n0;tok=%s\r\nX-Tok: %s\r\n\r\n", valueA, valueA, valueA)
	}
	tc, err := f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	jc := &jailConn{Conn: tc}
	_, _ = fmt.Fprintf(jc, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", svc)
	_, _ = io.ReadAll(jc)
	if l := f.leaks(jc.got); l != nil {
		t.Errorf("the jail received a form of %v: %q", l, jc.got)
	}
	if !bytes.Contains(jc.got, []byte(f.ph("A"))) {
		t.Errorf("the jail got no placeholder at all: %q", jc.got)
	}
}

// TLS that hides what it is for: no server name, ALPN h2 only.
func TestAttackTLSHello(t *testing.T) {
	f := newRulesFix(t)
	c := tls.Client(f.open(t, svc, false), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the attack: no SNI
	if err := c.Handshake(); err == nil {
		t.Error("a ClientHello without SNI was served")
	}
	if ev := waitEvents(t, f.rec, KindSNIMismatch, false, 1); !strings.Contains(ev[0].Reason, "SNI") {
		t.Errorf("events %+v", ev)
	}
	if tc, err := f.dialTLS(t, svc, "h2"); err == nil {
		_, _ = io.WriteString(tc, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
		if _, err := tc.Read(make([]byte, 1)); err == nil && tc.ConnectionState().NegotiatedProtocol == "h2" {
			t.Error("h2 was negotiated with the jail")
		}
	}
	if n := f.up.connections(); n != 0 {
		t.Errorf("the host was connected to %d times", n)
	}
}

// An override in a request's trailer comes after the request was judged;
// a server that merges trailers into the head would act on it. Declared
// in Trailer, it is refused before anything goes out; sent undeclared
// after another declared trailer (Go's reader keeps both), it is dropped
// with every trailer, and the host gets the request without them.
func TestAttackOverrideInTrailer(t *testing.T) {
	f := newRulesFix(t)
	for _, c := range []struct {
		declare string
		refused bool
	}{
		{"X-HTTP-Method-Override", true},
		{"x_http_method", true},
		{"X-Other", false},
	} {
		tc, err := f.dialTLS(t, other, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		resps := exchange(t, tc, "POST /repos/x HTTP/1.1\r\nHost: "+other+"\r\nTransfer-Encoding: chunked\r\nTrailer: "+c.declare+"\r\n\r\n"+
			"1\r\nz\r\n0\r\nX-Other: a\r\nX-HTTP-Method-Override: DELETE\r\n\r\n")
		raw, reqs := f.up.seen()
		if bytes.Contains(bytes.ToLower(raw), []byte("override")) || bytes.Contains(raw, []byte("DELETE")) {
			t.Errorf("%s: the host received the override: %q", c.declare, raw)
		}
		ev := httpEvents(f)
		if c.refused {
			if len(resps) != 1 || resps[0].StatusCode != http.StatusForbidden || len(reqs) != 0 || len(ev) != 1 || !strings.Contains(ev[0].Reason, "trailer") {
				t.Errorf("%s: not refused: the host received %+v, violations %+v", c.declare, reqs, ev)
			}
			continue
		}
		if len(resps) != 1 || resps[0].StatusCode != http.StatusOK || len(reqs) != 1 || len(ev) != 0 {
			t.Errorf("%s: answered %v, the host received %+v, violations %+v", c.declare, resps, reqs, ev)
		}
		if bytes.Contains(raw, []byte("X-Other")) {
			t.Errorf("%s: a trailer reached the host: %q", c.declare, raw)
		}
		f.up.mu.Lock()
		f.up.reqs, f.up.got = nil, nil
		f.up.mu.Unlock()
	}
}

// A head without end, or of very many short headers: refused at the
// head's bound, never buffered whole, and nothing reaches the host.
func TestAttackHugeHead(t *testing.T) {
	for _, line := range []string{"X-Long: " + strings.Repeat("a", 1<<20) + "\r\n", strings.Repeat("X-A: b\r\n", 1<<17)} {
		f := newRulesFix(t)
		tc, err := f.dialTLS(t, other, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = io.WriteString(tc, "GET /repos/x HTTP/1.1\r\nHost: "+other+"\r\n"+line+"\r\n") }()
		if resp, err := http.ReadResponse(bufio.NewReader(tc), nil); err == nil && resp.StatusCode == http.StatusOK {
			t.Errorf("a %d-byte head was relayed", len(line))
		}
		if n := f.up.connections(); n != 0 {
			t.Errorf("the host was connected to %d times", n)
		}
		if ev := waitEvents(t, f.rec, KindProtocol, false, 1); len(ev) != 1 {
			t.Errorf("events %+v", ev)
		}
	}
}
