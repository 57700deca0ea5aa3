package egress

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// send writes raw, a request, on a new terminated connection to svc and
// reads the answer.
func (f *secretFix) send(t *testing.T, raw string) {
	t.Helper()
	c, err := f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

// Attack: laundering a secret through its own host. A may go to svc in
// its Authorization header only; the code puts A's placeholder in the
// path, the query, another header and the body too, where a host would
// store it (an issue's body, a file). The host gets the value in
// Authorization and the placeholder everywhere else; each misplaced one
// is a violation that names the part and where A may go; the receipt
// lists the one place A went.
func TestSecretPlacement(t *testing.T) {
	f := newSecretFix(t, Limits{})
	f.p.secrets.Where = func(string) Where { return Where{Header: true, Headers: []string{"Authorization"}} }
	ph := f.ph("A")
	f.send(t, fmt.Sprintf("POST /repos/%s/issues?note=%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nX-Api-Key: %s\r\nContent-Length: %d\r\n\r\n%s",
		ph, ph, svc, ph, ph, len(ph), ph))
	_, reqs := f.up.seen()
	if len(reqs) != 1 {
		t.Fatalf("the host got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.header.Get("Authorization") != "Bearer "+valueA {
		t.Errorf("Authorization %q: want A's value", r.header.Get("Authorization"))
	}
	if r.uri != fmt.Sprintf("/repos/%s/issues?note=%s", ph, ph) || r.header.Get("X-Api-Key") != ph || string(r.body) != ph {
		t.Errorf("the host got %q, X-Api-Key %q, body %q: want the placeholder in each", r.uri, r.header.Get("X-Api-Key"), r.body)
	}
	events := f.rec.waitFor(t, KindSecret, false, 4)
	var parts []string
	for _, e := range find(events, KindSecret, false) {
		if !slices.Equal(e.Secrets, []string{"A"}) || !strings.Contains(e.Reason, "secrets.A.in allows header (Authorization)") ||
			strings.Contains(e.Reason, valueA) {
			t.Errorf("violation %+v", e)
		}
		for _, p := range []string{InPath, InQuery, InHeader, InBody} {
			if strings.Contains(e.Reason, "in the "+p+" of a request") {
				parts = append(parts, p)
			}
		}
	}
	slices.Sort(parts)
	if want := []string{InBody, InHeader, InPath, InQuery}; !slices.Equal(parts, want) {
		t.Errorf("violations for the parts %q, want %q", parts, want)
	}
	got := find(events, KindSecret, true)
	if len(got) != 1 || got[0].Where != InHeader || got[0].Method != "POST" || got[0].Path != "/repos/"+ph+"/issues" {
		t.Errorf("the receipt %+v, want A in a header of POST /repos/.../issues", got)
	}
}

// A secret allowed in the query and the body goes there, and not in a
// header, where the code put it too.
func TestSecretPlacementAllowed(t *testing.T) {
	f := newSecretFix(t, Limits{})
	f.p.secrets.Where = func(string) Where { return Where{Query: true, Body: true} }
	ph := f.ph("A")
	f.send(t, fmt.Sprintf("POST /v1?key=%s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Length: %d\r\n\r\n%s",
		ph, svc, ph, len(ph), ph))
	_, reqs := f.up.seen()
	r := reqs[0]
	if !unescapesTo(strings.TrimPrefix(r.uri, "/v1?key="), valueA) || string(r.body) != valueA || r.header.Get("Authorization") != ph {
		t.Errorf("the host got %q, body %q, Authorization %q", r.uri, r.body, r.header.Get("Authorization"))
	}
	if v := find(f.rec.waitFor(t, KindSecret, false, 1), KindSecret, false); len(v) != 1 || !strings.Contains(v[0].Reason, "in the header of a request") ||
		!strings.Contains(v[0].Reason, "allows query, body") {
		t.Errorf("violations %+v, want the header's", v)
	}
}

// Attack: fetch an echo of a secret in pieces, each too short for the
// reverse swap to know. On a host that receives secrets, Range and
// If-Range are removed, and said so; the host answers the whole.
func TestSecretRangeStripped(t *testing.T) {
	f := newSecretFix(t, Limits{})
	f.send(t, fmt.Sprintf("GET /file HTTP/1.1\r\nHost: %s\r\nRange: bytes=0-3\r\nIf-Range: \"e1\"\r\n\r\n", svc))
	_, reqs := f.up.seen()
	if h := reqs[0].header; h.Get("Range") != "" || h.Get("If-Range") != "" {
		t.Errorf("the host got Range %q, If-Range %q", h.Get("Range"), h.Get("If-Range"))
	}
	v := find(f.rec.waitFor(t, KindSecret, false, 2), KindSecret, false)
	if len(v) != 2 || !strings.Contains(v[0].Reason, "Range header was removed") || !strings.Contains(v[0].Reason, "which receives A") {
		t.Errorf("violations %+v, want Range and If-Range named", v)
	}
}

// waitFor waits (bounded) until the events reported hold n of kind, and
// returns them all.
func (r *recorder) waitFor(t *testing.T, kind string, allowed bool, n int) []Event {
	t.Helper()
	var all []Event
	for deadline := time.Now().Add(testDeadline); ; time.Sleep(10 * time.Millisecond) {
		all = append(all, r.take()...)
		if len(find(all, kind, allowed)) >= n {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("events %+v: want %d of kind %s", all, n, kind)
		}
	}
}
