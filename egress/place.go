package egress

import (
	"net/http"
	"slices"
	"strings"
)

// Where says in which parts of a request to its hosts a secret's
// placeholder is swapped for its value. A placeholder found elsewhere
// goes as it is (it is worthless outside the jail) and is reported. The
// zero value allows no part.
type Where struct {
	Header  bool     // header and trailer values...
	Headers []string // ...of these names only (canonical form), if any
	Query   bool
	Path    bool
	Body    bool
}

// Everywhere allows every part of a request.
var Everywhere = Where{Header: true, Query: true, Path: true, Body: true}

// Parts of a request, as Where and the receipt name them.
const (
	InHeader  = "header"
	InTrailer = "trailer" // judged as a header
	InQuery   = "query"
	InPath    = "path"
	InBody    = "body"
	// InSignature is not a part: a request signed with a secret's key
	// (sign.go).
	InSignature = "signature"
)

// allows says whether w allows the part in (and, for a header or
// trailer, the header name).
func (w Where) allows(in, name string) bool {
	switch in {
	case InHeader, InTrailer:
		return w.Header && (len(w.Headers) == 0 || slices.Contains(w.Headers, http.CanonicalHeaderKey(name)))
	case InQuery:
		return w.Query
	case InPath:
		return w.Path
	case InBody:
		return w.Body
	}
	return false
}

// String lists what w allows, for a violation's reason.
func (w Where) String() string {
	var in []string
	if w.Header {
		h := InHeader
		if len(w.Headers) > 0 {
			h += " (" + strings.Join(w.Headers, ", ") + ")"
		}
		in = append(in, h)
	}
	for _, p := range []struct {
		ok   bool
		name string
	}{{w.Query, InQuery}, {w.Path, InPath}, {w.Body, InBody}} {
		if p.ok {
			in = append(in, p.name)
		}
	}
	if len(in) == 0 {
		return "nothing"
	}
	return strings.Join(in, ", ")
}

// allowIn names the secrets of f.allow that may go in the part in (a
// header or trailer named name) of a request.
func (f *flow) allowIn(in, name string) []string {
	var names []string
	for _, n := range f.allow {
		if f.where(n).allows(in, name) {
			names = append(names, n)
		}
	}
	return names
}

// where is where secret may go; everywhere when the stack was not told.
func (f *flow) where(secret string) Where {
	if f.p.secrets.Where == nil {
		return Everywhere
	}
	return f.p.secrets.Where(secret)
}
