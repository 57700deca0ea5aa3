package e2e

// Signed requests, for real: curl (signing with the placeholders, as an
// AWS SDK would) and python3 (not signing at all) inside a jail call a
// loopback TLS server that checks every request's AWS Signature Version
// 4 the way AWS does. The jail holds placeholders of the key pair only.

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cruciblehq/crucible/sandbox"
	"github.com/cruciblehq/crucible/secrets/sigv4/sigv4test"
)

// The key pair, as Crucible reads it from its environment.
var awsPair = sigv4test.Key{ID: "AKIAZ7Q3CRUCIBLE0TEST", Secret: "q8Vv/Zr2+Kd9sLpT0xWm4YhNcE6bJ1uFgR3aQ7oX", Region: "eu-west-1", Service: "s3"}

// reverse is s backwards: how the test hands the jail a value to look
// for, which the sandbox itself never gives it.
func reverse(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// The jail's environment holds placeholders under the SDKs' names, and
// neither it nor any file holds a part of the secret access key. curl
// signs its PUT with those placeholders (an SDK's signature, made with a
// key that is not one), python3 sends its POST unsigned; the host gets
// both signed with the real pair, checks the signatures, and answers. The
// receipt lists both; no value is in the output, the result or the audit
// trail.
func TestSigV4Signed(t *testing.T) {
	requireRoot(t)
	needCurlPython(t)
	f := newNetFix(t)
	t.Setenv("CRUCIBLE_TEST_AWS_ID", awsPair.ID)
	t.Setenv("CRUCIBLE_TEST_AWS_KEY", awsPair.Secret)
	ca, caKey, caPEM := testCA(t)
	caFile := filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	checked := map[string]error{}
	got := map[string]http.Header{}
	s3 := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := sigv4test.Verify(r, body, awsPair)
		mu.Lock()
		checked[r.URL.Path], got[r.URL.Path] = err, r.Header.Clone()
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		fmt.Fprintf(w, "verified %d bytes\n", len(body))
	}), &tls.Config{Certificates: []tls.Certificate{leafCert(t, ca, caKey, svcName)}})
	audit := filepath.Join(t.TempDir(), "audit.ndjson")
	flags := append(f.config(t, fmt.Sprintf(`network:
  hosts: {%[1]s: 127.0.0.1}
  allow_private: [127.0.0.0/8]
  resolver: %[2]s
  upstream_ca: %[3]s
secrets:
  AWS:
    kind: aws_sigv4
    hosts: [%[1]s:%[4]d]
    region: eu-west-1
    service: s3
    access_key_id: {from: env:CRUCIBLE_TEST_AWS_ID}
    secret_access_key: {from: env:CRUCIBLE_TEST_AWS_KEY}
`, svcName, f.dns, caFile, s3)), "--audit", audit)
	r := jailed(t, flags, "/bin/sh", "-c", fmt.Sprintf(`set -e
echo "id: $AWS_ACCESS_KEY_ID"
echo "key: $AWS_SECRET_ACCESS_KEY"
curl -sS --aws-sigv4 aws:amz:eu-west-1:s3 --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -X PUT --data-binary 'hello, bucket' "https://%[1]s:%[2]d/bucket/curl?x-id=PutObject"
/usr/bin/python3 -c 'import sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=b"x" * 100000, method="POST")
print(urllib.request.urlopen(req, timeout=10).read().decode(), end="")' https://%[1]s:%[2]d/bucket/py
K=$(printf %%s "$1" | rev)
I=$(printf %%s "$2" | rev)
[ "$AWS_SECRET_ACCESS_KEY" != "$K" ] && [ "$AWS_ACCESS_KEY_ID" != "$I" ]
set -- -e "$I"
for i in $(seq 1 4 29); do set -- "$@" -e "$(printf %%s "$K" | cut -c$i-$((i+11)))"; done
echo "files: $(grep -rlF "$@" /etc /crucible /tmp /workspace /proc/self/environ /proc/1/environ 2>/dev/null | tr '\n' ' ')"
`, svcName, s3), "sh", reverse(awsPair.Secret), reverse(awsPair.ID))
	noPair(t, r, audit)
	if r.ExitCode != 0 || len(r.Violations) != 0 {
		t.Fatalf("the calls failed:\n%s", dump(r))
	}
	for _, w := range []string{"verified 13 bytes\n", "verified 100000 bytes\n", "files: \n"} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("the jail's output lacks %q:\n%s", w, r.Stdout)
		}
	}
	var id, key string
	for line := range strings.Lines(r.Stdout) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "key: "); ok {
			key = v
		}
	}
	if len(id) != len(awsPair.ID) || len(key) != len(awsPair.Secret) {
		t.Errorf("the placeholders %q and %q: want the values' lengths", id, key)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"/bucket/curl", "/bucket/py"} {
		if err, ok := checked[p]; !ok || err != nil {
			t.Errorf("%s: checked %v, %v", p, ok, err)
		}
	}
	if auth := got["/bucket/curl"].Get("Authorization"); strings.Contains(auth, id) {
		t.Errorf("the host got curl's own signature: %s", auth)
	}
	want := []sandbox.SecretUse{
		{Name: "AWS", Host: svcName, Method: "PUT", Path: "/bucket/curl", Where: "signature", Count: 1},
		{Name: "AWS", Host: svcName, Method: "POST", Path: "/bucket/py", Where: "signature", Count: 1},
	}
	if fmt.Sprint(r.Secrets) != fmt.Sprint(want) {
		t.Errorf("the receipt %+v, want %+v", r.Secrets, want)
	}
	trail, _ := os.ReadFile(audit)
	if !strings.Contains(string(trail), `"secrets":["AWS"],"method":"PUT","path":"/bucket/curl","where":"signature"`) {
		t.Errorf("the audit trail lacks the signature:\n%s", trail)
	}
}

// noPair fails t if the key pair shows in the result or the audit trail,
// in any form a reader would recognise.
func noPair(t *testing.T, r *sandbox.Result, audit string) {
	t.Helper()
	res, _ := json.Marshal(r)
	trail, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{awsPair.ID, awsPair.Secret} {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), fmt.Sprintf("%x", v)} {
			if strings.Contains(string(res), form) {
				t.Errorf("the result holds a value of the pair:\n%s", dump(r))
			}
			if strings.Contains(string(trail), form) {
				t.Errorf("the audit trail holds a value of the pair:\n%s", trail)
			}
		}
	}
}
