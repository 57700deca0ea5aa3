package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Secret is a credential that the code uses by name without ever holding
// it: the jail sees NAME=<placeholder>, and the network stack puts the real
// value in place of the placeholder only in TLS requests to Hosts. Its
// name, the key in Config.Secrets, is an environment variable name.
//
// A secret of Kind "aws_sigv4" is a key pair that signs instead: the jail
// sees NAME_ACCESS_KEY_ID and NAME_SECRET_ACCESS_KEY, both placeholders
// (a secret named AWS gives the AWS SDKs' own variables), and the network
// stack signs every TLS request to Hosts with the real pair (AWS Signature
// Version 4), over whatever signature the code made.
type Secret struct {
	// Kind is "" (a value swapped for its placeholder) or "aws_sigv4".
	Kind string `yaml:"kind,omitempty"`
	// From says where Crucible reads the value: "env:VAR" (Crucible's own
	// environment) or "file:PATH" (an absolute path; one trailing newline
	// is dropped). Crucible reads it when it starts; the code never can.
	From string `yaml:"from,omitempty"`
	// Hosts are the only destinations that receive the real value, in the
	// rule syntax of network.allow; each is allowed implicitly.
	Hosts []string `yaml:"hosts"`
	// In says where in a request to Hosts the value may go: "header"
	// (the default), "query", "path", "body". A placeholder anywhere else
	// goes as it is, and is a violation.
	In []string `yaml:"in,omitempty"`
	// Headers narrows "header" to these header names (any case); empty:
	// any header.
	Headers []string `yaml:"headers,omitempty"`

	// Of an aws_sigv4 secret: the region and service its signatures are
	// for ("eu-west-1", "s3"), and where its key pair is read from.
	Region          string       `yaml:"region,omitempty"`
	Service         string       `yaml:"service,omitempty"`
	AccessKeyID     SecretSource `yaml:"access_key_id,omitempty"`
	SecretAccessKey SecretSource `yaml:"secret_access_key,omitempty"`
}

// SecretSource is where one value of a secret is read from, as
// Secret.From says.
type SecretSource struct {
	From string `yaml:"from,omitempty"`
}

// Kinds of secret.
const (
	KindValue    = ""          // a value swapped for its placeholder
	KindAWSSigV4 = "aws_sigv4" // a key pair that signs requests
)

// Suffixes of the variables an aws_sigv4 secret NAME sets in the jail.
const (
	AccessKeyIDVar     = "_ACCESS_KEY_ID"
	SecretAccessKeyVar = "_SECRET_ACCESS_KEY"
)

// Vars are the environment variables the secret called name sets in the
// jail.
func (s *Secret) Vars(name string) []string {
	if s.Kind == KindAWSSigV4 {
		return []string{name + AccessKeyIDVar, name + SecretAccessKeyVar}
	}
	return []string{name}
}

// Places are where a secret's value may go in a request.
var Places = []string{"header", "query", "path", "body"}

// Where is s.In, or its default: headers only.
func (s *Secret) Where() []string {
	if len(s.In) == 0 {
		return []string{"header"}
	}
	return s.In
}

// splitSource splits a source into its kind ("env" or "file") and its
// argument.
func splitSource(from string) (kind, arg string) {
	kind, arg, _ = strings.Cut(from, ":")
	return kind, arg
}

// checkSource checks a source's syntax (at names its key).
func checkSource(at, from string) error {
	switch kind, arg := splitSource(from); {
	case kind == "env" && envName().MatchString(arg):
	case kind == "file" && arg != "" && !strings.Contains(arg, "\x00") && filepath.IsAbs(arg):
	default:
		// Not quoted: it may be the value itself, written by mistake.
		return fieldErrorf(at, "must be env:VAR or file:/absolute/path")
	}
	return nil
}

// cleanSource is from with its file's path cleaned.
func cleanSource(from string) string {
	if kind, arg := splitSource(from); kind == "file" && arg != "" {
		return "file:" + filepath.Clean(arg)
	}
	return from
}

func (c *Config) validateSecrets() error {
	vars := map[string]string{} // variable → the secret that sets it
	for _, name := range slices.Sorted(maps.Keys(c.Secrets)) {
		s := c.Secrets[name]
		at := mapPath("secrets", name)
		if !envName().MatchString(name) {
			return fieldErrorf(at, "the name must be an environment variable name: letters, digits and _, not starting with a digit")
		}
		for _, v := range s.Vars(name) {
			if _, ok := defaultEnvNames[v]; ok {
				return fieldErrorf(at, "%s is set by the sandbox itself; choose another name", quote(v))
			}
			if _, ok := c.Sandbox.Env[v]; ok {
				return fieldErrorf(at, "%s is also set in sandbox.env; a variable is one or the other", quote(v))
			}
			if other, ok := vars[v]; ok {
				return fieldErrorf(at, "%s is also set by %s; a variable is one or the other", quote(v), mapPath("secrets", other))
			}
			vars[v] = name
		}
		var err error
		switch s.Kind {
		case KindValue:
			err = checkSource(at+".from", s.From)
		case KindAWSSigV4:
			err = s.validateSigV4(at)
		default:
			err = fieldErrorf(at+".kind", "%s is not a kind of secret: want aws_sigv4, or nothing", quote(s.Kind))
		}
		if err != nil {
			return err
		}
		if len(c.SecretHosts(name)) == 0 {
			return fieldErrorf(at+".hosts", "must name at least one host that may receive the secret (or an api must list it)")
		}
		if err := checkHostRules(at+".hosts", s.Hosts); err != nil {
			return err
		}
		for i, p := range s.In {
			if !slices.Contains(Places, p) {
				return fieldErrorf(fmt.Sprintf("%s.in[%d]", at, i), "%s is not a place: want %s", quote(p), strings.Join(Places, ", "))
			}
		}
		if len(s.Headers) > 0 && !slices.Contains(s.Where(), "header") {
			return fieldErrorf(at+".headers", "names headers, but in does not allow header")
		}
		for i, h := range s.Headers {
			if !headerName().MatchString(h) {
				return fieldErrorf(fmt.Sprintf("%s.headers[%d]", at, i), "%s is not a header name", quote(h))
			}
		}
	}
	return nil
}

// Compiled on first use, not by every process of the binary at its start.
var scopeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) })

// validateSigV4 checks what an aws_sigv4 secret at needs, and that it has
// nothing of a swapped value's.
func (s *Secret) validateSigV4(at string) error {
	for _, f := range []struct {
		key string
		set bool
	}{{"from", s.From != ""}, {"in", len(s.In) > 0}, {"headers", len(s.Headers) > 0}} {
		if f.set {
			return fieldErrorf(at+"."+f.key, "is for a secret whose value is swapped; an aws_sigv4 secret signs with access_key_id and secret_access_key")
		}
	}
	for _, f := range []struct{ key, v, eg string }{{"region", s.Region, "eu-west-1"}, {"service", s.Service, "s3"}} {
		if !scopeName().MatchString(f.v) {
			return fieldErrorf(at+"."+f.key, "must be a lowercase name of letters, digits and - (e.g. %s), not %s", f.eg, quote(f.v))
		}
	}
	if err := checkSource(at+".access_key_id.from", s.AccessKeyID.From); err != nil {
		return err
	}
	return checkSource(at+".secret_access_key.from", s.SecretAccessKey.From)
}

// checkHostRules checks what config can of a list of host rules at path
// (their syntax is the sandbox's to check): none empty, each on one line.
func checkHostRules(path string, hosts []string) error {
	for i, h := range hosts {
		if h == "" || strings.ContainsAny(h, "\x00\r\n") {
			return fieldErrorf(fmt.Sprintf("%s[%d]", path, i), "%s is not a host rule", quote(h))
		}
	}
	return nil
}

// defaultEnvNames are the variables the sandbox sets in every jail, and in
// a jail with secrets (where the trusted certificates are), which a secret
// may not shadow.
var defaultEnvNames = map[string]struct{}{"PATH": {}, "HOME": {}, "LANG": {}, "TMPDIR": {}, "USER": {},
	"SSL_CERT_FILE": {}, "REQUESTS_CA_BUNDLE": {}, "NODE_EXTRA_CA_CERTS": {}, "DENO_CERT": {}}

func (c *Config) normalizeSecrets() {
	for name, s := range c.Secrets {
		s.From = cleanSource(s.From)
		s.AccessKeyID.From = cleanSource(s.AccessKeyID.From)
		s.SecretAccessKey.From = cleanSource(s.SecretAccessKey.From)
		c.Secrets[name] = s
	}
}
