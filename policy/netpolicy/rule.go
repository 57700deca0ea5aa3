package netpolicy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// rule is one compiled Allow or Deny entry. Exactly one of name and prefix is
// set.
type rule struct {
	text     string       // as the operator wrote it, for verdicts and DenyReasons
	name     string       // lowercased, no trailing dot, without the "*." of a wildcard
	wildcard bool         // matches strict subdomains of name, not name itself
	prefix   netip.Prefix // for a literal IP (a single-address prefix) or CIDR
	ports    []uint16     // nil: every port
}

var defaultPorts = []uint16{80, 443}

// parseRule parses an Allow (allow) or Deny rule. A rule without a port
// allows only the default ports but denies every port, so that a bare deny
// rule can never be stepped around with an unusual port.
func parseRule(s string, allow bool) (rule, error) {
	r := rule{text: s}
	host, port, err := splitHostPort(s)
	if err != nil {
		return r, err
	}
	switch {
	case port != "":
		p, err := parsePort(port)
		if err != nil {
			return r, err
		}
		r.ports = []uint16{p}
	case allow:
		r.ports = defaultPorts
	}

	if bracketed := strings.HasPrefix(host, "["); bracketed || strings.ContainsAny(host, "/:") || isIPv4(host) {
		r.prefix, err = parsePrefix(host, bracketed)
		return r, err
	}

	if host == "*" {
		return r, errors.New(`"*" is not a rule: every public name is allowed by allow_all, a switch of its own`)
	}
	name, wildcard := strings.CutPrefix(host, "*.")
	if name, err = normalizeName(name); err != nil {
		return r, err
	}
	if wildcard && allow {
		// "*.co.uk" would hand the model every company in the UK. Private
		// suffixes ("*.github.io") count too: their subdomains are other people's.
		if ps, _ := publicsuffix.PublicSuffix(name); ps == name {
			return r, fmt.Errorf("wildcard covers all of the public suffix %q", name)
		}
	}
	r.name, r.wildcard = name, wildcard
	return r, nil
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port". IPv6
// literals must always be bracketed: "2001:db8::1:443" is both an address and
// an address with a port, so neither reading is safe to guess.
func splitHostPort(s string) (host, port string, err error) {
	if s == "" {
		return "", "", errors.New("empty rule")
	}
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errors.New("missing ']'")
		}
		host, rest := s[:end+1], s[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if port, ok := strings.CutPrefix(rest, ":"); ok && port != "" {
			return host, port, nil
		}
		return "", "", fmt.Errorf("unexpected %q after ']'", rest)
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		host, port, _ := strings.Cut(s, ":")
		if port == "" {
			return "", "", errors.New("empty port")
		}
		return host, port, nil
	}
	return "", "", errors.New("IPv6 literals must be bracketed, as in [2001:db8::1]:443")
}

// parsePort accepts decimal 1..65535 without sign or leading zeros.
func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] == '0' {
		return 0, fmt.Errorf("port %q is not a number in 1..65535", s)
	}
	return uint16(n), nil
}

// parsePrefix parses a literal address or CIDR: IPv4 bare, IPv6 bracketed.
// Zones and host bits set in a CIDR are rejected rather than guessed at.
func parsePrefix(s string, bracketed bool) (netip.Prefix, error) {
	inner := s
	if bracketed {
		inner = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	}
	var p netip.Prefix
	if strings.Contains(inner, "/") {
		var err error
		if p, err = netip.ParsePrefix(inner); err != nil {
			return p, fmt.Errorf("%q is not an IP address or CIDR", s)
		}
		if p != p.Masked() {
			return p, fmt.Errorf("CIDR %q has host bits set; did you mean %s?", s, p.Masked())
		}
	} else {
		a, err := netip.ParseAddr(inner)
		if err != nil || a.Zone() != "" {
			return p, fmt.Errorf("%q is not an IP address or CIDR", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	switch {
	case p.Addr().Is4In6():
		return p, fmt.Errorf("write IPv4-mapped %q in IPv4 form", s)
	case p.Addr().Is6() != bracketed:
		if bracketed {
			return p, fmt.Errorf("only IPv6 literals are bracketed, not %q", s)
		}
		return p, errors.New("IPv6 literals must be bracketed, as in [2001:db8::1]:443")
	}
	return p, nil
}

// isIPv4 reports whether s is shaped like an IPv4 address (digits and dots
// only), so that a malformed one ("1.2.3.256") is reported as an address
// rather than falling through to name parsing.
func isIPv4(s string) bool {
	return s != "" && strings.Trim(s, "0123456789.") == "" && strings.Count(s, ".") == 3
}

// maxNameLen is the length of the longest host name, in its text form.
const maxNameLen = 253

// normalizeName lowercases a host name, drops one trailing dot (the
// fully-qualified spelling of the same name), and checks it is an ASCII LDH
// name: labels of 1..63 characters from [a-z0-9-], not starting or ending
// with '-', 253 characters in all, and a last label that is not all digits
// (which resolvers and URL parsers read as an IPv4 address, as in "127.1").
// Internationalised names must be given in their punycode ("xn--") form;
// Unicode is rejected, never converted, so that look-alike characters cannot
// slip a different name past a rule.
func normalizeName(s string) (string, error) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", errors.New("empty host name")
	}
	if len(s) > maxNameLen {
		return "", fmt.Errorf("host name longer than %d characters", maxNameLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return "", fmt.Errorf("host name %q is not ASCII; use its punycode (xn--) form", s)
		}
	}
	s = strings.ToLower(s)
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return "", fmt.Errorf("host name %q: %w", s, err)
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", fmt.Errorf("host name %q ends in a number; literal IPs are written as a.b.c.d or [v6]", s)
	}
	return s, nil
}

func checkLabel(l string) error {
	if l == "" {
		return errors.New("empty label")
	}
	if len(l) > 63 {
		return errors.New("label longer than 63 characters")
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return fmt.Errorf("label %q starts or ends with '-'", l)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		letter, digit := 'a' <= c && c <= 'z', '0' <= c && c <= '9'
		if !letter && !digit && c != '-' {
			return fmt.Errorf("label %q has character %q", l, c)
		}
	}
	return nil
}

// matchName reports whether r covers the normalized name.
func (r *rule) matchName(name string) bool {
	if r.name == "" {
		return false
	}
	if r.wildcard {
		return len(name) > len(r.name) && strings.HasSuffix(name, r.name) && name[len(name)-len(r.name)-1] == '.'
	}
	return name == r.name
}

func (r *rule) matchPort(port uint16) bool {
	if r.ports == nil {
		return true
	}
	for _, p := range r.ports {
		if p == port {
			return true
		}
	}
	return false
}
