package egress

// Signed requests on the wire. The requests to a host that has a signer
// (an aws_sigv4 secret's) are signed here with a key the jail never
// holds. Its TLS is terminated as a secret's host's is; each request loses
// the signature the code made (with placeholders, or none) before
// anything reads it, has its placeholders swapped and is judged as any
// other, and is signed last, as it will be sent. Plain HTTP is never
// signed: there the code's request goes as it is, and a placeholder in it
// is refused as everywhere.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/cruciblehq/crucible/secrets"
)

// Signer signs the requests to a host (*sigv4.Signer is one). It must be
// safe for concurrent use.
type Signer interface {
	// Strip removes from h the headers of the signature the code made,
	// and reports whether Sign needs the request's whole body.
	Strip(h http.Header) (hold bool)
	// Sign signs req, in place, as it will be sent; body is its whole
	// body when Strip asked for it, else nil (the body streams, and the
	// signature does not cover it).
	Sign(req *http.Request, body []byte) error
}

// maxHeld bounds the request bodies that one execution's connections hold
// at once to sign them. A signature covers the hash of its body, which
// needs the whole body before the head can go out; where the service
// takes a body left out of the signature (S3), the code's SDK asks for
// that (Signer.Strip), and the body streams instead. 64 MiB: what an
// execution may send by default (Limits), and well above the parts of the
// SDKs' multipart uploads (5 to 8 MiB).
const maxHeld = 64 << 20

var errHeld = errors.New("egress: too much held to sign")

// signerFor returns the signer of this connection's requests and the
// secret whose key it signs with; nil for none.
func (f *flow) signerFor() (Signer, string) {
	s := f.p.secrets
	if s == nil || s.Signer == nil || f.name == "" {
		return nil, ""
	}
	secret, sg := s.Signer(f.name, f.dst.Port())
	return sg, secret
}

// sign signs req, whose placeholders forward swapped, and adds the
// signature to its uses. When hold, it reads the body whole first; held
// is what it holds of maxHeld until the request was sent. False: the
// request was refused, and the connection ends.
func (f *flow) sign(req *http.Request, hold bool, u *uses) (held int64, ok bool) {
	var body []byte
	if hold && req.Body != http.NoBody {
		if body, held, ok = f.hold(req); !ok {
			return held, false
		}
	}
	if err := f.signer.Sign(req, body); err != nil {
		reason := fmt.Sprintf("the request to %s:%d could not be signed with %s", f.name, f.dst.Port(), f.signFor)
		f.p.report(Event{Kind: KindSecret, Name: f.name, Port: f.dst.Port(), Secrets: []string{f.signFor}, Reason: reason})
		f.refuse(reason, true, http.StatusBadGateway)
		return held, false
	}
	u.add(InSignature, secrets.Use{Replaced: []string{f.signFor}})
	return held, true
}

// hold reads req's whole body, within the execution's maxHeld, and makes
// it req's body, of a known length.
func (f *flow) hold(req *http.Request) ([]byte, int64, bool) {
	if req.ContentLength > maxHeld {
		f.tooLarge()
		return nil, 0, false
	}
	// The host's 100 Continue would never come: nothing goes out before
	// the body is whole. The client is told to send it now.
	if hasToken(req.Header.Values("Expect"), "100-continue") {
		req.Header.Del("Expect")
		if _, err := f.toJail.WriteString("HTTP/1.1 100 Continue\r\n\r\n"); err != nil || f.toJail.Flush() != nil {
			return nil, 0, false
		}
	}
	r := &charged{r: req.Body, p: f.p}
	body, err := io.ReadAll(r)
	_ = req.Body.Close()
	if err != nil {
		if errors.Is(err, errHeld) {
			f.tooLarge()
		}
		return nil, r.n, false
	}
	req.ContentLength, req.TransferEncoding = int64(len(body)), nil
	req.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	return body, r.n, true
}

func (f *flow) tooLarge() {
	reason := fmt.Sprintf("the body of a request to %s:%d, which %s signs, is larger than the %d MiB the sandbox holds at once to sign; "+
		"send it in parts (a multipart upload), or with X-Amz-Content-Sha256: UNSIGNED-PAYLOAD where the service takes it (S3)",
		f.name, f.dst.Port(), f.signFor, maxHeld>>20)
	f.p.report(Event{Kind: KindLimit, Name: f.name, Port: f.dst.Port(), Secrets: []string{f.signFor}, Reason: reason})
	f.refuse(reason, true, http.StatusRequestEntityTooLarge)
}

// charged counts what it reads in the execution's held bytes, and fails
// past maxHeld.
type charged struct {
	r io.Reader
	p *proxy
	n int64
}

func (c *charged) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if c.p.held.Add(int64(n)) > maxHeld {
		return n, errHeld
	}
	return n, err
}
