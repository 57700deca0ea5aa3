package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Strip removes the code's signature; its payload hash stays only when it
// leaves the body out, and then the body need not be held.
func TestStrip(t *testing.T) {
	for _, tc := range []struct {
		payload []string
		hold    bool
	}{
		{nil, true},
		{[]string{"0123abcd"}, true},
		{[]string{"UNSIGNED-PAYLOAD"}, false},
		{[]string{"STREAMING-UNSIGNED-PAYLOAD-TRAILER"}, false},
		{[]string{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}, true}, // its chunks are signed with a placeholder
		{[]string{"UNSIGNED-PAYLOAD", "UNSIGNED-PAYLOAD"}, true},
	} {
		h := http.Header{"Authorization": {"AWS4-HMAC-SHA256 x"}, "X-Amz-Date": {"20200101T000000Z"},
			"X-Amz-Security-Token": {"t"}, "X-Amz-Content-Sha256": tc.payload, "X-Amz-Meta-A": {"kept"}}
		hold := New("AKIAIOSFODNN7EXAMPLE", "secret-key", "eu-west-1", "s3").Strip(h)
		want := 1
		if !tc.hold {
			want = 2
		}
		if hold != tc.hold || len(h) != want || h.Get("X-Amz-Meta-A") != "kept" {
			t.Errorf("%q: hold %v, left %v", tc.payload, hold, h)
		}
	}
}

// Sign sets the payload hash of the body, or the unsigned one Strip
// kept, and a signature of the pair at the time.
func TestSign(t *testing.T) {
	s := New("AKIAIOSFODNN7EXAMPLE", "secret-key", "eu-west-1", "sts")
	s.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	req, _ := http.NewRequest("POST", "https://sts.eu-west-1.amazonaws.com/", strings.NewReader("Action=GetCallerIdentity"))
	if err := s.Sign(req, []byte("Action=GetCallerIdentity")); err != nil {
		t.Fatal(err)
	}
	h, sum := req.Header, sha256.Sum256([]byte("Action=GetCallerIdentity"))
	if h.Get("X-Amz-Date") != "20260102T030405Z" || h.Get("X-Amz-Content-Sha256") != hex.EncodeToString(sum[:]) ||
		!strings.HasPrefix(h.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260102/eu-west-1/sts/aws4_request, SignedHeaders=content-length;host;x-amz-content-sha256;x-amz-date, Signature=") {
		t.Errorf("signed %v", h)
	}
	req.Header = http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}
	if err := s.Sign(req, nil); err != nil || req.Header.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" {
		t.Errorf("unsigned: %v %v", req.Header, err)
	}
}
