package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Secret is a credential that the code uses by name without ever holding
// it: the jail sees NAME=<placeholder>, and the network stack puts the real
// value in place of the placeholder only in TLS requests to Hosts. Its
// name, the key in Config.Secrets, is an environment variable name.
type Secret struct {
	// From says where Crucible reads the value: "env:VAR" (Crucible's own
	// environment) or "file:PATH" (an absolute path; one trailing newline
	// is dropped). Crucible reads it when it starts; the code never can.
	From string `yaml:"from"`
	// Hosts are the only destinations that receive the real value, in the
	// rule syntax of network.allow; each is allowed implicitly.
	Hosts []string `yaml:"hosts"`
	// In says where in a request to Hosts the value may go: "header"
	// (the default), "query", "path", "body". A placeholder anywhere else
	// goes as it is, and is a violation.
	In []string `yaml:"in"`
	// Headers narrows "header" to these header names (any case); empty:
	// any header.
	Headers []string `yaml:"headers"`
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

// Source splits From into its kind ("env" or "file") and its argument.
func (s *Secret) Source() (kind, arg string) {
	kind, arg, _ = strings.Cut(s.From, ":")
	return kind, arg
}

func (c *Config) validateSecrets() error {
	for _, name := range slices.Sorted(maps.Keys(c.Secrets)) {
		s := c.Secrets[name]
		at := mapPath("secrets", name)
		if !envName().MatchString(name) {
			return fieldErrorf(at, "the name must be an environment variable name: letters, digits and _, not starting with a digit")
		}
		if _, ok := defaultEnvNames[name]; ok {
			return fieldErrorf(at, "%s is set by the sandbox itself; choose another name", quote(name))
		}
		if _, ok := c.Sandbox.Env[name]; ok {
			return fieldErrorf(at, "%s is also set in sandbox.env; a variable is one or the other", quote(name))
		}
		switch kind, arg := s.Source(); {
		case kind == "env" && envName().MatchString(arg):
		case kind == "file" && arg != "" && !strings.Contains(arg, "\x00") && filepath.IsAbs(arg):
		default:
			// Not quoted: it may be the value itself, written by mistake.
			return fieldErrorf(at+".from", "must be env:VAR or file:/absolute/path")
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
		if kind, arg := s.Source(); kind == "file" && arg != "" {
			s.From = "file:" + filepath.Clean(arg)
			c.Secrets[name] = s
		}
	}
}
