// Package netpolicy holds the sandbox's network policy as data — which names,
// ports and literal addresses code may reach — and the functions that decide
// a connection, a DNS question or a resolved address against it.
//
// It is for the userspace network stack: the stack maps a synthetic IP back to
// the name it was handed out for and asks [Policy.Decide]; it answers DNS only
// when [Policy.DecideName] says so; and after resolving a name itself it
// checks each address with [Policy.AddressAllowed], so that an allowed name
// resolving to a private or metadata address is still refused.
//
// It is not the enforcement: it knows nothing of the network stack, the jail
// or the config file, does no I/O and never resolves a name. A [Policy] is
// immutable once compiled and safe for concurrent use.
package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Rules is the operator's policy. The zero value denies everything.
//
// An Allow or Deny rule is one of:
//
//	api.github.com        a name, exactly (one trailing dot is ignored; case is not significant)
//	*.example.com         every subdomain of example.com, but not example.com itself
//	1.1.1.1               a literal IPv4 address
//	[2606:4700::1111]     a literal IPv6 address, always bracketed
//	104.16.0.0/13         a CIDR ([2606:4700::/32] for IPv6), without host bits set
//
// each optionally followed by ":port". An Allow rule without a port allows
// ports 80 and 443; a Deny rule without a port denies every port. Names must
// be ASCII: write internationalised names in their punycode (xn--) form.
// Literal addresses are the only way to permit a connection that did not go
// through the sandbox's DNS, and they too must pass [Policy.AddressAllowed]:
// a private one needs AllowPrivate as well.
type Rules struct {
	Allow []string
	// Deny wins over Allow and over AllowAll. Unlike Allow, a Deny wildcard
	// may cover a public suffix ("*.ru").
	Deny []string
	// DenyReasons maps a Deny rule, exactly as written, to the reason shown to
	// the model when that rule refuses a connection.
	DenyReasons map[string]string
	// AllowAll allows every public name on every port: a name under an
	// ICANN top-level domain other than .arpa, with at least two labels. Names
	// under .internal, .local, .localhost and the like are not public, and
	// literal addresses need their own Allow rule. Resolved addresses must
	// still pass [Policy.AddressAllowed].
	AllowAll bool
	// AllowPrivate lists the operator's internal ranges that resolved or
	// literal addresses may fall in. [Metadata] addresses stay blocked even
	// when covered.
	AllowPrivate []netip.Prefix
	// Hosts maps a name to the address used for it instead of DNS. An entry
	// does not allow the name; it only pins where an allowed name goes.
	Hosts map[string]netip.Addr
}

// Policy is a compiled [Rules].
type Policy struct {
	allow, deny  []rule
	denyReasons  map[string]string
	allowAll     bool
	allowPrivate []netip.Prefix
	hosts        map[string]netip.Addr
}

// Request is one connection to decide.
type Request struct {
	// Name is the lowercased name a synthetic IP was handed out for, or, for
	// a connection to any other address, that address in netip's string form
	// (which only a literal Allow rule can permit).
	Name string
	Port uint16
}

// Verdict is the outcome of [Policy.Decide].
type Verdict struct {
	Allow bool
	// Reason says why a request was refused. It names only what the model
	// asked for, or is the operator's DenyReasons text, so it is safe to show
	// the model.
	Reason string
	// Rule is the Allow or Deny rule that decided, as written, or
	// [AllowAllRule]; empty when nothing matched.
	Rule string
}

// AllowAllRule is the [Verdict.Rule] of a request allowed by Rules.AllowAll.
// "*" is not valid rule syntax, so it cannot be confused with a real rule.
const AllowAllRule = "*"

// RuleError is Compile's error: which rule is wrong, and why.
type RuleError struct {
	// List is the field of [Rules] that holds the rule, as the config file
	// names it: "allow", "deny", "deny_reasons", "hosts", "allow_private".
	List  string
	Index int    // the rule's place in its list; -1 in a map (DenyReasons, Hosts)
	Rule  string // the rule as written, or the map's key
	Err   error
}

// Error is one line, naming the rule: `allow rule "*.com": ...`.
func (e *RuleError) Error() string {
	what := map[string]string{"allow": "allow rule", "deny": "deny rule", "deny_reasons": "deny reason for",
		"hosts": "hosts entry", "allow_private": "private range"}[e.List]
	return fmt.Sprintf("%s %q: %v", what, e.Rule, e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }

// Compile checks r and returns its policy. Errors are a *[RuleError].
func Compile(r Rules) (*Policy, error) {
	p := &Policy{
		denyReasons: make(map[string]string, len(r.DenyReasons)),
		allowAll:    r.AllowAll,
		hosts:       make(map[string]netip.Addr, len(r.Hosts)),
	}
	for i, pr := range r.AllowPrivate {
		if !pr.IsValid() || pr.Addr().Is4In6() {
			return nil, &RuleError{List: "allow_private", Index: i, Rule: pr.String(), Err: errors.New("not a valid IPv4 or IPv6 CIDR")}
		}
		p.allowPrivate = append(p.allowPrivate, pr.Masked())
	}
	for i, s := range r.Deny {
		ru, err := parseRule(s, false)
		if err != nil {
			return nil, &RuleError{List: "deny", Index: i, Rule: s, Err: err}
		}
		p.deny = append(p.deny, ru)
	}
	for i, s := range r.Allow {
		ru, err := parseRule(s, true)
		if err != nil {
			return nil, &RuleError{List: "allow", Index: i, Rule: s, Err: err}
		}
		// Catch at load what AddressAllowed would refuse on every connection.
		// Only the range's first address is checked; AddressAllowed still
		// checks each connection.
		if ru.prefix.IsValid() {
			if ok, why := p.AddressAllowed(ru.prefix.Addr()); !ok {
				return nil, &RuleError{List: "allow", Index: i, Rule: s, Err: errors.New(why)}
			}
		}
		p.allow = append(p.allow, ru)
	}
	for rule, reason := range r.DenyReasons {
		found := false
		for _, d := range p.deny {
			found = found || d.text == rule
		}
		if !found {
			return nil, &RuleError{List: "deny_reasons", Index: -1, Rule: rule, Err: errors.New("no such deny rule")}
		}
		p.denyReasons[rule] = reason
	}
	for name, a := range r.Hosts {
		n, err := normalizeName(name)
		if err != nil {
			return nil, &RuleError{List: "hosts", Index: -1, Rule: name, Err: err}
		}
		if ok, why := p.AddressAllowed(a); !ok {
			return nil, &RuleError{List: "hosts", Index: -1, Rule: name, Err: fmt.Errorf("%s: %s", a, why)}
		}
		if prev, dup := p.hosts[n]; dup && prev != a {
			return nil, &RuleError{List: "hosts", Index: -1, Rule: name, Err: fmt.Errorf("%s is also given as %s", n, prev)}
		}
		p.hosts[n] = a
	}
	return p, nil
}

// Decide reports whether req may connect. Deny rules are checked first and
// win; then Allow rules; then AllowAll. A literal-address request must also
// pass [Policy.AddressAllowed]. Decide does not block; a cancelled ctx is
// refused so that a caller tearing down never lets a connection through.
func (p *Policy) Decide(ctx context.Context, req Request) Verdict {
	if ctx.Err() != nil {
		return Verdict{Reason: "the execution is ending"}
	}
	if req.Port == 0 {
		return Verdict{Reason: "port 0 is not allowed"}
	}
	if a, err := netip.ParseAddr(req.Name); err == nil {
		return p.decideAddr(a, req.Port)
	}
	name, err := normalizeName(req.Name)
	if err != nil {
		return Verdict{Reason: invalidName(req.Name)}
	}
	target := name + ":" + strconv.Itoa(int(req.Port))
	for i := range p.deny {
		if d := &p.deny[i]; d.matchName(name) && d.matchPort(req.Port) {
			return p.denied(d, target)
		}
	}
	for i := range p.allow {
		if a := &p.allow[i]; a.matchName(name) && a.matchPort(req.Port) {
			return Verdict{Allow: true, Rule: a.text}
		}
	}
	return p.decideAll(name, target)
}

func (p *Policy) decideAddr(a netip.Addr, port uint16) Verdict {
	if a.Zone() != "" {
		return Verdict{Reason: strconv.Quote(a.String()) + " is not a valid address"}
	}
	target := netip.AddrPortFrom(a, port).String()
	u := a.Unmap()
	for i := range p.deny {
		if d := &p.deny[i]; d.prefix.Contains(u) && d.matchPort(port) {
			return p.denied(d, target)
		}
	}
	for i := range p.allow {
		if r := &p.allow[i]; r.prefix.Contains(u) && r.matchPort(port) {
			if ok, why := p.AddressAllowed(a); !ok {
				return Verdict{Reason: target + ": " + why, Rule: r.text}
			}
			return Verdict{Allow: true, Rule: r.text}
		}
	}
	return Verdict{Reason: target + " is not in the allowlist"}
}

func (p *Policy) denied(d *rule, target string) Verdict {
	if why, ok := p.denyReasons[d.text]; ok {
		return Verdict{Reason: why, Rule: d.text}
	}
	return Verdict{Reason: target + " is denied by policy", Rule: d.text}
}

// DecideName decides whether DNS may answer for name: it allows a name when
// some port of it may be reached, so that DNS answers only for names that
// could then be connected to, and refuses one with the reason (and rule) a
// connection to it would get. Literal addresses and invalid names are
// refused.
func (p *Policy) DecideName(name string) Verdict {
	n, err := normalizeName(name)
	if err != nil {
		return Verdict{Reason: invalidName(name)}
	}
	for i := range p.deny {
		if d := &p.deny[i]; d.ports == nil && d.matchName(n) {
			return p.denied(d, n)
		}
	}
	for i := range p.allow {
		if a := &p.allow[i]; a.matchName(n) {
			return Verdict{Allow: true, Rule: a.text}
		}
	}
	return p.decideAll(n, n)
}

// decideAll is the verdict on a normalized name that no rule covers; target
// is what the reason names.
func (p *Policy) decideAll(name, target string) Verdict {
	switch {
	case !p.allowAll:
		return Verdict{Reason: target + " is not in the allowlist"}
	case publicName(name):
		return Verdict{Allow: true, Rule: AllowAllRule}
	default:
		// "Not in the allowlist" would be wrong: every public name is.
		return Verdict{Reason: name + " is not a public name, and only public names are allowed"}
	}
}

// invalidName is the reason a name that is not a valid host name is refused.
// The name may hold any bytes (a DNS label can): it is quoted in ASCII, so
// that no escape sequence or look-alike letter reaches a terminal, and cut
// to a valid name's length.
func invalidName(name string) string {
	q := strconv.QuoteToASCII(name)
	if len(q) > maxNameLen+2 {
		q = q[:maxNameLen] + "..."
	}
	return q + " is not a valid host name"
}

// Host returns the address Rules.Hosts pins name to, if any.
func (p *Policy) Host(name string) (netip.Addr, bool) {
	name, err := normalizeName(name)
	if err != nil {
		return netip.Addr{}, false
	}
	a, ok := p.hosts[name]
	return a, ok
}

// AddressAllowed reports whether a connection may go to a: a must be
// [Public] or covered by Rules.AllowPrivate, and never [Metadata]. The reason
// does not repeat the address, so that the model does not learn where an
// internal name resolves; the caller records the address in the audit trail.
func (p *Policy) AddressAllowed(a netip.Addr) (bool, string) {
	if Metadata(a) {
		return false, "the address is a cloud metadata endpoint"
	}
	if Public(a) {
		return true, ""
	}
	u := a.Unmap()
	for _, pr := range p.allowPrivate {
		if pr.Contains(u) {
			return true, ""
		}
	}
	return false, "the address is not public"
}

// publicName reports whether AllowAll covers name: two labels or more under
// an ICANN top-level domain (private-section suffixes such as github.io sit
// under one), excluding the .arpa infrastructure domain.
func publicName(name string) bool {
	if !strings.Contains(name, ".") || strings.HasSuffix(name, ".arpa") {
		return false
	}
	ps, icann := publicsuffix.PublicSuffix(name)
	// Unlisted top-level domains fall to the PSL's default "*" rule, which
	// returns the last label with icann false; listed private suffixes have
	// a dot.
	return icann || strings.Contains(ps, ".")
}
