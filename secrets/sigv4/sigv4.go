// Package sigv4 signs HTTP requests with AWS Signature Version 4 for code
// that holds no key: the network stack calls it on the wire, on requests
// whose own signature (made with placeholders, or none) it removes first.
// The algorithm is the AWS SDK for Go v2's signer; this package only
// decides what to hand it: the payload hash, the headers to replace, how
// a service escapes its paths. It is not a client, and knows nothing of
// the network, the config file or the sandbox.
package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The headers of a signature, which Strip removes and Sign sets.
const (
	authorization = "Authorization"
	amzDate       = "X-Amz-Date"
	securityToken = "X-Amz-Security-Token"
	contentSHA256 = "X-Amz-Content-Sha256"
)

// unsignedPayload are the payload hashes that leave the body out of a
// signature: S3 takes them, other services refuse them. SDKs send them to
// S3 over HTTPS, for every upload of the newer ones (the body in
// aws-chunked encoding, its checksum in a trailer of its own).
var unsignedPayload = map[string]bool{"UNSIGNED-PAYLOAD": true, "STREAMING-UNSIGNED-PAYLOAD-TRAILER": true}

// Signer signs requests with one key pair, for one region and service.
// It is safe for concurrent use.
type Signer struct {
	creds           aws.Credentials
	region, service string
	v4              *v4.Signer
	now             func() time.Time
}

// New is a signer with the key pair for region and service ("eu-west-1",
// "s3").
func New(accessKeyID, secretAccessKey, region, service string) *Signer {
	return &Signer{
		creds:  aws.Credentials{AccessKeyID: accessKeyID, SecretAccessKey: secretAccessKey},
		region: region, service: service,
		v4: v4.NewSigner(func(o *v4.SignerOptions) {
			// S3 signs a path as it is sent; every other service escapes
			// it once more (as the SDK's clients tell their signers).
			o.DisableURIPathEscaping = service == "s3"
		}),
		now: time.Now,
	}
}

// Strip removes from h the headers of the code's own signature, and
// reports whether the request's body must be held to be hashed. It need
// not when the code asked for an unsigned payload (its SDK knows that the
// service takes one: S3): that payload hash is kept, and the body streams.
func (s *Signer) Strip(h http.Header) (hold bool) {
	for _, k := range []string{authorization, amzDate, securityToken} {
		h.Del(k)
	}
	if vs := h.Values(contentSHA256); len(vs) == 1 && unsignedPayload[vs[0]] {
		return false
	}
	h.Del(contentSHA256)
	return true
}

// Sign signs req, in place, as it will be sent: its method, target, host,
// length and every header but those the algorithm leaves out (User-Agent,
// Expect, Transfer-Encoding), with X-Amz-Content-Sha256 set to the hash of
// body (the whole body, held since Strip) or to the unsigned payload Strip
// kept. The SDK rewrites the query in its canonical form, which is the
// one sent.
func (s *Signer) Sign(req *http.Request, body []byte) error {
	payload := req.Header.Get(contentSHA256)
	if !unsignedPayload[payload] {
		sum := sha256.Sum256(body)
		payload = hex.EncodeToString(sum[:])
	}
	req.Header.Set(contentSHA256, payload)
	return s.v4.SignHTTP(req.Context(), s.creds, req, payload, s.service, s.region, s.now())
}
