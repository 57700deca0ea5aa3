package whatwgurl

import (
	"strings"
)

// state is a state of the basic URL parser. A setter runs the parser on
// the URL it edits from the state that reads its part: the state override.
type state int

const (
	noOverride state = iota
	schemeStartState
	schemeState
	noSchemeState
	specialRelativeOrAuthorityState
	pathOrAuthorityState
	relativeState
	relativeSlashState
	specialAuthoritySlashesState
	specialAuthorityIgnoreSlashesState
	authorityState
	hostState
	hostnameState
	portState
	fileState
	fileSlashState
	fileHostState
	pathStartState
	pathState
	opaquePathState
	queryState
	fragmentState
)

// eof is the code point past the end of the input.
const eof rune = -1

func isASCIIAlpha(c rune) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isDigit(c rune) bool      { return '0' <= c && c <= '9' }

func lower(c rune) rune {
	if 'A' <= c && c <= 'Z' {
		return c + 0x20
	}
	return c
}

// windowsDriveLetter is "c:" or "c|".
func windowsDriveLetter(s string) bool {
	return len(s) == 2 && isASCIIAlpha(rune(s[0])) && (s[1] == ':' || s[1] == '|')
}

func normalizedDriveLetter(s string) bool { return windowsDriveLetter(s) && s[1] == ':' }

// startsWithDriveLetter says whether in starts with a drive letter that
// ends there or at / \ ? or #.
func startsWithDriveLetter(in []rune) bool {
	if len(in) < 2 || !isASCIIAlpha(in[0]) || in[1] != ':' && in[1] != '|' {
		return false
	}
	return len(in) == 2 || strings.ContainsRune(`/\?#`, in[2])
}

func singleDot(s string) bool { return s == "." || strings.EqualFold(s, "%2e") }

func doubleDot(s string) bool {
	switch strings.ToLower(s) {
	case "..", ".%2e", "%2e.", "%2e%2e":
		return true
	}
	return false
}

// parse is the basic URL parser. Without a state override it fills the new
// URL u; with one it edits u in place, and its error is only for the
// setters to ignore. The returned Error lacks its Input.
func parse(input string, base *URL, u *URL, override state) *Error {
	if override == noOverride {
		input = strings.TrimFunc(input, func(c rune) bool { return c <= ' ' })
	}
	input = strings.Map(func(c rune) rune {
		if c == '\t' || c == '\n' || c == '\r' {
			return -1
		}
		return c
	}, input)
	in := []rune(input) // invalid UTF-8 reads as U+FFFD
	st := override
	if st == noOverride {
		st = schemeStartState
	}
	var buf []rune // what is read of a scheme, userinfo, host, port or query
	// seg is the path segment being read, out the opaque path or fragment:
	// bytes appended in place keep long inputs linear.
	var seg, out, user, pass []byte
	var atSignSeen, insideBrackets, passwordTokenSeen bool
	fail := func(reason string) *Error { return &Error{Reason: reason} }
	// The "remaining" of the Standard starts at in[p+1].
	remainingStarts := func(p int, s string) bool {
		return p+1 < len(in) && strings.HasPrefix(string(in[p+1:min(p+1+len(s), len(in))]), s)
	}
	// setHost runs the host parser on buf for u.
	setHost := func() *Error {
		h, reason, err := parseHost(string(buf), !u.special())
		if reason != "" {
			return &Error{Reason: reason, Err: err}
		}
		u.host, u.hasHost = h, true
		return nil
	}
	for p := 0; ; p++ {
		c := eof
		if p < len(in) {
			c = in[p]
		}
		switch st {
		case schemeStartState:
			switch {
			case isASCIIAlpha(c):
				buf = append(buf, lower(c))
				st = schemeState
			case override == noOverride:
				st = noSchemeState
				p--
			default:
				return fail("a scheme starts with a letter")
			}

		case schemeState:
			switch {
			case isASCIIAlpha(c) || isDigit(c) || c == '+' || c == '-' || c == '.':
				buf = append(buf, lower(c))
			case c == ':':
				scheme := string(buf)
				if override != noOverride {
					if u.special() != special(scheme) ||
						(u.includesCredentials() || u.port >= 0) && scheme == "file" ||
						u.scheme == "file" && u.hasHost && u.host == "" {
						return nil
					}
				}
				u.scheme = scheme
				if override != noOverride {
					if u.port == defaultPort(u.scheme) {
						u.port = -1
					}
					return nil
				}
				buf = buf[:0]
				switch {
				case u.scheme == "file":
					st = fileState
				case u.special() && base != nil && base.scheme == u.scheme:
					st = specialRelativeOrAuthorityState
				case u.special():
					st = specialAuthoritySlashesState
				case remainingStarts(p, "/"):
					st = pathOrAuthorityState
					p++
				default:
					u.opaque, u.opaquePath = "", true
					st = opaquePathState
				}
			case override == noOverride:
				buf = buf[:0]
				st = noSchemeState
				p = -1 // start over
			default:
				return fail("a scheme is letters, digits, +, - and .")
			}

		case noSchemeState:
			switch {
			case base == nil:
				return fail("a relative URL needs a base URL")
			case base.opaquePath && c != '#':
				return fail("the base URL " + base.Href() + " cannot be a base: its path is opaque")
			case base.opaquePath:
				u.scheme = base.scheme
				u.opaque, u.opaquePath = base.opaque, true
				u.query, u.hasQuery = base.query, base.hasQuery
				u.fragment, u.hasFragment = "", true
				st = fragmentState
			case base.scheme != "file":
				st = relativeState
				p--
			default:
				st = fileState
				p--
			}

		case specialRelativeOrAuthorityState:
			if c == '/' && remainingStarts(p, "/") {
				st = specialAuthorityIgnoreSlashesState
				p++
			} else {
				st = relativeState
				p--
			}

		case pathOrAuthorityState:
			if c == '/' {
				st = authorityState
			} else {
				st = pathState
				p--
			}

		case relativeState:
			u.scheme = base.scheme
			switch {
			case c == '/' || u.special() && c == '\\':
				st = relativeSlashState
			default:
				u.username, u.password = base.username, base.password
				u.host, u.hasHost, u.port = base.host, base.hasHost, base.port
				u.path = append([]string(nil), base.path...)
				u.query, u.hasQuery = base.query, base.hasQuery
				switch c {
				case '?':
					u.query, u.hasQuery = "", true
					st = queryState
				case '#':
					u.fragment, u.hasFragment = "", true
					st = fragmentState
				case eof:
				default:
					u.query, u.hasQuery = "", false
					u.shorten()
					st = pathState
					p--
				}
			}

		case relativeSlashState:
			switch {
			case u.special() && (c == '/' || c == '\\'):
				st = specialAuthorityIgnoreSlashesState
			case c == '/':
				st = authorityState
			default:
				u.username, u.password = base.username, base.password
				u.host, u.hasHost, u.port = base.host, base.hasHost, base.port
				st = pathState
				p--
			}

		case specialAuthoritySlashesState:
			st = specialAuthorityIgnoreSlashesState
			if c == '/' && remainingStarts(p, "/") {
				p++
			} else {
				p--
			}

		case specialAuthorityIgnoreSlashesState:
			if c != '/' && c != '\\' {
				st = authorityState
				p--
			}

		case authorityState:
			switch {
			case c == '@':
				if atSignSeen {
					buf = append([]rune("%40"), buf...)
				}
				atSignSeen = true
				for _, cp := range buf {
					if cp == ':' && !passwordTokenSeen {
						passwordTokenSeen = true
						continue
					}
					if passwordTokenSeen {
						pass = appendEncoded(pass, cp, userinfoSet)
					} else {
						user = appendEncoded(user, cp, userinfoSet)
					}
				}
				buf = buf[:0]
			case c == eof || c == '/' || c == '?' || c == '#' || u.special() && c == '\\':
				if atSignSeen && len(buf) == 0 {
					return fail("credentials without a host")
				}
				u.username, u.password = string(user), string(pass)
				p -= len(buf) + 1
				buf = buf[:0]
				st = hostState
			default:
				buf = append(buf, c)
			}

		case hostState, hostnameState:
			switch {
			case override != noOverride && u.scheme == "file":
				p--
				st = fileHostState
			case c == ':' && !insideBrackets:
				if len(buf) == 0 {
					return fail("a port without a host")
				}
				if override == hostnameState {
					return fail("a hostname has no port")
				}
				if err := setHost(); err != nil {
					return err
				}
				buf = buf[:0]
				st = portState
			case c == eof || c == '/' || c == '?' || c == '#' || u.special() && c == '\\':
				p--
				if u.special() && len(buf) == 0 {
					return fail("the host is missing")
				}
				if override != noOverride && len(buf) == 0 && (u.includesCredentials() || u.port >= 0) {
					return fail("a URL with credentials or a port needs a host")
				}
				if err := setHost(); err != nil {
					return err
				}
				buf = buf[:0]
				st = pathStartState
				if override != noOverride {
					return nil
				}
			default:
				switch c {
				case '[':
					insideBrackets = true
				case ']':
					insideBrackets = false
				}
				buf = append(buf, c)
			}

		case portState:
			switch {
			case isDigit(c):
				buf = append(buf, c)
			case c == eof || c == '/' || c == '?' || c == '#' || u.special() && c == '\\' || override != noOverride:
				if len(buf) > 0 {
					port := 0
					for _, d := range buf {
						port = port*10 + int(d-'0')
						if port > 65535 {
							return fail("the port is more than 65535")
						}
					}
					if port == defaultPort(u.scheme) {
						port = -1
					}
					u.port = port
					buf = buf[:0]
					if override != noOverride {
						return nil
					}
				}
				if override != noOverride {
					return fail("the port is not a number")
				}
				st = pathStartState
				p--
			default:
				return fail("the port is not a number")
			}

		case fileState:
			u.scheme = "file"
			u.host, u.hasHost = "", true
			switch {
			case c == '/' || c == '\\':
				st = fileSlashState
			case base != nil && base.scheme == "file":
				u.host, u.hasHost = base.host, base.hasHost
				u.path = append([]string(nil), base.path...)
				u.query, u.hasQuery = base.query, base.hasQuery
				switch c {
				case '?':
					u.query, u.hasQuery = "", true
					st = queryState
				case '#':
					u.fragment, u.hasFragment = "", true
					st = fragmentState
				case eof:
				default:
					u.query, u.hasQuery = "", false
					if !startsWithDriveLetter(in[p:]) {
						u.shorten()
					} else {
						u.path = nil
					}
					st = pathState
					p--
				}
			default:
				st = pathState
				p--
			}

		case fileSlashState:
			if c == '/' || c == '\\' {
				st = fileHostState
				break
			}
			if base != nil && base.scheme == "file" {
				u.host, u.hasHost = base.host, base.hasHost
				if !startsWithDriveLetter(in[p:]) && len(base.path) > 0 && normalizedDriveLetter(base.path[0]) {
					u.path = append(u.path, base.path[0])
				}
			}
			st = pathState
			p--

		case fileHostState:
			if c != eof && !strings.ContainsRune(`/\?#`, c) {
				buf = append(buf, c)
				break
			}
			p--
			switch {
			case override == noOverride && windowsDriveLetter(string(buf)):
				seg = append(seg, string(buf)...) // the path's first segment
				buf = buf[:0]
				st = pathState
			case len(buf) == 0:
				u.host, u.hasHost = "", true
				if override != noOverride {
					return nil
				}
				st = pathStartState
			default:
				if err := setHost(); err != nil {
					return err
				}
				if u.host == "localhost" {
					u.host = ""
				}
				if override != noOverride {
					return nil
				}
				buf = buf[:0]
				st = pathStartState
			}

		case pathStartState:
			switch {
			case u.special():
				st = pathState
				if c != '/' && c != '\\' {
					p--
				}
			case override == noOverride && c == '?':
				u.query, u.hasQuery = "", true
				st = queryState
			case override == noOverride && c == '#':
				u.fragment, u.hasFragment = "", true
				st = fragmentState
			case c != eof:
				st = pathState
				if c != '/' {
					p--
				}
			case override != noOverride && !u.hasHost:
				u.path = append(u.path, "")
			}

		case pathState:
			slash := c == '/' || u.special() && c == '\\'
			end := c == eof || slash || override == noOverride && (c == '?' || c == '#')
			if !end {
				seg = appendEncoded(seg, c, pathSet)
				break
			}
			switch seg := string(seg); {
			case doubleDot(seg):
				u.shorten()
				if !slash {
					u.path = append(u.path, "")
				}
			case singleDot(seg):
				if !slash {
					u.path = append(u.path, "")
				}
			default:
				if u.scheme == "file" && len(u.path) == 0 && windowsDriveLetter(seg) {
					seg = seg[:1] + ":"
				}
				u.path = append(u.path, seg)
			}
			seg = seg[:0]
			switch c {
			case '?':
				u.query, u.hasQuery = "", true
				st = queryState
			case '#':
				u.fragment, u.hasFragment = "", true
				st = fragmentState
			}

		case opaquePathState:
			if c == eof || c == '?' || c == '#' {
				u.opaque += string(out)
				out = out[:0]
			}
			switch {
			case c == '?':
				u.query, u.hasQuery = "", true
				st = queryState
			case c == '#':
				u.fragment, u.hasFragment = "", true
				st = fragmentState
			case c == ' ':
				// A space before ? or # is encoded so that removing the
				// query or fragment cannot leave one at the end.
				if remainingStarts(p, "?") || remainingStarts(p, "#") {
					out = append(out, "%20"...)
				} else {
					out = append(out, ' ')
				}
			case c != eof:
				out = appendEncoded(out, c, c0ControlSet)
			}

		case queryState:
			if c == eof || override == noOverride && c == '#' {
				set := querySet
				if u.special() {
					set = specialQuerySet
				}
				u.query += percentEncode(string(buf), set)
				buf = buf[:0]
				if c == '#' {
					u.fragment, u.hasFragment = "", true
					st = fragmentState
				}
			} else {
				buf = append(buf, c)
			}

		case fragmentState:
			if c != eof {
				out = appendEncoded(out, c, fragmentSet)
			} else {
				u.fragment += string(out)
			}
		}
		if p >= len(in) {
			return nil
		}
	}
}
