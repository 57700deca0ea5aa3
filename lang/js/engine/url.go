package engine

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// defaultPorts are the ports a URL of these schemes leaves out.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}

// urlParts are a parsed URL's components, as the URL class shows them.
type urlParts struct {
	Href     string `json:"href,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	Port     string `json:"port,omitempty"`
	Pathname string `json:"pathname,omitempty"`
	Search   string `json:"search,omitempty"`
	Hash     string `json:"hash,omitempty"`
	Error    string `json:"error,omitempty"`
}

// parseURL parses input, against base when that is a string, with Go's
// parser and the WHATWG normalisations that matter for http(s): lower-case
// scheme and host, no default port, "/" for an empty path, dot segments
// resolved. It returns urlParts as JSON.
func parseURL(input string, base any) string {
	p, err := parseURLParts(input, base)
	if err != nil {
		p = &urlParts{Error: "Invalid URL: " + shorten(input)}
	}
	b, _ := json.Marshal(p)
	return string(b)
}

func parseURLParts(input string, base any) (*urlParts, error) {
	clean := func(s string) string {
		s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
		return strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}
	u, err := url.Parse(special(clean(input)))
	if err != nil {
		return nil, err
	}
	if b, ok := base.(string); ok {
		bu, err := url.Parse(special(clean(b)))
		if err != nil || bu.Scheme == "" {
			return nil, errInvalidURL
		}
		u = bu.ResolveReference(u)
	} else if u.Scheme == "" {
		return nil, errInvalidURL
	}
	if _, special := defaultPorts[u.Scheme]; special || u.Scheme == "file" {
		if u.Host == "" && u.Scheme != "file" {
			return nil, errInvalidURL
		}
		u.Host = strings.ToLower(u.Host)
		if p := u.Port(); p != "" && defaultPorts[u.Scheme] == p {
			u.Host = strings.TrimSuffix(u.Host, ":"+p)
		} else if n, err := strconv.Atoi(p); p != "" && (err != nil || n > 65535) {
			return nil, errInvalidURL
		}
		if u.Opaque != "" {
			return nil, errInvalidURL // "http:x": no authority
		}
		u = u.ResolveReference(&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery, ForceQuery: u.ForceQuery, Fragment: u.Fragment, RawFragment: u.RawFragment})
		if u.Path == "" {
			u.Path = "/"
		}
	}
	p := &urlParts{Href: u.String(), Protocol: u.Scheme + ":", Hostname: u.Hostname(), Port: u.Port()}
	if u.User != nil {
		p.Username = u.User.Username()
		p.Password, _ = u.User.Password()
	}
	if u.Opaque != "" {
		p.Pathname = u.Opaque
	} else {
		p.Pathname = u.EscapedPath()
	}
	if u.RawQuery != "" {
		p.Search = "?" + u.RawQuery
	}
	if u.Fragment != "" {
		p.Hash = "#" + u.EscapedFragment()
	}
	return p, nil
}

// special rewrites a URL of a special scheme (http, https, ws, wss, ftp,
// file) as the WHATWG parser reads it, into what Go's parser takes:
// backslashes before the query are slashes, and the characters of each
// part's percent-encode set are percent-encoded (a space in the userinfo,
// path, query or fragment; any non-ASCII byte). The host is left alone.
func special(s string) string {
	scheme, rest, ok := strings.Cut(s, ":")
	if _, sp := defaultPorts[strings.ToLower(scheme)]; !ok || !sp && !strings.EqualFold(scheme, "file") {
		return s
	}
	end := strings.IndexAny(rest, "?#")
	if end < 0 {
		end = len(rest)
	}
	rest = strings.ReplaceAll(rest[:end], "\\", "/") + rest[end:]
	var b strings.Builder
	b.WriteString(scheme + ":")
	auth := strings.HasPrefix(rest, "//")
	if auth {
		b.WriteString("//")
		rest = rest[2:]
		a := strings.IndexAny(rest, "/?#")
		if a < 0 {
			a = len(rest)
		}
		authority := rest[:a]
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			b.WriteString(percentEncode(authority[:at], " \"<>`#?{}/[]^|"))
			authority = authority[at:]
		}
		b.WriteString(authority)
		rest = rest[a:]
	}
	q := strings.IndexAny(rest, "?#")
	if q < 0 {
		q = len(rest)
	}
	b.WriteString(percentEncode(rest[:q], " \"<>`{}"))
	rest = rest[q:]
	if strings.HasPrefix(rest, "?") {
		f := strings.IndexByte(rest, '#')
		if f < 0 {
			f = len(rest)
		}
		b.WriteString(percentEncode(rest[:f], " \"<>'"))
		rest = rest[f:]
	}
	b.WriteString(percentEncode(rest, " \"<>`"))
	return b.String()
}

// percentEncode encodes the bytes of s that are in set, controls or not
// ASCII.
func percentEncode(s, set string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || strings.IndexByte(set, c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

var errInvalidURL = &url.Error{Op: "parse", Err: url.EscapeError("invalid")}
