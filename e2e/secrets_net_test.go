package e2e

// Secrets, for real: curl, python3 and the embedded engine inside jails
// call a loopback TLS echo server (its certificate signed by a test CA,
// given as network.upstream_ca) with a placeholder, which the sandbox
// network swaps for the value on that server's own host only. Each attack
// asserts what the upstream received, what the jail saw, and the recorded
// violation; every test checks that the value appears in no output, no
// result and no audit line.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// otherName is a second pinned name, whose host has a secret of its own.
const otherName = "other.crucible.test"

// The secrets' values, as Crucible reads them from its environment.
const (
	tokenValue = "sk-live-7hX2b9QmZk4RtW1pLs8NvC3y"
	otherValue = "ghp_other0secret0value0123456789"
)

// secretFix is the network fixture plus the servers that secrets go to.
type secretFix struct {
	*netFix
	upstreamCA string // the test CA's certificate, a PEM file
	// Ports on 127.0.0.1: the echo server (a certificate for svc and
	// other, signed by the test CA), one whose certificate no one
	// trusts, one whose certificate names another host.
	echo, untrusted, wrongName int
	untrustedHits, wrongHits   atomic.Int64

	mu  sync.Mutex
	got map[string]string // path → the request as the echo server received it
}

func newSecretFix(t *testing.T) *secretFix {
	t.Helper()
	requireRoot(t)
	t.Setenv("CRUCIBLE_TEST_TOKEN", tokenValue)
	t.Setenv("CRUCIBLE_TEST_OTHER", otherValue)
	f := &secretFix{netFix: newNetFix(t), got: map[string]string{}}
	ca, caKey, caPEM := testCA(t)
	f.upstreamCA = filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(f.upstreamCA, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dump, _ := httputil.DumpRequest(r, true)
		f.mu.Lock()
		f.got[r.URL.Path] = string(dump)
		f.mu.Unlock()
		auth := r.Header.Get("Authorization")
		// The value back, as a careless server would: verbatim, in a
		// header and in base64.
		w.Header().Set("X-Echo", auth)
		fmt.Fprintf(w, "auth=%s\nb64=%s\n", auth, base64.StdEncoding.EncodeToString([]byte(auth)))
	})
	f.echo = serve(t, echo, &tls.Config{Certificates: []tls.Certificate{leafCert(t, ca, caKey, svcName, otherName)}})
	untrusted, _ := selfSigned(t, svcName)
	f.untrusted = serve(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { f.untrustedHits.Add(1) }),
		&tls.Config{Certificates: []tls.Certificate{untrusted}})
	f.wrongName = serve(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { f.wrongHits.Add(1) }),
		&tls.Config{Certificates: []tls.Certificate{leafCert(t, ca, caKey, "wrong.crucible.test")}})
	return f
}

// testCA is the upstreams' CA: its certificate, key and PEM.
func testCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "upstream test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// leafCert is a server certificate for names, signed by ca.
func leafCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// flags configure the secrets: TOKEN for svc on the echo server's port
// and the ports of the bad upstreams, allowed in headers, queries and
// bodies; OTHER for other's, in headers only (the default). The network
// allows, besides, svc's plain HTTP and pass-through TLS servers; the
// audit trail goes to audit.
// echoConfig is a config whose one allowed host is the echo server, by
// svcName, with the secret TOKEN for it (from CRUCIBLE_TEST_TOKEN) and
// upstream_ca at ca: for a crucible that runs where the fixture's own
// files are out of reach (as a user, in a container).
func (f *secretFix) echoConfig(ca string) string {
	return fmt.Sprintf(`network:
  allow: [%[1]s:%[2]d]
  hosts:
    %[1]s: 127.0.0.1
  allow_private: [127.0.0.0/8]
  upstream_ca: %[3]s
secrets:
  TOKEN:
    from: env:CRUCIBLE_TEST_TOKEN
    hosts: [%[1]s:%[2]d]
`, svcName, f.echo, ca)
}

func (f *secretFix) flags(t *testing.T, audit string) []string {
	t.Helper()
	flags := f.config(t, fmt.Sprintf(`network:
  allow: [%[1]s:%[3]d, %[1]s:%[4]d]
  hosts:
    %[1]s: 127.0.0.1
    %[2]s: 127.0.0.1
  allow_private: [127.0.0.0/8]
  resolver: %[5]s
  upstream_ca: %[6]s
secrets:
  OTHER:
    from: env:CRUCIBLE_TEST_OTHER
    hosts: [%[2]s:%[7]d]
  TOKEN:
    from: env:CRUCIBLE_TEST_TOKEN
    hosts: [%[1]s:%[7]d, %[1]s:%[8]d, %[1]s:%[9]d, %[1]s:%[10]d]
    in: [header, query, body]
`, svcName, otherName, f.http, f.tls, f.dns, f.upstreamCA, f.echo, f.untrusted, f.wrongName, f.closed))
	return append(flags, "--audit", audit)
}

// needCurlPython skips t without the clients the jail runs from the
// host's /usr.
func needCurlPython(t *testing.T) {
	t.Helper()
	for _, p := range []string{"/usr/bin/curl", "/usr/bin/python3"} {
		if _, err := os.Stat(p); err != nil {
			testenv.Missing(t, "needs "+p)
		}
	}
}

// received is the request the echo server got at path, "" if none.
func (f *secretFix) received(path string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[path]
}

// noValue fails t if a secret's value shows in the result or the audit
// trail, in any form a reader would recognise.
func noValue(t *testing.T, r *sandbox.Result, audit string) {
	t.Helper()
	res, _ := json.Marshal(r)
	trail, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{tokenValue, otherValue} {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), fmt.Sprintf("%x", v)} {
			if strings.Contains(string(res), form) {
				t.Errorf("the result holds a secret's value:\n%s", dump(r))
			}
			if strings.Contains(string(trail), form) {
				t.Errorf("the audit trail holds a secret's value:\n%s", trail)
			}
		}
	}
}

// placeholder is the placeholder the jail printed after "env: ".
func placeholder(t *testing.T, r *sandbox.Result) string {
	t.Helper()
	for line := range strings.Lines(r.Stdout) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "env: "); ok && len(p) == len(tokenValue) && p != tokenValue {
			return p
		}
	}
	t.Fatalf("no placeholder in the output:\n%s", dump(r))
	return ""
}

// The jail sees a placeholder, in its environment and nowhere a value;
// curl and python3, trusting the sandbox's CA through the system bundle
// and SSL_CERT_FILE, send it in a header, the URL and a body, and the
// secret's own host receives the value in its place; the value the host
// echoes comes back as the placeholder.
func TestSecretsReachTheirHost(t *testing.T) {
	needCurlPython(t)
	f := newSecretFix(t)
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	// The jail gets the value reversed, only to look for it in its files:
	// the sandbox never gives it the value.
	reversed := []rune(tokenValue)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	r := jailed(t, f.flags(t, audit), "/bin/sh", "-c", fmt.Sprintf(`set -e
echo "env: $TOKEN"
curl -sS -D - -H "Authorization: Bearer $TOKEN" "https://%[1]s:%[2]d/curl?t=$TOKEN" | tr -d '\r' | grep -iv '^date:'
/usr/bin/python3 -c 'import os, sys, urllib.request
t = os.environ["TOKEN"]
req = urllib.request.Request(sys.argv[1], data=("token=" + t).encode(), headers={"Authorization": "Bearer " + t})
print(urllib.request.urlopen(req, timeout=10).read().decode(), end="")' https://%[1]s:%[2]d/py
V=$(printf %%s "$1" | rev)
echo "files: $(grep -rlF -e "$V" /etc /crucible /tmp /workspace /proc/self/environ /proc/1/environ 2>/dev/null | tr '\n' ' ')"
`, svcName, f.echo), "sh", string(reversed))
	ph := placeholder(t, r)
	noValue(t, r, audit)
	if r.ExitCode != 0 || len(r.Violations) != 0 {
		t.Fatalf("the calls failed:\n%s", dump(r))
	}
	curl, py := f.received("/curl"), f.received("/py")
	for _, w := range []string{"Authorization: Bearer " + tokenValue, "t=" + tokenValue} {
		if !strings.Contains(curl, w) {
			t.Errorf("curl's request lacks %q:\n%s", w, curl)
		}
	}
	for _, w := range []string{"Authorization: Bearer " + tokenValue, "token=" + tokenValue} {
		if !strings.Contains(py, w) {
			t.Errorf("python's request lacks %q:\n%s", w, py)
		}
	}
	if strings.Contains(curl+py, ph) {
		t.Errorf("the host received the placeholder:\n%s\n%s", curl, py)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("Bearer " + ph))
	for _, w := range []string{"X-Echo: Bearer " + ph + "\n", "auth=Bearer " + ph + "\nb64=" + b64 + "\n", "files: \n"} {
		if strings.Count(r.Stdout, w) < 1 {
			t.Errorf("the jail's output lacks %q:\n%s", w, r.Stdout)
		}
	}
	trail, _ := os.ReadFile(audit)
	want := fmt.Sprintf(`"type":"secret","name":"%s","port":%d,"verdict":"allow"`, svcName, f.echo)
	if !strings.Contains(string(trail), want) || !strings.Contains(string(trail), `"secrets":["TOKEN"]`) {
		t.Errorf("the audit trail lacks %s with the secret's name:\n%s", want, trail)
	}
}

// Laundering: the placeholder of TOKEN sent to a host that has a secret of
// its own (OTHER), to a host without secrets (TLS passes through), over
// plain HTTP, and with TRACE. None of them gets the value.
func TestAttackSecretsLaundering(t *testing.T) {
	needCurlPython(t)
	f := newSecretFix(t)
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	r := jailSh(t, fmt.Sprintf(`echo "env: $TOKEN"
curl -sS -H "Authorization: Bearer $TOKEN" https://%[1]s:%[3]d/launder; echo "launder $?"
curl -sS -A "$TOKEN" --cacert %[6]s https://%[2]s:%[4]d/passthrough; echo "passthrough $?"
curl -sS -H "Authorization: Bearer $TOKEN" http://%[2]s:%[5]d/plain; echo " plain $?"
curl -sS -X TRACE https://%[2]s:%[3]d/trace; echo " trace $?"
`, otherName, svcName, f.echo, f.tls, f.http, f.ca), f.flags(t, audit)...)
	ph := placeholder(t, r)
	noValue(t, r, audit)
	// The other host: the placeholder left as it was, and recorded.
	if got := f.received("/launder"); got != "" && (strings.Contains(got, tokenValue) || !strings.Contains(got, "Bearer "+ph)) {
		t.Errorf("the other host received:\n%s", got)
	}
	if v := netViolation(r, "secret", otherName); v == nil || !strings.Contains(v.Reason, "TOKEN") {
		t.Errorf("no secret violation for %s:\n%s", otherName, dump(r))
	}
	// No secret: TLS passes through, the placeholder with it.
	if ua, _ := f.lastAgent.Load().(string); ua != ph || !strings.Contains(r.Stdout, "passthrough 0") {
		t.Errorf("the host without secrets got user agent %q, want the placeholder:\n%s", ua, dump(r))
	}
	// Plain HTTP: refused before a byte of it went out.
	if !strings.Contains(r.Stdout, "over plain HTTP") || f.hits.Load() != 1 {
		t.Errorf("plain HTTP with a placeholder: %d requests reached the host:\n%s", f.hits.Load(), dump(r))
	}
	if f.received("/trace") != "" || !strings.Contains(r.Stdout, "TRACE is refused") {
		t.Errorf("TRACE was not refused:\n%s", dump(r))
	}
	var plain, trace bool
	for _, v := range r.Violations {
		plain = plain || v.Kind == "secret" && strings.Contains(v.Reason, "plain HTTP") && strings.Contains(v.Reason, "TOKEN")
		trace = trace || v.Kind == "secret" && strings.Contains(v.Reason, "TRACE")
	}
	if !plain || !trace {
		t.Errorf("plain HTTP (%v) or TRACE (%v) not recorded:\n%s", plain, trace, dump(r))
	}
}

// Attack: laundering a secret through its own host. OTHER may go to other
// in a header only (the default); the code puts its placeholder in the
// path, the query and the body too, where the host would store it, and
// then reads it back. The host gets the value in the header and the
// placeholder elsewhere; each misplaced one is a violation naming the
// part; the receipt lists the header alone.
func TestAttackSecretsPlacement(t *testing.T) {
	needCurlPython(t)
	f := newSecretFix(t)
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	r := jailSh(t, fmt.Sprintf(`echo "other: $OTHER"
curl -sS -o /dev/null -H "Authorization: Bearer $OTHER" -d "body=$OTHER" "https://%[1]s:%[2]d/p/$OTHER?q=$OTHER"; echo "sent $?"
`, otherName, f.echo), f.flags(t, audit)...)
	noValue(t, r, audit)
	var ph string
	for line := range strings.Lines(r.Stdout) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "other: "); ok {
			ph = p
		}
	}
	got := f.received("/p/" + ph)
	if ph == "" || !strings.Contains(r.Stdout, "sent 0") || got == "" {
		t.Fatalf("the request did not go:\n%s", dump(r))
	}
	if !strings.Contains(got, "Authorization: Bearer "+otherValue) {
		t.Errorf("the header lacks the value:\n%s", got)
	}
	for _, w := range []string{"POST /p/" + ph + "?q=" + ph + " ", "body=" + ph} {
		if !strings.Contains(got, w) {
			t.Errorf("the host's request lacks %q, the placeholder as the code sent it:\n%s", w, got)
		}
	}
	var parts []string
	for _, v := range r.Violations {
		for _, p := range []string{"path", "query", "body"} {
			if v.Kind == "secret" && strings.Contains(v.Reason, "in the "+p+" of a request") && strings.Contains(v.Reason, "secrets.OTHER.in allows header") {
				parts = append(parts, p)
			}
		}
	}
	if strings.Join(parts, " ") != "path query body" {
		t.Errorf("violations for %q, want path, query and body:\n%s", parts, dump(r))
	}
	want := []sandbox.SecretUse{{Name: "OTHER", Host: otherName, Method: "POST", Path: "/p/" + ph, Where: "header", Count: 1}}
	if fmt.Sprint(r.Secrets) != fmt.Sprint(want) {
		t.Errorf("the receipt %+v, want %+v", r.Secrets, want)
	}
}

// An upstream that cannot prove it is the secret's host receives nothing:
// a certificate no one trusts, one for another name. An upstream that
// does not answer: its error says nothing of the value or the address.
func TestAttackSecretsUpstreamTLS(t *testing.T) {
	needCurlPython(t)
	f := newSecretFix(t)
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	r := jailSh(t, fmt.Sprintf(`echo "env: $TOKEN"
for p in %[2]d %[3]d %[4]d; do
  curl -sS --max-time 15 -H "Authorization: Bearer $TOKEN" https://%[1]s:$p/ 2>&1; echo " $p $?"
done
/usr/bin/python3 -c 'import os, sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(urllib.request.Request(sys.argv[1], headers={"Authorization": os.environ["TOKEN"]}), timeout=15)
except urllib.error.HTTPError as e:
    print("py", e.code, e.read().decode().strip())' https://%[1]s:%[2]d/
`, svcName, f.untrusted, f.wrongName, f.closed), f.flags(t, audit)...)
	placeholder(t, r)
	noValue(t, r, audit)
	if n, m := f.untrustedHits.Load(), f.wrongHits.Load(); n != 0 || m != 0 {
		t.Errorf("the untrusted upstream got %d requests, the wrong-name one %d", n, m)
	}
	for _, w := range []string{"not signed by an authority the sandbox trusts", "is not valid for " + svcName, "py 502"} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("the jail was not told %q:\n%s", w, dump(r))
		}
	}
	if strings.Contains(r.Stdout, "127.0.0.1") || !strings.Contains(r.Stdout, "could not connect to "+svcName+":"+strconv.Itoa(f.closed)+"\n") {
		t.Errorf("the unreachable upstream: an address, or no reason:\n%s", r.Stdout)
	}
	var untrusted, wrong bool
	for _, v := range r.Violations {
		untrusted = untrusted || v.Kind == "secret" && v.Port == uint16(f.untrusted)
		wrong = wrong || v.Kind == "secret" && v.Port == uint16(f.wrongName)
	}
	if !untrusted || !wrong {
		t.Errorf("the refused upstreams are not recorded:\n%s", dump(r))
	}
}

// The embedded engine: env.TOKEN is the placeholder, and fetch (Go's TLS,
// trusting SSL_CERT_FILE) gets the value to the host.
func TestSecretsJS(t *testing.T) {
	f := newSecretFix(t)
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	args := append([]string{"run", "--json"}, f.flags(t, audit)...)
	r := jsonRun(t, fmt.Sprintf(`const r = await fetch("https://%s:%d/js", { headers: { Authorization: "Bearer " + env.TOKEN } });
export default { token: env.TOKEN, echo: r.headers.get("x-echo") };`, svcName, f.echo), append(args, "-")...)
	noValue(t, r, audit)
	var out struct{ Token, Echo string }
	if err := json.Unmarshal(r.Result, &out); err != nil || r.ExitCode != 0 {
		t.Fatalf("result %s: %v\n%s", r.Result, err, dump(r))
	}
	if len(out.Token) != len(tokenValue) || out.Echo != "Bearer "+out.Token {
		t.Errorf("env.TOKEN %q, echoed %q", out.Token, out.Echo)
	}
	if got := f.received("/js"); !strings.Contains(got, "Authorization: Bearer "+tokenValue) {
		t.Errorf("the host received:\n%s", got)
	}
}

// The last line of defence: the operator bound the secret's own file into
// the jail by mistake, and the code prints it, in base64 too, returns it
// and throws it. What leaves has the placeholder instead, streamed or not.
func TestAttackSecretsRedacted(t *testing.T) {
	requireRoot(t)
	needCurlPython(t)
	dir := testenv.PublicDir(t)
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(tokenValue+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	flags := []string{"--ro", dir, "--audit", audit, "--secret", "TOKEN=file:" + file + "@api.example.com"}
	prog := fmt.Sprintf(`import base64, crucible, os, sys
v = open(%q).read().strip()
print("env:", os.environ["TOKEN"])
print(v, base64.b64encode(v.encode()).decode())
crucible.result = {"v": v}
if len(sys.argv) > 1: raise ValueError("leaked " + v)
`, file)
	args := append(append([]string{"run", "--json", "--lang", "py"}, flags...), "-")
	r := jsonRun(t, prog, args...)
	ph := placeholder(t, r)
	noValue(t, r, audit)
	if !strings.Contains(r.Stdout, ph+" "+base64.StdEncoding.EncodeToString([]byte(ph))) || string(r.Result) != `{"v":"`+ph+`"}` {
		t.Errorf("output or result not redacted to the placeholder:\n%s", dump(r))
	}
	r = jsonRun(t, strings.Replace(prog, "len(sys.argv) > 1", "True", 1), args...)
	ph = placeholder(t, r) // each execution has its own
	noValue(t, r, audit)
	if r.Error == nil || r.Error.Message != "leaked "+ph || !strings.Contains(r.Stderr, "leaked "+ph) {
		t.Errorf("the error not redacted to the placeholder:\n%s", dump(r))
	}
	// Streamed to the terminal, as it comes. (And without network.allow,
	// the jail has the sandbox network, for the secret's host.)
	code, stdout, stderr := run(t, "", append(append([]string{"exec"}, flags...), "--", "/bin/sh", "-c",
		"cat "+file+"; cat "+file+" >&2; grep -c 198.18.0.1 /etc/resolv.conf")...)
	if code != 0 || strings.Contains(stdout+stderr, tokenValue) || strings.Count(stdout+stderr, "\n") != 3 || !strings.HasSuffix(stdout, "\n1\n") {
		t.Errorf("streamed: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// Deno: Deno.env has the placeholder, and fetch, trusting DENO_CERT, gets
// the value to the host.
func TestSecretsDeno(t *testing.T) {
	requireDeno(t)
	f := newSecretFix(t)
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	args := append([]string{"run", "--json", "--lang", "deno"}, f.flags(t, audit)...)
	r := jsonRun(t, fmt.Sprintf(`const token = Deno.env.get("TOKEN");
const r = await fetch("https://%s:%d/deno", { headers: { Authorization: "Bearer " + token } });
export default { token, echo: r.headers.get("x-echo") };`, svcName, f.echo), append(args, "-")...)
	noValue(t, r, audit)
	var out struct{ Token, Echo string }
	if err := json.Unmarshal(r.Result, &out); err != nil || r.ExitCode != 0 {
		t.Fatalf("result %s: %v\n%s", r.Result, err, dump(r))
	}
	if len(out.Token) != len(tokenValue) || out.Echo != "Bearer "+out.Token {
		t.Errorf("Deno.env TOKEN %q, echoed %q", out.Token, out.Echo)
	}
	if got := f.received("/deno"); !strings.Contains(got, "Authorization: Bearer "+tokenValue) {
		t.Errorf("the host received:\n%s", got)
	}
}
