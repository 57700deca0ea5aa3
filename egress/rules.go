package egress

// HTTP rules on the wire. A host with rules (an API's, limited by method
// and path) has each request judged before any of it goes out: on plain
// HTTP, and inside the TLS the stack terminates for it (mitm.go), since a
// passed-through connection hides its requests. A refusal ends the
// connection: what the jail sent after the refused request is never read.
// A request's trailers come after it was judged: on such a host they are
// not sent (exchange), and one that declares an override there is refused.

import (
	"net/http"
	"strings"

	"github.com/cruciblehq/crucible/policy/httprule"
	"github.com/cruciblehq/crucible/secrets"
)

// rulesFor returns the rules that judge this connection's requests, nil
// for none.
func (f *flow) rulesFor() []*httprule.Set {
	if f.p.http == nil {
		return nil
	}
	return f.p.http(f.target(), f.dst.Port())
}

// judge checks req against the host's rules; a refusal is reported and
// answered with a 403 that says why. The target is judged as it came and
// as the relay writes it (req.URL.RequestURI(), which re-escapes what Go
// parsed: a '#' in the path becomes %23), so the host gets no target
// that the rules did not read.
func (f *flow) judge(req *http.Request) bool {
	if f.rules == nil {
		return true
	}
	targets := []string{req.RequestURI}
	if sent := req.URL.RequestURI(); sent != req.RequestURI {
		targets = append(targets, sent)
	}
	for k := range req.Trailer { // as declared; exchange drops what comes
		if httprule.IsOverride(k) {
			reason := "the request declares the method override " + truncate(k, 40) + " as a trailer, which comes after the request was judged"
			f.p.report(Event{Kind: KindHTTP, Name: f.target(), Port: f.dst.Port(), Reason: reason})
			f.refuse(reason, true, http.StatusForbidden)
			return false
		}
	}
	r := httprule.Request{Method: req.Method, Header: req.Header, Names: f.p.names}
	if f.p.client != nil {
		r.Client, r.Profile = f.p.client()
	}
	for _, s := range f.rules {
		for _, t := range targets {
			r.Target = t
			if v := s.CheckRequest(r); !v.Allow {
				f.p.report(Event{Kind: KindHTTP, Name: f.target(), Port: f.dst.Port(), Reason: v.Reason, Rule: v.Rule})
				f.refuse(v.Reason, true, http.StatusForbidden)
				return false
			}
		}
	}
	return true
}

// placeholderNames writes each placeholder of set in a text as ${NAME}:
// what the rules' conditions see of secrets.
func placeholderNames(set *secrets.Set) func(string) string {
	if set == nil {
		return nil
	}
	var pairs []string
	for _, name := range set.Names() {
		if ph, ok := set.Placeholder(name); ok {
			pairs = append(pairs, ph, "${"+name+"}")
		}
	}
	return strings.NewReplacer(pairs...).Replace
}
