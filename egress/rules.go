package egress

// HTTP rules on the wire. A host with rules (an API's, limited by method
// and path) has each request judged before any of it goes out: on plain
// HTTP, and inside the TLS the stack terminates for it (mitm.go), since a
// passed-through connection hides its requests. A refusal ends the
// connection: what the jail sent after the refused request is never read.

import (
	"net/http"

	"github.com/cruciblehq/crucible/httprule"
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
// answered with a 403 that says why.
func (f *flow) judge(req *http.Request) bool {
	for _, s := range f.rules {
		if v := s.Check(req.Method, req.RequestURI, req.Header); !v.Allow {
			f.p.report(Event{Kind: KindHTTP, Name: f.target(), Port: f.dst.Port(), Reason: v.Reason, Rule: v.Rule})
			f.refuse(v.Reason, true, http.StatusForbidden)
			return false
		}
	}
	return true
}
