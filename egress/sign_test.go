package egress

// Signed requests, with real TLS both ways on loopback: the host checks
// each request it receives the way AWS does (sigv4test: its signature
// computed again with the SDK's signer and the key pair, over the request
// as it arrived), and answers 403 when they differ.

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/secrets"
	"github.com/cruciblehq/crucible/secrets/sigv4"
	"github.com/cruciblehq/crucible/secrets/sigv4/sigv4test"
)

const (
	awsID  = "AKIAIOSFODNN7EXAMPLE"
	awsKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

var awsPair = sigv4test.Key{ID: awsID, Secret: awsKey, Region: "eu-west-1", Service: "s3"}

// signFix is the secrets' fixture with requests to svc and plain.test
// signed with the key pair of AWS, whose placeholders the set holds too.
// Its host verifies every request, and records what it found.
type signFix struct {
	*secretFix
	mu       sync.Mutex
	verified []error // of each request, as received
	tampered []error // of each request, its body altered by a byte
}

func newSignFix(t *testing.T) *signFix {
	f := &signFix{secretFix: newSecretFix(t, Limits{})}
	set, err := secrets.New(map[string][]byte{"A": []byte(valueA), "B": []byte(valueB),
		"AWS_ACCESS_KEY_ID": []byte(awsID), "AWS_SECRET_ACCESS_KEY": []byte(awsKey)})
	if err != nil {
		t.Fatal(err)
	}
	f.set, f.p.secrets.Set = set, set
	s := sigv4.New(awsID, awsKey, awsPair.Region, awsPair.Service)
	f.p.secrets.Signer = func(name string, port uint16) (string, Signer) {
		if name == svc && port == f.up.port || name == "plain.test" {
			return "AWS", s
		}
		return "", nil
	}
	respond := func(w io.Writer, req *http.Request, body []byte) {
		err := sigv4test.Verify(req, body, awsPair)
		f.mu.Lock()
		f.verified = append(f.verified, err)
		f.tampered = append(f.tampered, sigv4test.Verify(req, append(slices.Clone(body), '!'), awsPair))
		f.mu.Unlock()
		if err != nil {
			fmt.Fprintf(w, "HTTP/1.1 403 Forbidden\r\nContent-Length: %d\r\n\r\n%s", len(err.Error()), err)
			return
		}
		fmt.Fprint(w, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nverified")
	}
	f.up.respond, f.plain.respond = respond, respond
	return f
}

// roundTrip writes head on c, then body (after the 100 Continue it must
// wait for, if it asks), and returns the final answer, read whole.
func roundTrip(t *testing.T, c io.ReadWriter, br *bufio.Reader, head, body string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	if body != "" && strings.Contains(head, "Expect: 100-continue") {
		if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusContinue {
			t.Fatalf("waiting for 100 Continue: %v %v", resp, err)
		}
	}
	if _, err := io.WriteString(c, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return resp
}

// The jail's requests to svc, as an SDK would send them with the
// placeholders for a key pair (a signature of its own, a session token)
// or as curl would without (no signature at all), arrive signed with the
// real pair, and verify: a body of a known length; A's placeholder in a
// header, swapped before the signature covered it; a chunked body the
// client sends only after a 100 Continue (which the sandbox gives, as
// the host's would never come before the body is whole); an unsigned
// payload, streamed. The host's check fails on a body altered by a byte
// (but for the unsigned payload's, which the signature leaves out).
// Each request is in the receipt; the placeholder of the key id in the
// code's own signature is no violation.
func TestSignedRequests(t *testing.T) {
	f := newSignFix(t)
	tc, err := f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(tc)
	own := fmt.Sprintf("Authorization: AWS4-HMAC-SHA256 Credential=%s/20200101/eu-west-1/s3/aws4_request, SignedHeaders=host, Signature=%s\r\n"+
		"X-Amz-Date: 20200101T000000Z\r\nX-Amz-Security-Token: %s\r\nX-Amz-Content-Sha256: 0123\r\n",
		f.ph("AWS_ACCESS_KEY_ID"), strings.Repeat("0", 64), f.ph("AWS_SECRET_ACCESS_KEY"))
	body := "hello, bucket"
	for _, r := range []struct{ head, body string }{
		{fmt.Sprintf("PUT /bucket/a%%20b.txt?x-id=PutObject&b=2&a=1 HTTP/1.1\r\nHost: %s:%d\r\n%sX-Api-Key: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n",
			svc, f.up.port, own, f.ph("A"), len(body)), body},
		{fmt.Sprintf("GET /bucket?list-type=2 HTTP/1.1\r\nHost: %s:%d\r\n\r\n", svc, f.up.port), ""},
		{fmt.Sprintf("POST /bucket/c?uploads HTTP/1.1\r\nHost: %s:%d\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n", svc, f.up.port),
			fmt.Sprintf("%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body, 3, "!!!")},
		{fmt.Sprintf("PUT /bucket/d HTTP/1.1\r\nHost: %s:%d\r\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\nContent-Length: %d\r\n\r\n",
			svc, f.up.port, len(body)), body},
	} {
		if resp := roundTrip(t, tc, br, r.head, r.body); resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %s %s", strings.SplitN(r.head, "\r\n", 2)[0], resp.Status, b)
		}
	}
	f.mu.Lock()
	verified, tampered := slices.Clone(f.verified), slices.Clone(f.tampered)
	f.mu.Unlock()
	if len(verified) != 4 {
		t.Fatalf("the host verified %d requests, want 4", len(verified))
	}
	for i := range verified {
		// The last one's body is not signed: what S3 takes.
		if verified[i] != nil || (tampered[i] == nil) != (i == 3) {
			t.Errorf("request %d: verified %v; altered %v", i, verified[i], tampered[i])
		}
	}
	raw, reqs := f.up.seen()
	if h := reqs[0].header; h.Get("X-Api-Key") != valueA || h.Get("X-Amz-Security-Token") != "" || h.Get("X-Amz-Date") == "20200101T000000Z" {
		t.Errorf("the host got X-Api-Key %q, X-Amz-Security-Token %q, X-Amz-Date %q", h.Get("X-Api-Key"), h.Get("X-Amz-Security-Token"), h.Get("X-Amz-Date"))
	}
	if string(reqs[2].body) != body+"!!!" || reqs[2].header.Get("Expect") != "" || reqs[3].header.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" {
		t.Errorf("the host got the body %q, Expect %q; unsigned: %q", reqs[2].body, reqs[2].header.Get("Expect"),
			reqs[3].header.Get("X-Amz-Content-Sha256"))
	}
	for _, p := range []string{f.ph("AWS_ACCESS_KEY_ID"), f.ph("AWS_SECRET_ACCESS_KEY"), awsKey} {
		if strings.Contains(string(raw), p) {
			t.Errorf("the host received %q", p)
		}
	}
	events := f.rec.waitFor(t, KindSecret, true, 5)
	var receipt []string
	for _, e := range find(events, KindSecret, true) {
		if e.Where == InSignature && slices.Equal(e.Secrets, []string{"AWS"}) && e.Name == svc {
			receipt = append(receipt, e.Method+" "+e.Path)
		}
	}
	if want := []string{"PUT /bucket/a%20b.txt", "GET /bucket", "POST /bucket/c", "PUT /bucket/d"}; !slices.Equal(receipt, want) {
		t.Errorf("the receipt %q, want %q", receipt, want)
	}
	if v := find(events, KindSecret, false); len(v) != 0 {
		t.Errorf("violations %+v", v)
	}
}

// Only the signer's own host over terminated TLS is signed: the code's
// request to another host (its TLS passed through) and over plain HTTP
// to a host that the signer names goes as the code wrote it. Over plain
// HTTP, the placeholder of the key id in it is refused, as any.
func TestSignedOnlyThere(t *testing.T) {
	f := newSignFix(t)
	tc, err := f.dialTLS(t, other)
	if err != nil {
		t.Fatal(err)
	}
	resp := roundTrip(t, tc, bufio.NewReader(tc), fmt.Sprintf("GET /x HTTP/1.1\r\nHost: %s\r\nAuthorization: mine\r\n\r\n", other), "")
	plain := f.open(t, "plain.test", true)
	presp := roundTrip(t, plain, bufio.NewReader(plain), "GET /y HTTP/1.1\r\nHost: plain.test\r\nAuthorization: mine too\r\n\r\n", "")
	cut := f.open(t, "plain.test", true)
	cresp := roundTrip(t, cut, bufio.NewReader(cut), "GET /z HTTP/1.1\r\nHost: plain.test\r\nAuthorization: "+f.ph("AWS_ACCESS_KEY_ID")+"\r\n\r\n", "")
	if resp.StatusCode != http.StatusForbidden || presp.StatusCode != http.StatusForbidden || cresp.StatusCode != http.StatusForbidden {
		t.Errorf("answers %s, %s, %s: want 403 (no signature) from the hosts, and from the sandbox", resp.Status, presp.Status, cresp.Status)
	}
	_, reqs := f.up.seen()
	_, preqs := f.plain.seen()
	if len(reqs) != 1 || reqs[0].header.Get("Authorization") != "mine" || len(preqs) != 1 || preqs[0].header.Get("Authorization") != "mine too" {
		t.Errorf("the hosts got %+v and %+v", reqs, preqs)
	}
	events := f.rec.waitFor(t, KindSecret, false, 1)
	for _, e := range events {
		if e.Where == InSignature {
			t.Errorf("signed: %+v", e)
		}
	}
	if v := find(events, KindSecret, false); len(v) != 1 || !strings.Contains(v[0].Reason, "AWS_ACCESS_KEY_ID over plain HTTP") {
		t.Errorf("violations %+v", v)
	}
}

// Attack: starve the host by having many bodies held to be signed at
// once. A body longer than the bound is refused before it is read; one
// that crosses what the execution holds already is refused as it comes;
// each with a 413 that says what to do, and a limit violation.
func TestSignedHeldBound(t *testing.T) {
	f := newSignFix(t)
	tc, err := f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	resp := roundTrip(t, tc, bufio.NewReader(tc), fmt.Sprintf("PUT /big HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", svc, maxHeld+1), "")
	f.p.held.Store(maxHeld - 4) // other connections hold all but 4 bytes
	tc, err = f.dialTLS(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	resp2 := roundTrip(t, tc, bufio.NewReader(tc), fmt.Sprintf("PUT /more HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n", svc), "8\r\n12345678\r\n0\r\n\r\n")
	for _, r := range []*http.Response{resp, resp2} {
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "UNSIGNED-PAYLOAD") {
			t.Errorf("answer %s %s", r.Status, b)
		}
	}
	if _, reqs := f.up.seen(); len(reqs) != 0 {
		t.Errorf("the host got %d requests", len(reqs))
	}
	if v := find(f.rec.waitFor(t, KindLimit, false, 2), KindLimit, false); len(v) != 2 || !slices.Equal(v[0].Secrets, []string{"AWS"}) {
		t.Errorf("violations %+v", v)
	}
	// What the refused body held is given back (once its exchange ends,
	// after the answer).
	for deadline := time.Now().Add(testDeadline); f.p.held.Load() != maxHeld-4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("held %d after the refusals, want %d", f.p.held.Load(), maxHeld-4)
		}
	}
}

// Attack: have the sandbox put the key pair itself in a request. The code
// sends the placeholders of the id and the secret key to the signed host
// in a header, the query and the body: they are never swapped (the pair
// only signs), go as they are, and each is a violation; the request is
// signed all the same.
func TestSignedPairNeverSwapped(t *testing.T) {
	f := newSignFix(t)
	id, key := f.ph("AWS_ACCESS_KEY_ID"), f.ph("AWS_SECRET_ACCESS_KEY")
	body := id + " " + key
	f.send(t, fmt.Sprintf("POST /x?k=%s HTTP/1.1\r\nHost: %s\r\nX-Key: %s\r\nContent-Length: %d\r\n\r\n%s", key, svc, key, len(body), body))
	raw, reqs := f.up.seen()
	if len(reqs) != 1 || reqs[0].header.Get("X-Key") != key || string(reqs[0].body) != body {
		t.Fatalf("the host got %+v", reqs)
	}
	if strings.Contains(string(raw), awsKey) || strings.Contains(string(raw), awsID+" ") {
		t.Error("the host got a value of the pair in the request")
	}
	f.mu.Lock()
	verified := slices.Clone(f.verified)
	f.mu.Unlock()
	if len(verified) != 1 || verified[0] != nil {
		t.Errorf("verified %v", verified)
	}
	v := find(f.rec.waitFor(t, KindSecret, false, 1), KindSecret, false)
	if len(v) == 0 || !strings.Contains(v[0].Reason, "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY was sent to "+svc) {
		t.Errorf("violations %+v", v)
	}
}
