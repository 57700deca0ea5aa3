// Package sigv4test checks AWS Signature Version 4 signatures as a host
// receives them, for tests: the way AWS does, by computing the signature
// again with the AWS SDK for Go v2's signer. It is for tests only.
package sigv4test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Key is a key pair, and the region and service it signs for.
type Key struct {
	ID, Secret, Region, Service string
}

// unsigned are the headers the algorithm leaves out, and the length,
// signed apart.
var unsigned = []string{"authorization", "user-agent", "expect", "transfer-encoding", "content-length"}

// Verify checks the signature of req, as a server received it with body:
// computed again from the headers it names as signed, its X-Amz-Date and
// the hash of body (unless X-Amz-Content-Sha256 is UNSIGNED-PAYLOAD).
// Besides, every header received (but those the algorithm leaves out)
// must be signed, the host, date and payload hash among them. An error
// says what differs.
func Verify(req *http.Request, body []byte, k Key) error {
	auth := req.Header.Get("Authorization")
	_, signed, ok := strings.Cut(auth, "SignedHeaders=")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+k.ID+"/") || !ok {
		return fmt.Errorf("not a signature of the key: %q", auth)
	}
	signed, _, _ = strings.Cut(signed, ",")
	names := strings.Split(signed, ";")
	for h := range req.Header {
		if h := strings.ToLower(h); !slices.Contains(names, h) && !slices.Contains(unsigned, h) {
			return fmt.Errorf("the header %s is not signed (%s)", h, signed)
		}
	}
	for _, need := range []string{"host", "x-amz-date", "x-amz-content-sha256"} {
		if !slices.Contains(names, need) {
			return fmt.Errorf("%s is not signed (%s)", need, signed)
		}
	}
	when, err := time.Parse("20060102T150405Z", req.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	if got := req.Header.Get("X-Amz-Content-Sha256"); got == "UNSIGNED-PAYLOAD" {
		payload = got
	} else if got != payload {
		return fmt.Errorf("X-Amz-Content-Sha256 %s is not the hash of the body", got)
	}
	u, err := url.ParseRequestURI(req.RequestURI)
	if err != nil {
		return err
	}
	check := &http.Request{Method: req.Method, URL: u, Host: req.Host, Header: http.Header{}, ContentLength: req.ContentLength}
	for _, n := range names {
		if n != "host" && n != "content-length" {
			check.Header[http.CanonicalHeaderKey(n)] = req.Header.Values(n)
		}
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = k.Service == "s3" })
	creds := aws.Credentials{AccessKeyID: k.ID, SecretAccessKey: k.Secret}
	if err := signer.SignHTTP(req.Context(), creds, check, payload, k.Service, k.Region, when); err != nil {
		return err
	}
	if check.Header.Get("Authorization") != auth {
		return errors.New("SignatureDoesNotMatch")
	}
	return nil
}
