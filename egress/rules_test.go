package egress

// HTTP rules on the wire, attacked: the proxy between a jail's client and
// the recording upstreams of mitm_test.go, with an API whose rules allow
// reading and deny deleting. Each refusal is asserted three ways: the jail
// got a 403 that names the API, the upstream received nothing of it, and
// a KindHTTP event was reported.

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/policy/httprule"
)

// newRulesFix is newSecretFix with the API "github" on other (TLS, no
// secrets), svc (TLS, secret A) and plain.test (plain HTTP). Upstreams
// answer "ok".
func newRulesFix(t *testing.T) *secretFix {
	t.Helper()
	f := newSecretFix(t, Limits{})
	set, err := httprule.Compile("github", []httprule.Rule{
		{Text: "GET /repos/**"}, {Text: "POST /repos/**"}, {Deny: true, Text: "DELETE /**"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.p.http = func(name string, port uint16) []*httprule.Set {
		if name == other || name == svc || name == "plain.test" {
			return []*httprule.Set{set}
		}
		return nil
	}
	ok := func(w io.Writer, _ *http.Request, _ []byte) {
		fmt.Fprint(w, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
	}
	f.up.respond, f.plain.respond = ok, ok
	return f
}

// exchange sends each request on c, one after the other, and reads each
// answer; it stops at the first that ends the connection.
func exchange(t *testing.T, c net.Conn, reqs ...string) []*http.Response {
	t.Helper()
	br := bufio.NewReader(c)
	var out []*http.Response
	for _, r := range reqs {
		if _, err := io.WriteString(c, r); err != nil {
			break
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
		if resp.Close {
			break
		}
	}
	return out
}

// signed reports whether the sandbox's CA signed the certificate the jail
// was shown on tc: whether the stack terminated its TLS.
func (f *secretFix) signed(t *testing.T, tc *tls.Conn) bool {
	t.Helper()
	blk, _ := pem.Decode(f.ca.PEM())
	ca, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return tc.ConnectionState().PeerCertificates[0].CheckSignatureFrom(ca) == nil
}

func bodyOf(r *http.Response) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// httpEvents are the KindHTTP events reported so far.
func httpEvents(f *secretFix) []Event { return find(f.rec.take(), KindHTTP, false) }

// Read allowed, delete refused, on one keep-alive TLS connection to a host
// without secrets: its TLS is terminated for the rules' sake, and the
// DELETE never reaches the host.
func TestRulesKeepAlive(t *testing.T) {
	f := newRulesFix(t)
	for _, name := range []string{other, svc} {
		tc, err := f.dialTLS(t, name, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		if !f.signed(t, tc) {
			t.Errorf("%s: TLS not terminated", name)
		}
		resps := exchange(t, tc,
			"GET /repos/x HTTP/1.1\r\nHost: "+name+"\r\n\r\n",
			"DELETE /repos/x HTTP/1.1\r\nHost: "+name+"\r\n\r\n",
			"GET /repos/y HTTP/1.1\r\nHost: "+name+"\r\n\r\n")
		if len(resps) != 2 || resps[0].StatusCode != 200 || resps[1].StatusCode != 403 || !resps[1].Close {
			t.Fatalf("%s: %d answers", name, len(resps))
		}
		if b := bodyOf(resps[1]); !strings.Contains(b, `the API github refuses DELETE /repos/x: its rule deny "DELETE /**" matches`) {
			t.Errorf("%s: the jail was told %q", name, b)
		}
		ev := httpEvents(f)
		if len(ev) != 1 || ev[0].Name != name || !strings.Contains(ev[0].Reason, "API github") || ev[0].Rule != "github: deny DELETE /**" {
			t.Errorf("%s: events %+v", name, ev)
		}
	}
	_, reqs := f.up.seen()
	if len(reqs) != 2 || reqs[0].method != "GET" || reqs[1].method != "GET" {
		t.Errorf("the upstream received %+v", reqs)
	}
}

// Traversals and overrides are judged where they land, and plain HTTP the
// same: a refused first request opens no connection to the host at all.
func TestRulesAttacks(t *testing.T) {
	f := newRulesFix(t)
	for _, c := range []struct{ req, why string }{
		{"GET /repos/../admin HTTP/1.1", "GET /admin: no allow rule"},
		{"GET /repos/%2e%2e/admin HTTP/1.1", "GET /admin: no allow rule"},
		{"GET /repos/..%2fadmin HTTP/1.1", "GET /admin: no allow rule"},
		{"GET /repos/..%5Cadmin HTTP/1.1", "GET /admin: no allow rule"},
		{"GET //admin HTTP/1.1", "GET /admin: no allow rule"},
		{"GET http://plain.test/repos/../admin HTTP/1.1", "GET /admin: no allow rule"},
		{"POST /repos/x HTTP/1.1\r\nX-HTTP-Method-Override: DELETE", "X-Http-Method-Override names"},
		{"POST /repos/x HTTP/1.1\r\nX-Method-Override: delete", "X-Method-Override names"},
		{"POST /repos/x?_method=DELETE HTTP/1.1", "_method parameter names"},
		{"OPTIONS * HTTP/1.1", "not a path"},
	} {
		for _, tlsOn := range []bool{false, true} {
			c1 := f.open(t, "plain.test", true)
			host := "plain.test"
			if tlsOn {
				tc, err := f.dialTLS(t, other, "http/1.1")
				if err != nil {
					t.Fatal(err)
				}
				c1, host = tc, other
			}
			req := strings.Replace(c.req, "http://plain.test", "http://"+host, 1)
			resps := exchange(t, c1, req+"\r\nHost: "+host+"\r\nContent-Length: 0\r\n\r\n")
			if len(resps) != 1 || resps[0].StatusCode != 403 {
				t.Fatalf("%q: %d answers", req, len(resps))
			}
			if b := bodyOf(resps[0]); !strings.Contains(b, c.why) || !strings.Contains(b, "API github") {
				t.Errorf("%q: the jail was told %q", req, b)
			}
			if ev := httpEvents(f); len(ev) != 1 || ev[0].Name != host {
				t.Errorf("%q: events %+v", req, ev)
			}
		}
	}
	if _, reqs := f.up.seen(); len(reqs) != 0 {
		t.Errorf("the TLS upstream received %+v", reqs)
	}
	if n := f.plain.connections(); n != 0 {
		t.Errorf("the plain upstream was connected to %d times", n)
	}
}

// A refused request that carries a placeholder sends nothing of it, value
// or placeholder; a host without rules or secrets keeps its TLS passing
// through.
func TestRulesSecretsAndPassThrough(t *testing.T) {
	f := newRulesFix(t)
	tc, err := f.dialTLS(t, svc, "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	resps := exchange(t, tc, "DELETE /repos/x HTTP/1.1\r\nHost: "+svc+"\r\nAuthorization: Bearer "+f.ph("A")+"\r\n\r\n")
	if len(resps) != 1 || resps[0].StatusCode != 403 || len(httpEvents(f)) != 1 {
		t.Fatalf("%d answers", len(resps))
	}
	if got, _ := f.up.seen(); len(got) != 0 {
		t.Errorf("the upstream received %q", got)
	}
	f.p.http = func(string, uint16) []*httprule.Set { return nil }
	pt, err := f.dialTLS(t, other, "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	if f.signed(t, pt) {
		t.Error("TLS to a host without rules or secrets was terminated")
	}
}

// Without Secrets (no CA), TLS to a host with rules is refused, not
// passed through unjudged.
func TestRulesNeedCA(t *testing.T) {
	f := newRulesFix(t)
	f.p.secrets = nil
	tc, err := f.dialTLS(t, other)
	if err == nil {
		_, err = io.WriteString(tc, "DELETE /repos/x HTTP/1.1\r\nHost: "+other+"\r\n\r\n")
		if err == nil {
			_, err = tc.Read(make([]byte, 1))
		}
	}
	if err == nil {
		t.Fatal("the connection was relayed")
	}
	if ev := httpEvents(f); len(ev) != 1 || !strings.Contains(ev[0].Reason, "no CA") {
		t.Errorf("events %+v", ev)
	}
	if n := f.up.connections(); n != 0 {
		t.Errorf("the upstream was connected to %d times", n)
	}
}

// Attack: a client of the readonly profile POSTs to an API whose deny rule
// names that profile. The rule sees whom the execution runs for, profile
// and all (it saw "" before), so the POST never reaches the host and is
// reported; another profile's goes through.
func TestRulesSeeTheProfile(t *testing.T) {
	f := newRulesFix(t)
	set, err := httprule.Compile("github", []httprule.Rule{
		{Deny: true, Text: "POST /**", If: `client.profile == "readonly" || client.name == ""`}, {Text: "* /**"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.p.http = func(string, uint16) []*httprule.Set { return []*httprule.Set{set} }
	for _, c := range []struct {
		name, profile string
		status        int
	}{{"ro", "readonly", 403}, {"dev", "dev", 200}} {
		f.p.client = func() (string, string) { return c.name, c.profile }
		tc, err := f.dialTLS(t, other, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		resps := exchange(t, tc, "POST /repos/x HTTP/1.1\r\nHost: "+other+"\r\nContent-Length: 0\r\n\r\n")
		if len(resps) != 1 || resps[0].StatusCode != c.status {
			t.Fatalf("profile %s: %d answers, want one %d", c.profile, len(resps), c.status)
		}
		ev := httpEvents(f)
		if refused := c.status == 403; refused != (len(ev) == 1) || refused && ev[0].Rule != "github: deny POST /**" {
			t.Errorf("profile %s: events %+v", c.profile, ev)
		}
	}
	if _, reqs := f.up.seen(); len(reqs) != 1 {
		t.Errorf("the upstream received %+v, want dev's POST alone", reqs)
	}
}
