package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// Deno's npm: imports go out through the egress as any request does, under
// the same rules. With the registry's host allowed (a registry of the
// test's own on loopback, named registry.npmjs.org, trusted through
// DENO_CERT), the package is fetched into the jail's cache and runs; with
// it not allowed, the import fails, nothing reaches the registry, and the
// refused lookup is a violation naming the registry's host.
func TestDenoNPMThroughEgress(t *testing.T) {
	requireRoot(t)
	requireDeno(t)
	const registry = "registry.npmjs.org"
	tgz := npmTarball(t, map[string]string{
		"package/package.json": `{"name": "leftpad-test", "version": "1.0.0", "main": "index.js"}`,
		"package/index.js":     `module.exports = (s, n) => String(s).padStart(n, "*");`,
	})
	sum := sha512.Sum512(tgz)
	var hits atomic.Int64
	var port int
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/leftpad-test":
			tarball := fmt.Sprintf("https://%s:%d/leftpad-test/-/leftpad-test-1.0.0.tgz", registry, port)
			_ = json.NewEncoder(w).Encode(map[string]any{
				"name": "leftpad-test", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{
					"name": "leftpad-test", "version": "1.0.0",
					"dist": map[string]string{"tarball": tarball, "integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:])},
				}},
			})
		case "/leftpad-test/-/leftpad-test-1.0.0.tgz":
			_, _ = w.Write(tgz)
		default:
			http.NotFound(w, r)
		}
	})
	dir := testenv.PublicDir(t)
	cert, pemBytes := caSigned(t, registry)
	ca := filepath.Join(dir, "registry-ca.pem")
	if err := os.WriteFile(ca, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	port = serve(t, h, &tls.Config{Certificates: []tls.Certificate{cert}})
	run := func(yaml string) *sandbox.Result {
		t.Helper()
		cfg := filepath.Join(t.TempDir(), "crucible.yaml")
		if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return jsonRun(t, "import pad from \"npm:leftpad-test@1.0.0\";\nexport default pad(\"x\", 3);\n",
			"run", "--json", "--config", cfg, "--ro", dir, "--timeout", "60s",
			"--env", "DENO_CERT="+ca, "--env", fmt.Sprintf("NPM_CONFIG_REGISTRY=https://%s:%d/", registry, port),
			"--lang", "deno", "-")
	}

	r := run(fmt.Sprintf("network:\n  allow: [%[1]s:%[2]d]\n  hosts:\n    %[1]s: 127.0.0.1\n  allow_private: [127.0.0.0/8]\n", registry, port))
	if r.ExitCode != 0 || string(r.Result) != `"**x"` || hits.Load() < 2 {
		t.Fatalf("the registry allowed: %d requests reached it\n%s", hits.Load(), dump(r))
	}

	before := hits.Load()
	r = run("")
	if r.ExitCode == 0 || r.Result != nil || hits.Load() != before {
		t.Errorf("the registry not allowed: %d requests reached it\n%s", hits.Load()-before, dump(r))
	}
	if netViolation(r, "dns", registry) == nil {
		t.Errorf("no refused lookup of %s:\n%s", registry, dump(r))
	}
}

// caSigned is a certificate for name signed by a CA of its own, and the
// CA's certificate, PEM: rustls, Deno's TLS, takes no CA as a server's
// certificate (selfSigned's).
func caSigned(t *testing.T, name string) (tls.Certificate, []byte) {
	t.Helper()
	ca, caPEM := issue(t, "crucible test CA", nil)
	cert, _ := issue(t, name, &ca)
	return cert, caPEM
}

// npmTarball is an npm package's tarball of files, by path.
func npmTarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for name, text := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(text)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
