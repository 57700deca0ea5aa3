// Package httprule judges HTTP requests to an API by method and path: the
// operator's rules ("allow GET /repos/**", "deny DELETE /**"), compiled
// once, and the normalization that judges a path the way a server may read
// it rather than the way it was spelled. It is policy as data and its
// matcher; it knows nothing of the config file, and the network stack that
// enforces it knows nothing of rules beyond [Set.Check].
//
// How a request is judged:
//
//   - Deny wins: a request that a deny rule matches is refused. With rules,
//     a request that no allow rule matches is refused too. No rules: all
//     is allowed.
//   - The method, upper-cased, and every method that an override header
//     (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override, in any
//     case, '_' read as '-') or a _method query parameter (pairs split at
//     '&' and ';', its name read as PHP reads it: ".method" and " method"
//     are _method) names: each must be allowed, since a server may act on
//     either.
//   - The path, normalized (see [Normalize]) and read two ways, each of
//     which must be allowed: as RFC 3986 reads it, and as a lax server
//     does (an encoded slash or a backslash splits segments; ";params" are
//     dropped from a segment).
//   - Deny rules match paths regardless of case, allow rules exactly: a
//     server that ignores case can reach no path a deny names, and one
//     that does not is offered nothing more than the allow rules name.
//   - The query plays no part in the path. A target with a '#' is refused:
//     HTTP sends no fragment (RFC 9112), and a server or relay that keeps
//     one reads the path and query otherwise than a reader that stops there.
//   - A rule may have a condition (CEL, package cond) over the request: an
//     allow rule allows, and a deny rule denies, only a request for which
//     it holds. A condition that cannot be evaluated allows nothing and
//     denies: fail closed. It is judged for each method and each reading of
//     the path, as the rule is.
package httprule

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"github.com/cruciblehq/crucible/policy/cond"
)

// Rule is one rule as written: "METHOD /path/pattern", allowing or
// denying. METHOD is an HTTP method or * (any). In the pattern, a segment
// * (or {name}, as OpenAPI writes a parameter) matches any one segment, a
// * inside a segment any run of characters but /, and a final /** any
// number of segments, none included. A pattern's percent-encodings stand
// for the characters they encode.
type Rule struct {
	Deny bool
	Text string
	If   string // a condition over the request (see Conditions); "" for none
}

// Conditions are what a rule's If may use:
//
//   - request.method: the method judged (an override's, for the method it
//     names), upper case;
//   - request.path: the path judged, normalized (see [Normalize]);
//   - request.params: the path's segments that the rule's pattern names
//     {name}, decoded (lower case for a deny rule, which matches paths
//     regardless of case);
//   - request.query: the query's parameters, names and values decoded; a
//     condition refuses a query that gives a name more than once, which
//     servers read differently;
//   - request.headers: the header's fields by lower-case name ('_' read as
//     '-'), repeated fields joined by ", ", each secret's placeholder
//     written as ${NAME};
//   - client.name, client.profile: whose execution sends the request.
var Conditions = cond.NewEnv(
	cel.Variable("request", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("client", cel.MapType(cel.StringType, cel.StringType)),
)

// Set is one API's compiled rules. A nil Set allows everything.
type Set struct {
	api   string
	rules []rule
}

type rule struct {
	deny   bool
	method string   // upper case, or * for any
	segs   []string // decoded; lower case for a deny rule
	params []string // the name of each {name} segment, "" for the others
	rest   bool     // ends in /**
	text   string   // as written, for reasons
	cond   *cond.Cond
}

// Verdict is a judgement of one request.
type Verdict struct {
	Allow bool
	// Reason says why a request was refused in one line safe for the
	// model: the API's name, the method and path judged, and the rule.
	Reason string
	// Rule is the rule that refused it, as written, after the API's name
	// ("github: deny DELETE /**"); empty when no allow rule matched.
	Rule string
}

// Compile compiles the rules of the API named api (the name is for
// reasons only).
func Compile(api string, rules []Rule) (*Set, error) {
	s := &Set{api: api}
	for _, r := range rules {
		method, pattern, ok := strings.Cut(strings.TrimSpace(r.Text), " ")
		pattern = strings.TrimSpace(pattern)
		if !ok || method == "" || !strings.HasPrefix(pattern, "/") || strings.ContainsAny(pattern, "?# ") {
			return nil, fmt.Errorf("%q is not METHOD /path", r.Text)
		}
		c := rule{deny: r.Deny, method: strings.ToUpper(method), text: r.Text}
		if p, ok := strings.CutSuffix(pattern, "/**"); ok {
			pattern, c.rest = p, true
		}
		if strings.Contains(pattern, "**") {
			return nil, fmt.Errorf("%q: ** is only allowed as the last segment (/**)", r.Text)
		}
		for raw := range strings.SplitSeq(pattern, "/") {
			if raw == "" {
				continue
			}
			seg, err := url.PathUnescape(raw)
			if err != nil || strings.ContainsAny(seg, "/\\") || seg == "." || seg == ".." {
				return nil, fmt.Errorf("%q: the segment %q is not a path segment", r.Text, raw)
			}
			param := ""
			if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
				seg, param = "*", seg[1:len(seg)-1]
			}
			c.params = append(c.params, param)
			if c.deny {
				seg = strings.ToLower(seg)
			}
			c.segs = append(c.segs, seg)
		}
		if r.If != "" {
			var err error
			if c.cond, err = Conditions.Compile(r.If); err != nil {
				return nil, fmt.Errorf("%q: its condition: %w", r.Text, err)
			}
		}
		s.rules = append(s.rules, c)
	}
	return s, nil
}

// overrides are the headers by which a client asks a server to take the
// request for another method.
var overrides = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// Check judges a request: its method, its request target as sent (a path,
// or an absolute URL), and its header; for no client, as sent.
func (s *Set) Check(method, target string, h http.Header) Verdict {
	return s.CheckRequest(Request{Method: method, Target: target, Header: h})
}

// Request is a request as CheckRequest judges it.
type Request struct {
	Method string
	Target string // as sent: a path, or an absolute URL
	Header http.Header
	// Client and Profile are whose execution sends it ("" for none).
	Client, Profile string
	// Names writes each secret's placeholder in a text as ${NAME}; nil
	// leaves texts as they are.
	Names func(string) string
}

// CheckRequest judges r: see the package's comment.
func (s *Set) CheckRequest(r Request) Verdict {
	if s == nil || len(s.rules) == 0 {
		return Verdict{Allow: true}
	}
	method, target, h := r.Method, r.Target, r.Header
	f := &facts{r: r}
	strict, lax, err := Normalize(target)
	if err != nil {
		return Verdict{Reason: fmt.Sprintf("the API %s refuses %s %s: %v", s.api, method, truncate(target), err)}
	}
	type named struct{ method, by string }
	methods := []named{{strings.ToUpper(method), ""}}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if !IsOverride(k) {
			continue
		}
		for _, v := range h[k] {
			for m := range strings.SplitSeq(v, ",") {
				if m = strings.TrimSpace(m); m != "" {
					methods = append(methods, named{strings.ToUpper(m), truncate(k)})
				}
			}
		}
	}
	if _, q, ok := strings.Cut(target, "?"); ok {
		// Pairs end at ';' as well as '&', as older Rack and Python read
		// them; a pair that does not decode is read as it is.
		for pair := range strings.FieldsFuncSeq(q, func(r rune) bool { return r == '&' || r == ';' }) {
			k, v, _ := strings.Cut(pair, "=")
			if !isMethodParam(unescape(k)) {
				continue
			}
			if m := strings.TrimSpace(unescape(v)); m != "" {
				methods = append(methods, named{strings.ToUpper(m), "the _method parameter"})
			}
		}
	}
	for _, m := range methods {
		for _, p := range [][]string{strict, lax} {
			if v := s.judge(m.method, p, f); !v.Allow {
				if m.by != "" {
					v.Reason += " (" + m.method + " is the method that " + m.by + " names)"
				}
				return v
			}
		}
	}
	return Verdict{Allow: true}
}

// IsOverride reports whether a header named name is an override header as
// a server may read it: in any case, and with '_' for '-' (CGI-style
// servers, Rack and PHP among them, read both as the same).
func IsOverride(name string) bool {
	name = strings.ReplaceAll(name, "_", "-")
	return slices.ContainsFunc(overrides, func(o string) bool { return strings.EqualFold(o, name) })
}

// isMethodParam reports whether a query parameter named name (decoded) is
// _method as a server may read it, in any case and as PHP rewrites names:
// "_method[...]" is _method, and a ' ', '.' or '[' left reads as '_'.
func isMethodParam(name string) bool {
	if i := strings.IndexByte(name, '['); i >= 0 && strings.Contains(name[i:], "]") {
		name = name[:i]
	}
	name = strings.Map(func(r rune) rune {
		if r == ' ' || r == '.' || r == '[' {
			return '_'
		}
		return r
	}, name)
	return strings.EqualFold(name, "_method")
}

// unescape decodes a query's name or value, or returns it as it is (a
// '+' read as a space) if it holds a malformed percent-encoding.
func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return strings.ReplaceAll(s, "+", " ")
}

// judge judges one method on one reading of a path.
func (s *Set) judge(method string, segs []string, f *facts) Verdict {
	folded := make([]string, len(segs))
	for i, seg := range segs {
		folded[i] = strings.ToLower(seg)
	}
	// what names the request in a refusal only: an allowed one, the usual
	// case on every request to the API, does not pay to format it.
	what := func() string { return method + " " + truncate(Format(segs)) }
	for _, r := range s.rules {
		if !r.deny || !r.matches(method, folded) {
			continue
		}
		held, why := r.holds(method, folded, f)
		if !held && why == "" {
			continue // its condition is false
		}
		reason := fmt.Sprintf("the API %s refuses %s: its rule deny %q matches", s.api, what(), r.text)
		if why != "" {
			reason += " (and its condition could not be evaluated: " + why + ")"
		}
		return Verdict{Reason: reason, Rule: s.api + ": deny " + r.text}
	}
	var allowed []string
	unmet := ""
	for _, r := range s.rules {
		if r.deny {
			continue
		}
		if r.matches(method, segs) {
			held, why := r.holds(method, segs, f)
			if held {
				return Verdict{Allow: true}
			}
			if unmet == "" {
				if why == "" {
					why = "is false"
				} else {
					why = "could not be evaluated: " + why
				}
				unmet = fmt.Sprintf("; %q matches, but its condition %s %s", r.text, truncate(r.cond.Expr), why)
			}
		}
		allowed = append(allowed, r.text)
	}
	if len(allowed) == 0 {
		return Verdict{Reason: fmt.Sprintf("the API %s refuses %s: it has no allow rule", s.api, what())}
	}
	return Verdict{Reason: fmt.Sprintf("the API %s refuses %s: no allow rule matches (it allows %s)%s",
		s.api, what(), truncate(strings.Join(allowed, ", ")), unmet)}
}

// holds says whether r's condition holds for the request f on segs, the
// path judged: true for no condition; false and why for one that could
// not be evaluated.
func (r *rule) holds(method string, segs []string, f *facts) (held bool, why string) {
	if r.cond == nil {
		return true, ""
	}
	vars, err := f.vars(method, segs, r)
	if err == nil {
		if held, err = r.cond.Holds(vars); err == nil {
			return held, ""
		}
	}
	return false, truncate(err.Error())
}

// facts are what conditions see of a request, read from it once, when a
// condition first asks.
type facts struct {
	r        Request
	read     bool
	query    map[string]string
	repeated string // a query parameter given more than once
	headers  map[string]string
}

// vars are the variables of r's condition on the path segs.
func (f *facts) vars(method string, segs []string, r *rule) (map[string]any, error) {
	if !f.read {
		f.read = true
		f.query = map[string]string{}
		if _, q, ok := strings.Cut(f.r.Target, "?"); ok {
			for pair := range strings.FieldsFuncSeq(q, func(r rune) bool { return r == '&' || r == ';' }) {
				k, v, _ := strings.Cut(pair, "=")
				k, v = f.name(unescape(k)), f.name(unescape(v))
				if _, dup := f.query[k]; dup && f.repeated == "" {
					f.repeated = k
				}
				f.query[k] = v
			}
		}
		f.headers = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(f.r.Header)) {
			name := strings.ReplaceAll(strings.ToLower(k), "_", "-")
			for _, v := range f.r.Header[k] {
				if old, ok := f.headers[name]; ok {
					v = old + ", " + v
				}
				f.headers[name] = f.name(v)
			}
		}
	}
	if f.repeated != "" {
		return nil, fmt.Errorf("the query gives the parameter %q more than once, which servers read differently", truncate(f.repeated))
	}
	params := map[string]string{}
	for i, name := range r.params {
		if name != "" && i < len(segs) {
			params[name] = segs[i]
		}
	}
	return map[string]any{
		"request": map[string]any{"method": method, "path": Format(segs), "params": params, "query": f.query, "headers": f.headers},
		"client":  map[string]string{"name": f.r.Client, "profile": f.r.Profile},
	}, nil
}

// name writes the placeholders in t as their secrets' names.
func (f *facts) name(t string) string {
	if f.r.Names == nil {
		return t
	}
	return f.r.Names(t)
}

func (r *rule) matches(method string, segs []string) bool {
	if r.method != "*" && r.method != method {
		return false
	}
	if len(segs) < len(r.segs) || !r.rest && len(segs) != len(r.segs) {
		return false
	}
	for i, p := range r.segs {
		if !glob(p, segs[i]) {
			return false
		}
	}
	return true
}

// glob matches one segment against a pattern whose only wildcard is *.
func glob(pattern, s string) bool {
	if pattern == "*" {
		return true
	}
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	last := parts[len(parts)-1]
	if !strings.HasPrefix(s, parts[0]) || len(s) < len(parts[0])+len(last) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(parts[0]) : len(s)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// Errors of [Normalize], in a request's refusal.
var (
	ErrTarget   = errors.New("the request target is not a path")
	ErrEncoding = errors.New("the path holds a malformed percent-encoding")
	ErrControl  = errors.New("the path holds a control character")
	ErrFragment = errors.New("the request target holds a '#', which HTTP does not send")
)

// Normalize returns the segments of a request target's path, decoded, as a
// server may read them, or an error for a path no rule should judge (not
// a path, a malformed encoding, a control character, a '#').
//
// Both readings ignore the query, an absolute URL's scheme
// and authority, and empty segments (doubled slashes, a trailing slash);
// they decode every percent-encoding (%2e is a dot) and then resolve dot
// segments, never above the root. strict keeps an encoded slash or
// backslash inside its segment, as RFC 3986 does; lax splits segments
// there, and at a backslash, and drops a segment's ";params" (as some
// servers do) before it resolves dot segments.
func Normalize(target string) (strict, lax []string, err error) {
	if strings.Contains(target, "#") {
		return nil, nil, ErrFragment
	}
	p, _, _ := strings.Cut(target, "?")
	if !strings.HasPrefix(p, "/") {
		scheme, rest, ok := strings.Cut(p, "://")
		if !ok || !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
			return nil, nil, ErrTarget
		}
		_, p, _ = strings.Cut(rest, "/")
		p = "/" + p
	}
	var decoded []string
	for raw := range strings.SplitSeq(p, "/") {
		if raw == "" {
			continue
		}
		seg, err := url.PathUnescape(raw)
		if err != nil {
			return nil, nil, ErrEncoding
		}
		if strings.ContainsFunc(seg, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, nil, ErrControl
		}
		decoded = append(decoded, seg)
	}
	strict = resolve(decoded)
	var split []string
	for _, seg := range decoded {
		for part := range strings.FieldsFuncSeq(seg, func(r rune) bool { return r == '/' || r == '\\' }) {
			part, _, _ = strings.Cut(part, ";")
			if part != "" {
				split = append(split, part)
			}
		}
	}
	return strict, resolve(split), nil
}

// resolve removes dot segments.
func resolve(segs []string) []string {
	out := make([]string, 0, len(segs))
	for _, s := range segs {
		switch s {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return out
}

// Format writes segments as a path, each escaped as a URL path segment.
func Format(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

func truncate(s string) string {
	const n = 200
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…" // not half a character
}
