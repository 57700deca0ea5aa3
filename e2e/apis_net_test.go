package e2e

// HTTP APIs' method and path rules, for real: curl and python3 inside
// jails call a loopback API over HTTPS (its certificate signed by a test
// CA, given as network.upstream_ca) and over plain HTTP, on hosts that the
// apis section alone allows. The API allows reading and writing under
// /repos and denies every DELETE. Each attack asserts the 403 the code got,
// that the API received nothing of the refused request, and the recorded
// violation (kind http, naming the API) and audit line.

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cruciblehq/crucible/sandbox"
)

// apiFix is a loopback API on svc: HTTPS on one port, plain HTTP on
// another, both recording what they received.
type apiFix struct {
	*netFix
	upstreamCA   string
	https, plain int

	mu  sync.Mutex
	got []string // "METHOD target auth" of every request received
}

func newAPIFix(t *testing.T) *apiFix {
	t.Helper()
	requireRoot(t)
	needCurlPython(t)
	t.Setenv("CRUCIBLE_TEST_TOKEN", tokenValue)
	f := &apiFix{netFix: newNetFix(t)}
	ca, caKey, caPEM := testCA(t)
	f.upstreamCA = filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(f.upstreamCA, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.got = append(f.got, r.Method+" "+r.RequestURI+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		fmt.Fprintf(w, "ok %s %s\n", r.Method, r.RequestURI)
	})
	f.https = serve(t, h, &tls.Config{Certificates: []tls.Certificate{leafCert(t, ca, caKey, svcName)}})
	f.plain = serve(t, h, nil)
	return f
}

// flags: the API github on svc's two ports, with its secret TOKEN (which
// has no hosts of its own) if secret, no network.allow at all; the audit
// goes to audit.
func (f *apiFix) flags(t *testing.T, audit string, secret bool) []string {
	t.Helper()
	yaml := fmt.Sprintf(`network:
  hosts:
    %[1]s: 127.0.0.1
  allow_private: [127.0.0.0/8]
  resolver: %[4]s
  upstream_ca: %[5]s
secrets:
  TOKEN:
    from: env:CRUCIBLE_TEST_TOKEN
apis:
  github:
    description: the test's API
    hosts: [%[1]s:%[2]d, %[1]s:%[3]d]
    secrets: [TOKEN]
    rules:
      - allow: GET /repos/**
      - allow: POST /repos/**
      - deny: DELETE /**
`, svcName, f.https, f.plain, f.dns, f.upstreamCA)
	if !secret {
		yaml = strings.NewReplacer("secrets:\n  TOKEN:\n    from: env:CRUCIBLE_TEST_TOKEN\n", "", "    secrets: [TOKEN]\n", "").Replace(yaml)
	}
	return append(f.config(t, yaml), "--audit", audit)
}

func (f *apiFix) received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// httpViolations are the result's violations of kind http on svc.
func httpViolations(r *sandbox.Result) []sandbox.Violation {
	var out []sandbox.Violation
	for _, v := range r.Violations {
		if v.Kind == "http" && v.Host == svcName {
			out = append(out, v)
		}
	}
	return out
}

// Read allowed and delete refused on the same keep-alive connection, from
// curl (two requests in one invocation, the second reusing the first's
// connection) and from python3's http.client (one connection). The read
// carries the secret's value to the API; the refused delete carries
// nothing anywhere.
func TestAPIRulesKeepAlive(t *testing.T) {
	f := newAPIFix(t)
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	r := jailSh(t, fmt.Sprintf(`W=' code=%%{http_code} connects=%%{num_connects}\n'
curl -sS -w "$W" -H "Authorization: Bearer $TOKEN" https://%[1]s:%[2]d/repos/curl \
  --next -sS -w "$W" -X DELETE -H "Authorization: Bearer $TOKEN" https://%[1]s:%[2]d/repos/curl
/usr/bin/python3 -c 'import http.client, os, sys
c = http.client.HTTPSConnection(sys.argv[1], int(sys.argv[2]), timeout=10)
auth = {"Authorization": "Bearer " + os.environ["TOKEN"]}
c.request("GET", "/repos/py", headers=auth)
r = c.getresponse(); print("py get", r.status, r.read().decode().strip())
sock = c.sock
c.request("DELETE", "/repos/py", headers=auth)
same = "same connection" if c.sock is sock else "another connection"
r = c.getresponse(); print("py delete", r.status, same, r.read().decode().strip())
' %[1]s %[2]d
`, svcName, f.https), f.flags(t, audit, true)...)
	noValue(t, r, audit)
	for _, w := range []string{
		"ok GET /repos/curl\n code=200 connects=1\n",
		`crucible: the API github refuses DELETE /repos/curl: its rule deny "DELETE /**" matches` + "\n code=403 connects=0\n",
		"py get 200 ok GET /repos/py\n",
		`py delete 403 same connection crucible: the API github refuses DELETE /repos/py: its rule deny "DELETE /**" matches` + "\n",
	} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("the jail's output lacks %q:\n%s", w, dump(r))
		}
	}
	// One connection each, as the jail's clients kept them.
	if r.Network == nil || r.Network.Connections != 2 {
		t.Errorf("network use %+v, want 2 connections", r.Network)
	}
	want := []string{"GET /repos/curl Bearer " + tokenValue, "GET /repos/py Bearer " + tokenValue}
	if got := f.received(); !slices.Equal(got, want) {
		t.Errorf("the API received %q, want %q", got, want)
	}
	v := httpViolations(r)
	if len(v) != 2 || v[0].Count != 1 || !strings.Contains(v[0].Reason, "API github") || !strings.Contains(v[1].Reason, "API github") {
		t.Errorf("violations: %+v", v)
	}
	trail, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf(`"type":"http","name":"%s","port":%d,"verdict":"deny","reason":"the API github refuses DELETE /repos/curl`, svcName, f.https)
	if !strings.Contains(string(trail), line) || !strings.Contains(string(trail), `"rule":"github: deny DELETE /**"`) {
		t.Errorf("the audit trail lacks %s with the rule:\n%s", line, trail)
	}
}

// Path traversal (dot segments, percent-encoded dots and slashes, a
// doubled slash) is judged on the path it lands on, and a method override
// on the method it names: over HTTPS (an API without secrets, its TLS
// terminated all the same) and over plain HTTP alike, each is refused
// before the API receives a byte of it.
func TestAttackAPIRules(t *testing.T) {
	f := newAPIFix(t)
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	var script strings.Builder
	script.WriteString("echo \"token=${TOKEN:-none}\"\nW=' code=%{http_code}\\n'\n")
	for _, base := range []string{fmt.Sprintf("https://%s:%d", svcName, f.https), fmt.Sprintf("http://%s:%d", svcName, f.plain)} {
		for _, p := range []string{"/repos/../admin", "/repos/%2e%2e/admin", "/repos/..%2fadmin", "//admin"} {
			fmt.Fprintf(&script, "curl -sS --path-as-is -w \"$W\" %s%s\n", base, p)
		}
		fmt.Fprintf(&script, "curl -sS -w \"$W\" -X POST -H 'X-HTTP-Method-Override: DELETE' -d x=1 %s/repos/override\n", base)
		fmt.Fprintf(&script, "curl -sS -w \"$W\" %s/repos/allowed\n", base)
	}
	fmt.Fprintf(&script, `/usr/bin/python3 -c 'import http.client, sys
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=10)
c.request("POST", "/repos/py", body="x", headers={"X-HTTP-Method-Override": "DELETE"})
r = c.getresponse(); print("py override", r.status, r.read().decode().strip())
' %s %d
`, svcName, f.plain)
	// No secret: the API's TLS is terminated for its rules alone.
	r := jailSh(t, script.String(), f.flags(t, audit, false)...)
	noValue(t, r, audit)
	if !strings.Contains(r.Stdout, "token=none\n") {
		t.Errorf("the execution has a secret:\n%s", r.Stdout)
	}
	admin := "crucible: the API github refuses GET /admin: no allow rule matches (it allows GET /repos/**, POST /repos/**)\n code=403\n"
	override := `crucible: the API github refuses DELETE /repos/override: its rule deny "DELETE /**" matches (DELETE is the method that X-Http-Method-Override names)` + "\n code=403\n"
	if n := strings.Count(r.Stdout, admin); n != 8 {
		t.Errorf("%d of the 8 traversals refused as GET /admin:\n%s", n, dump(r))
	}
	if n := strings.Count(r.Stdout, override); n != 2 {
		t.Errorf("%d of the 2 overrides refused:\n%s", n, dump(r))
	}
	if !strings.Contains(r.Stdout, "py override 403 crucible: the API github refuses DELETE /repos/py") {
		t.Errorf("python's override was not refused:\n%s", dump(r))
	}
	want := []string{"GET /repos/allowed ", "GET /repos/allowed "}
	if got := f.received(); !slices.Equal(got, want) {
		t.Errorf("the API received %q, want only %q", got, want)
	}
	var byPort [2]int
	for _, v := range httpViolations(r) {
		if !strings.Contains(v.Reason, "API github") {
			t.Errorf("a violation does not name the API: %+v", v)
		}
		switch int(v.Port) {
		case f.https:
			byPort[0] += v.Count
		case f.plain:
			byPort[1] += v.Count
		}
	}
	if byPort != [2]int{5, 6} {
		t.Errorf("http violations over HTTPS and HTTP: %v, want 5 and 6:\n%s", byPort, dump(r))
	}
}

// Attack: an API whose rules have conditions, called for real over HTTPS
// with the secret. Issues only in the acme org, with the token; searches
// only of acme's repositories. The code tries another owner, an owner
// that a lax server splits, and a query that names the repository twice;
// each is refused with a 403 that names the rule's condition, reaches
// the API not at all, and is recorded as a violation of kind http.
func TestAttackAPIConditions(t *testing.T) {
	f := newAPIFix(t)
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	yaml := fmt.Sprintf(`network:
  hosts:
    %[1]s: 127.0.0.1
  allow_private: [127.0.0.0/8]
  resolver: %[3]s
  upstream_ca: %[4]s
secrets:
  TOKEN:
    from: env:CRUCIBLE_TEST_TOKEN
apis:
  github:
    hosts: [%[1]s:%[2]d]
    secrets: [TOKEN]
    rules:
      - allow: "POST /repos/{owner}/{repo}/issues"
        if: 'request.params.owner == "acme" && request.headers.authorization == "Bearer ${TOKEN}"'
      - allow: GET /search
        if: 'request.query.q.startsWith("repo:acme/")'
`, svcName, f.https, f.dns, f.upstreamCA)
	base := fmt.Sprintf("https://%s:%d", svcName, f.https)
	script := `W=' code=%{http_code}\n'
curl -sS -w "$W" -X POST -H "Authorization: Bearer $TOKEN" -d '{}' ` + base + `/repos/acme/widgets/issues
curl -sS -w "$W" -X POST -H "Authorization: Bearer $TOKEN" -d '{}' ` + base + `/repos/evil/widgets/issues
curl -sS -w "$W" -X POST -H "Authorization: Bearer other" -d '{}' ` + base + `/repos/acme/widgets/issues
curl -sS -w "$W" -X POST -H "Authorization: Bearer $TOKEN" -d '{}' ` + base + `/repos/acme%2F..%2Fevil/widgets/issues
curl -sS -w "$W" '` + base + `/search?q=repo:acme/widgets'
curl -sS -w "$W" '` + base + `/search?q=repo:acme/widgets&q=repo:evil/secrets'
`
	r := jailSh(t, script, append(f.config(t, yaml), "--audit", audit)...)
	noValue(t, r, audit)
	for _, want := range []string{
		"ok POST /repos/acme/widgets/issues\n code=200\n",
		`crucible: the API github refuses POST /repos/evil/widgets/issues: no allow rule matches (it allows POST /repos/{owner}/{repo}/issues, GET /search); "POST /repos/{owner}/{repo}/issues" matches, but its condition request.params.owner == "acme" && request.headers.authorization == "Bearer ${TOKEN}" is false` + "\n code=403\n",
		"crucible: the API github refuses POST /repos/acme/widgets/issues: no allow rule matches",
		"crucible: the API github refuses POST /repos/acme%2F..%2Fevil/widgets/issues: no allow rule matches",
		"ok GET /search?q=repo:acme/widgets\n code=200\n",
		`crucible: the API github refuses GET /search: no allow rule matches (it allows POST /repos/{owner}/{repo}/issues, GET /search); "GET /search" matches, but its condition request.query.q.startsWith("repo:acme/") could not be evaluated: the query gives the parameter "q" more than once`,
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("want %q in:\n%s", want, dump(r))
		}
	}
	want := []string{"POST /repos/acme/widgets/issues Bearer " + tokenValue, "GET /search?q=repo:acme/widgets "}
	if got := f.received(); !slices.Equal(got, want) {
		t.Errorf("the API received %q, want only %q", got, want)
	}
	n := 0
	for _, v := range httpViolations(r) {
		n += v.Count
	}
	if n != 4 {
		t.Errorf("%d http violations, want 4:\n%s", n, dump(r))
	}
}
