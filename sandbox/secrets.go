package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/egress"
	"github.com/cruciblehq/crucible/policy/netpolicy"
	"github.com/cruciblehq/crucible/secrets"
	"github.com/cruciblehq/crucible/secrets/sigv4"
	"github.com/cruciblehq/crucible/violation"
)

// Secrets are a configuration's credentials, read once from their sources
// by [LoadSecrets], with what every execution needs to let its code use
// them without holding them: the hosts each may go to (its own and its
// APIs') and the roots that verify those hosts. They also carry the APIs'
// method and path rules, which need the same CA: a host with rules has its
// TLS terminated, secrets or not (apis.go). Hand the same Secrets to every execution ([Options],
// [PoolOptions]); each one gets placeholders of its own, sees
// NAME=<placeholder> in its environment, may reach the secrets' hosts, and
// trusts the process's CA, with which the network stack terminates TLS to
// those hosts to put the real values in. An aws_sigv4 secret's key pair is
// never put in: the jail sees NAME_ACCESS_KEY_ID and
// NAME_SECRET_ACCESS_KEY, placeholders, and the network stack signs the
// requests to its hosts (sigv4). It is safe for concurrent use.
type Secrets struct {
	values  map[string][]byte            // by the variable that holds each placeholder
	hosts   map[string]*netpolicy.Policy // which destinations each secret may go to
	swap    []string                     // the secrets swapped for placeholders, sorted,
	where   map[string]egress.Where      // and where in a request to their hosts
	sign    []string                     // the secrets that sign (aws_sigv4), sorted,
	signers map[string]*sigv4.Signer     // and what signs with their keys
	rules   []string                     // every secret's host rules, allowed implicitly
	roots   *x509.CertPool               // nil: the system roots
	ca      *egress.CA
	bundle  []byte     // the jail's trust: the host's certificates and ca's
	apis    []apiRules // the APIs' rules, judged on their hosts
}

// LoadSecrets reads the value of each of cfg's secrets from its source
// (env:VAR from this process's environment; file:PATH, one trailing
// newline dropped) and network.upstream_ca. It returns nil when cfg has no
// secrets and no API with rules. Its errors are one line and name the setting, never a value or
// a secret file's path. Call it once, when Crucible starts: a source that
// changes later is not read again.
func LoadSecrets(cfg *config.Config) (*Secrets, error) {
	if len(cfg.Secrets) == 0 && !hasRules(cfg) {
		return nil, nil
	}
	// The rules first: a rule that does not compile is named before any
	// source is read.
	s := &Secrets{values: map[string][]byte{}, where: map[string]egress.Where{}, signers: map[string]*sigv4.Signer{}}
	var err error
	if s.apis, s.hosts, err = compileSecretRules(cfg); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Secrets)) {
		sec := cfg.Secrets[name]
		// Those of its APIs are allowed with the APIs (apiNetwork).
		s.rules = append(s.rules, sec.Hosts...)
		at := config.KeyPath("secrets", -1, name)
		if sec.Kind == config.KindAWSSigV4 {
			if err := s.loadSigner(name, &sec, at); err != nil {
				return nil, err
			}
			continue
		}
		v, err := readValue(sec.From, at+".from")
		if err != nil {
			return nil, err
		}
		s.values[name] = v
		s.swap = append(s.swap, name)
		s.where[name] = where(&sec)
	}
	// Drawing placeholders once checks what only a whole set can tell
	// (two secrets with one value).
	if _, err := secrets.New(s.values); err != nil {
		return nil, err
	}
	if f := cfg.Network.UpstreamCA; f != "" {
		if s.roots, err = upstreamRoots(f); err != nil {
			return nil, fmt.Errorf("network.upstream_ca: %w", err)
		}
	}
	if s.ca, s.bundle, err = processCA(); err != nil {
		return nil, err
	}
	return s, nil
}

// readValue reads a value from its source, the setting at, within the
// bounds of a value swapped for a placeholder. Its errors name the
// setting, never the value or the file's path.
func readValue(from, at string) ([]byte, error) {
	v, err := readSource(from)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", at, err)
	case len(v) < secrets.MinLen:
		return nil, fmt.Errorf("%s: the value is shorter than %d bytes, too short to replace safely", at, secrets.MinLen)
	case len(v) > secrets.MaxLen:
		return nil, fmt.Errorf("%s: the value is longer than %d bytes", at, secrets.MaxLen)
	}
	return v, nil
}

// Compiled on first use, not by every process of the binary at its start.
var accessKeyID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\w{16,128}$`) })

// loadSigner reads the key pair of the aws_sigv4 secret name, at at: the
// jail holds a placeholder of each (in NAME_ACCESS_KEY_ID and
// NAME_SECRET_ACCESS_KEY), and the network stack signs with the pair.
// Both are redacted as any value is; neither is ever swapped in.
func (s *Secrets) loadSigner(name string, sec *config.Secret, at string) error {
	id, err := readValue(sec.AccessKeyID.From, at+".access_key_id.from")
	if err != nil {
		return err
	}
	if !accessKeyID().Match(id) {
		return fmt.Errorf("%s.access_key_id.from: the value is not an access key id: 16 to 128 letters, digits or _", at)
	}
	key, err := readValue(sec.SecretAccessKey.From, at+".secret_access_key.from")
	if err != nil {
		return err
	}
	s.values[name+config.AccessKeyIDVar] = id
	s.values[name+config.SecretAccessKeyVar] = key
	s.sign = append(s.sign, name)
	s.signers[name] = sigv4.New(string(id), string(key), sec.Region, sec.Service)
	return nil
}

// ReadSource reads a value from a source as a secret's is read ("env:VAR"
// or "file:/path"): a client's bearer token, say. Its errors name neither
// the value nor the file's path (the caller names the setting).
func ReadSource(from string) ([]byte, error) { return readSource(from) }

// readSource reads a value. Its errors name neither the value nor the
// file's path (the caller names the setting).
func readSource(from string) ([]byte, error) {
	kind, arg, _ := strings.Cut(from, ":")
	switch kind {
	case "env":
		v := os.Getenv(arg)
		if v == "" {
			return nil, fmt.Errorf("the environment variable %s is not set, or empty", arg)
		}
		return []byte(v), nil
	case "file":
		b, err := readFile(arg)
		if err != nil {
			return nil, err
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		if len(b) == 0 {
			return nil, errors.New("the file is empty")
		}
		return b, nil
	}
	return nil, errors.New("must be env:VAR or file:/absolute/path")
}

// readFile reads the file at path. Its error does not name the path,
// which is the operator's and none of the model's business.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("the file cannot be read: %w", err)
	}
	return b, nil
}

// secretPolicy compiles a secret's host rules as an allow list beside the
// network's private ranges (so that a literal address allowed there may
// carry the secret too).
func secretPolicy(n *config.Network, hosts []string) (*netpolicy.Policy, error) {
	r := netpolicy.Rules{Allow: hosts}
	for _, c := range n.AllowPrivate {
		if p, err := netip.ParsePrefix(c); err == nil {
			r.AllowPrivate = append(r.AllowPrivate, p)
		}
	}
	return netpolicy.Compile(r)
}

// secretRuleError names a host rule that does not compile by its key, as
// the file does, with its line.
func secretRuleError(cfg *config.Config, at string, err error) error {
	var re *netpolicy.RuleError
	if !errors.As(err, &re) {
		return fmt.Errorf("%s.hosts: %w", at, err)
	}
	return keyError(cfg, config.KeyPath(at+".hosts", re.Index, ""), "%q: %v", re.Rule, re.Err)
}

// checkSecrets checks what config cannot of the secrets and the APIs: that
// their host rules and the APIs' rules compile.
func checkSecrets(cfg *config.Config) error {
	_, _, err := compileSecretRules(cfg)
	return err
}

// compileSecretRules compiles the APIs' rules, and the hosts each secret
// may go to: its own and its APIs'.
func compileSecretRules(cfg *config.Config) ([]apiRules, map[string]*netpolicy.Policy, error) {
	apis, err := compileAPIs(cfg)
	if err != nil {
		return nil, nil, err
	}
	hosts := map[string]*netpolicy.Policy{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Secrets)) {
		p, err := secretPolicy(&cfg.Network, cfg.SecretHosts(name))
		if err != nil {
			return nil, nil, secretRuleError(cfg, config.KeyPath("secrets", -1, name), err)
		}
		hosts[name] = p
	}
	return apis, hosts, nil
}

// upstreamRoots are the system roots and the certificates of the PEM file
// at path.
func upstreamRoots(path string) (*x509.CertPool, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(b) {
		return nil, errors.New("the file holds no PEM certificate")
	}
	return roots, nil
}

// The CA of this process, made on first use and never written anywhere:
// every execution with secrets trusts it.
var caOnce = sync.OnceValues(func() (*caBundle, error) {
	ca, err := egress.NewCA()
	if err != nil {
		return nil, err
	}
	return &caBundle{ca, append(hostCerts(), ca.PEM()...)}, nil
})

type caBundle struct {
	ca     *egress.CA
	bundle []byte
}

func processCA() (*egress.CA, []byte, error) {
	b, err := caOnce()
	if err != nil {
		return nil, nil, err
	}
	return b.ca, b.bundle, nil
}

// hostBundles are where Linux distributions keep the system's trusted
// certificates as one PEM file; the first found is the jail's, with the
// CA added.
var hostBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",             // openSUSE
	"/etc/ssl/cert.pem",                  // Alpine, macOS
}

// hostCerts are the host's trusted certificates, PEM, and nothing else of
// the file that holds them.
func hostCerts() []byte {
	for _, f := range hostBundles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var out []byte
		for {
			var blk *pem.Block
			if blk, b = pem.Decode(b); blk == nil {
				break
			}
			if blk.Type == "CERTIFICATE" {
				out = append(out, pem.EncodeToMemory(&pem.Block{Type: blk.Type, Bytes: blk.Bytes})...)
			}
		}
		return out
	}
	return nil
}

// trustFile is where the jail finds the certificates it trusts, the CA's
// among them; the variables below point there, and the host's bundles
// show it too.
const trustFile = "/crucible/tls/ca-certificates.crt"

// trustEnv are the variables by which the usual runtimes find trustFile.
var trustEnv = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "DENO_CERT"}

// execSecrets are one execution's secrets: its placeholders.
type execSecrets struct {
	*Secrets
	set *secrets.Set
}

// forExecution draws an execution's placeholders.
func (s *Secrets) forExecution() (*execSecrets, error) {
	set, err := secrets.New(s.values)
	if err != nil {
		return nil, err
	}
	return &execSecrets{s, set}, nil
}

// egress is what the network stack needs of them.
func (e *execSecrets) egress() *egress.Secrets {
	return &egress.Secrets{Set: e.set, For: e.forHost, Where: e.whereIn, Signer: e.signerFor, CA: e.ca, Roots: e.roots}
}

// whereIn is where in a request secret may go.
func (e *execSecrets) whereIn(secret string) egress.Where { return e.where[secret] }

// where is what the network stack makes of a secret's in and headers.
func where(s *config.Secret) egress.Where {
	var w egress.Where
	for _, p := range s.Where() {
		switch p {
		case egress.InHeader:
			w.Header = true
		case egress.InQuery:
			w.Query = true
		case egress.InPath:
			w.Path = true
		case egress.InBody:
			w.Body = true
		}
	}
	for _, h := range s.Headers {
		w.Headers = append(w.Headers, http.CanonicalHeaderKey(h))
	}
	return w
}

// forHost names the secrets that name:port may receive.
func (e *execSecrets) forHost(name string, port uint16) []string {
	var names []string
	for _, n := range e.swap {
		if e.mayGo(n, name, port) {
			names = append(names, n)
		}
	}
	return names
}

// signerFor returns what signs the requests to name:port, and the secret
// whose key it signs with: of those whose hosts name it, the first by
// name.
func (e *execSecrets) signerFor(name string, port uint16) (string, egress.Signer) {
	for _, n := range e.sign {
		if e.mayGo(n, name, port) {
			return n, e.signers[n]
		}
	}
	return "", nil
}

// mayGo reports whether secret may go to name:port.
func (e *execSecrets) mayGo(secret, name string, port uint16) bool {
	return e.hosts[secret].Decide(context.Background(), netpolicy.Request{Name: name, Port: port}).Allow
}

// network is n with the secrets' hosts allowed: an execution with secrets
// has a network even if n allows nothing else.
func (e *execSecrets) network(n *config.Network) *config.Network {
	m := *n
	m.Allow = append(slices.Clone(n.Allow), e.rules...)
	return &m
}

// env is what the secrets add to the jail's environment: each secret's
// placeholder, and where the trusted certificates are.
func (e *execSecrets) env() map[string]string {
	env := map[string]string{}
	for _, n := range e.set.Names() {
		env[n], _ = e.set.Placeholder(n)
	}
	for _, k := range trustEnv {
		env[k] = trustFile
	}
	return env
}

// redact turns the real values in t back into placeholders.
func (e *execSecrets) redact(t string) string {
	if e == nil {
		return t
	}
	return e.set.RedactString(t)
}

// redactViolations turns the real values in vs' hosts and reasons back
// into placeholders.
func (e *execSecrets) redactViolations(vs []violation.Violation) {
	if e == nil {
		return
	}
	for i := range vs {
		vs[i].Host, vs[i].Reason = e.redact(vs[i].Host), e.redact(vs[i].Reason)
	}
}

// redactErr is err with the real values in its text turned into
// placeholders: the same error when there are none, so that callers can
// still tell what it is.
func (e *execSecrets) redactErr(err error) error {
	if e == nil || err == nil {
		return err
	}
	var se *SetupError
	if errors.As(err, &se) {
		se.Msg, se.Fix, se.Detail = e.redact(se.Msg), e.redact(se.Fix), e.redact(se.Detail)
	}
	if t := err.Error(); e.redact(t) != t {
		return errors.New(e.redact(t))
	}
	return err
}

// setEnv sets the variables of env in spec's environment, over any of the
// same name, keeping it sorted.
func setEnv(envList []string, env map[string]string) []string {
	out := slices.DeleteFunc(slices.Clone(envList), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		_, ok := env[k]
		return ok
	})
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// redactor passes what is written on to w with the real values turned
// into placeholders, as a stream: a value cut across writes is found
// whole. What may begin a value is held back until the rest arrives, or
// until close.
type redactor struct {
	pw   *io.PipeWriter
	done chan struct{}
}

func newRedactor(set *secrets.Set, w io.Writer) *redactor {
	pr, pw := io.Pipe()
	r := &redactor{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_, err := io.Copy(w, set.ReverseReader(pr))
		// A writer that failed fails the writes, as it would have unwrapped.
		pr.CloseWithError(cmp.Or(err, io.ErrClosedPipe))
	}()
	return r
}

func (r *redactor) Write(p []byte) (int, error) { return r.pw.Write(p) }

// close writes what was held back, and waits until it is written.
func (r *redactor) close() {
	_ = r.pw.Close()
	<-r.done
}
