package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// Validity of what a CA signs. A leaf lives a day and is minted again when
// it has less than an hour left; both start an hour back, for a jail whose
// clock is a little behind the host's.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 24 * time.Hour
	leafRenew    = time.Hour
	clockSkew    = time.Hour
	// maxLeaves bounds the cache: past it, the cache starts over.
	maxLeaves = 4096
)

// CA is the certificate authority the jail is made to trust for the
// connections the stack terminates. It lives in memory only: its key is
// never written anywhere, so it dies with the process that made it. It is
// safe for concurrent use.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// NewCA makes a CA. One per Crucible process is enough: every jail trusts
// it, and each one sees only the leaves for the names it may reach.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress: making the CA's key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Crucible sandbox CA", Organization: []string{"Crucible"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // it signs leaves only
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("egress: making the CA's certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress: making the CA's certificate: %w", err)
	}
	return &CA{
		cert:   cert,
		key:    key,
		pem:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves: map[string]*tls.Certificate{},
	}, nil
}

// PEM is the CA's certificate, PEM-encoded: what the jail's trust bundle
// holds. It holds no key.
func (c *CA) PEM() []byte { return append([]byte(nil), c.pem...) }

// leaf returns a certificate for name, from the cache while it has long
// enough to live.
func (c *CA) leaf(name string) (*tls.Certificate, error) {
	now := time.Now()
	c.mu.Lock()
	l := c.leaves[name]
	c.mu.Unlock()
	if l != nil && now.Add(leafRenew).Before(l.Leaf.NotAfter) {
		return l, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(leafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	l = &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
	c.mu.Lock()
	if len(c.leaves) >= maxLeaves {
		c.leaves = map[string]*tls.Certificate{}
	}
	c.leaves[name] = l
	c.mu.Unlock()
	return l, nil
}

// serial is a random certificate serial number of 128 bits.
func serial() *big.Int {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	b[0] &= 0x7f        // positive
	return new(big.Int).SetBytes(b)
}
