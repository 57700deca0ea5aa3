package egress

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
)

// TestCALeaf: a leaf verifies against the CA's PEM for its own name only,
// and the PEM holds the certificate alone, no key.
func TestCALeaf(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.PEM()) {
		t.Fatal("the CA's PEM holds no certificate")
	}
	for rest := ca.PEM(); ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			t.Errorf("the CA's PEM holds a %s", b.Type)
		}
	}
	l, err := ca.leaf("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	opts := x509.VerifyOptions{Roots: roots, DNSName: "api.example.com"}
	if _, err := l.Leaf.Verify(opts); err != nil {
		t.Errorf("the leaf does not verify: %v", err)
	}
	opts.DNSName = "other.example.com"
	if _, err := l.Leaf.Verify(opts); err == nil {
		t.Error("the leaf verifies for another name")
	}
	if again, _ := ca.leaf("api.example.com"); again != l {
		t.Error("the leaf was minted again, not cached")
	}
	other, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	opts = x509.VerifyOptions{Roots: x509.NewCertPool(), DNSName: "api.example.com"}
	opts.Roots.AppendCertsFromPEM(other.PEM())
	if _, err := l.Leaf.Verify(opts); err == nil {
		t.Error("the leaf verifies against another CA")
	}
}
