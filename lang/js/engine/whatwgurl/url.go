// Package whatwgurl parses, serializes and edits URLs as the WHATWG URL
// Standard says (https://url.spec.whatwg.org/): the parser's state machine,
// its hosts (domains, IPv4 with hex and octal parts, IPv6), its
// percent-encode sets, and the getters and setters of the URL class. The JS
// engine's URL class is this package; Go code that fetches uses net/url.
//
// One deliberate gap: there is no IDNA. A domain that is ASCII is lowercased
// (which is all the Standard does with it), but one with a non-ASCII code
// point, after percent-decoding, is refused with ErrIDNA instead of being
// mapped and punycoded, so "https://münchen.de" must be written
// "https://xn--mnchen-3ya.de". Everything else follows the Standard's
// 2026-08 review draft; the encoding argument is always UTF-8.
package whatwgurl

import (
	"errors"
	"strconv"
	"strings"
)

// A URL is a URL record. The zero value is not a URL: use Parse.
type URL struct {
	scheme, username, password string

	host    string // serialized; "" with hasHost is the empty host
	hasHost bool
	port    int // -1 for none

	path       []string // the segments, unless the path is opaque
	opaque     string   // the path, when opaquePath
	opaquePath bool

	query, fragment       string
	hasQuery, hasFragment bool
}

// Error is a parse failure: the input and why it is not a URL.
type Error struct {
	Input  string
	Reason string // says what is wrong, without the input
	Err    error  // ErrIDNA or nil
}

func (e *Error) Error() string { return "invalid URL " + strconv.Quote(e.Input) + ": " + e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// ErrIDNA is the error of a domain that needs IDNA, which this package
// does not do.
var ErrIDNA = errors.New("non-ASCII domain")

// Parse parses input as an absolute URL, or as one relative to base when
// base is not nil.
func Parse(input string, base *URL) (*URL, error) {
	u := &URL{port: -1}
	if err := parse(input, base, u, noOverride); err != nil {
		err.Input = input
		return nil, err
	}
	return u, nil
}

var defaultPorts = map[string]int{"ftp": 21, "file": -1, "http": 80, "https": 443, "ws": 80, "wss": 443}

func special(scheme string) bool { _, ok := defaultPorts[scheme]; return ok }

// defaultPort is the scheme's default port, or -1 for none.
func defaultPort(scheme string) int {
	if p, ok := defaultPorts[scheme]; ok {
		return p
	}
	return -1
}

func (u *URL) special() bool { return special(u.scheme) }

func (u *URL) includesCredentials() bool { return u.username != "" || u.password != "" }

func (u *URL) cannotHaveUserPassPort() bool {
	return !u.hasHost || u.host == "" || u.scheme == "file"
}

// shorten removes the last path segment, except a file URL's drive letter.
func (u *URL) shorten() {
	if u.scheme == "file" && len(u.path) == 1 && normalizedDriveLetter(u.path[0]) {
		return
	}
	if len(u.path) > 0 {
		u.path = u.path[:len(u.path)-1]
	}
}

// Href is the URL serialized.
func (u *URL) Href() string {
	var b strings.Builder
	b.WriteString(u.scheme)
	b.WriteByte(':')
	if u.hasHost {
		b.WriteString("//")
		if u.includesCredentials() {
			b.WriteString(u.username)
			if u.password != "" {
				b.WriteString(":" + u.password)
			}
			b.WriteByte('@')
		}
		b.WriteString(u.host)
		if u.port >= 0 {
			b.WriteString(":" + strconv.Itoa(u.port))
		}
	} else if !u.opaquePath && len(u.path) > 1 && u.path[0] == "" {
		// Without it "web+demo:/.//not-a-host/" would read back with a host.
		b.WriteString("/.")
	}
	b.WriteString(u.Pathname())
	if u.hasQuery {
		b.WriteString("?" + u.query)
	}
	if u.hasFragment {
		b.WriteString("#" + u.fragment)
	}
	return b.String()
}

// Origin is the serialization of the URL's origin: "null" for an opaque one.
func (u *URL) Origin() string {
	switch u.scheme {
	case "blob":
		if p, err := Parse(u.Pathname(), nil); err == nil && (p.scheme == "http" || p.scheme == "https" || p.scheme == "file") {
			return p.Origin()
		}
	case "ftp", "http", "https", "ws", "wss":
		return u.scheme + "://" + u.Host()
	}
	return "null" // file: "left as an exercise to the reader"; opaque is safest
}

func (u *URL) Protocol() string { return u.scheme + ":" }
func (u *URL) Username() string { return u.username }
func (u *URL) Password() string { return u.password }
func (u *URL) Hostname() string { return u.host }

func (u *URL) Host() string {
	if u.hasHost && u.port >= 0 {
		return u.host + ":" + strconv.Itoa(u.port)
	}
	return u.host
}

func (u *URL) Port() string {
	if u.port < 0 {
		return ""
	}
	return strconv.Itoa(u.port)
}

func (u *URL) Pathname() string {
	if u.opaquePath {
		return u.opaque
	}
	var b strings.Builder
	for _, s := range u.path {
		b.WriteString("/" + s)
	}
	return b.String()
}

func (u *URL) Search() string {
	if u.query == "" {
		return ""
	}
	return "?" + u.query
}

func (u *URL) Hash() string {
	if u.fragment == "" {
		return ""
	}
	return "#" + u.fragment
}

// The setters are the URL class's. Only SetHref reports failure (the class
// throws); the others leave the URL as it was, or as far as the Standard
// gets before it fails (a host setter sets the host before it reads a bad
// port), and ignore what they cannot use.

func (u *URL) SetHref(v string) error {
	p, err := Parse(v, nil)
	if err != nil {
		return err
	}
	*u = *p
	return nil
}

func (u *URL) SetProtocol(v string) { _ = parse(v+":", nil, u, schemeStartState) }

func (u *URL) SetUsername(v string) {
	if !u.cannotHaveUserPassPort() {
		u.username = percentEncode(v, userinfoSet)
	}
}

func (u *URL) SetPassword(v string) {
	if !u.cannotHaveUserPassPort() {
		u.password = percentEncode(v, userinfoSet)
	}
}

func (u *URL) SetHost(v string) {
	if !u.opaquePath {
		_ = parse(v, nil, u, hostState)
	}
}

func (u *URL) SetHostname(v string) {
	if !u.opaquePath {
		_ = parse(v, nil, u, hostnameState)
	}
}

func (u *URL) SetPort(v string) {
	switch {
	case u.cannotHaveUserPassPort():
	case v == "":
		u.port = -1
	default:
		_ = parse(v, nil, u, portState)
	}
}

func (u *URL) SetPathname(v string) {
	if !u.opaquePath {
		u.path = nil
		_ = parse(v, nil, u, pathStartState)
	}
}

func (u *URL) SetSearch(v string) {
	if v == "" {
		u.query, u.hasQuery = "", false
		return
	}
	u.query, u.hasQuery = "", true
	_ = parse(strings.TrimPrefix(v, "?"), nil, u, queryState)
}

func (u *URL) SetHash(v string) {
	if v == "" {
		u.fragment, u.hasFragment = "", false
		return
	}
	u.fragment, u.hasFragment = "", true
	_ = parse(strings.TrimPrefix(v, "#"), nil, u, fragmentState)
}
