package secrets

import (
	"net/http"
	"slices"
)

// ForwardURL is Forward for a request target (path and query): a value's
// bytes that are not unreserved in a URL are percent-encoded, so a value
// holding '&', '/' or '+' stays one query value, one path segment. Unlike
// the other transforms, this one may lengthen its text.
func (s *Set) ForwardURL(target string, allow []string) (string, Use) {
	r := s.replacer(placeholder, s.allowed(allow))
	r.esc = true
	out, _ := r.run(nil, []byte(target), true)
	return string(out), r.use()
}

// ForwardHeader is Forward over every value of h, in place. Names are left
// as they are: a credential goes in a value. A value that a header cannot
// hold (a control byte, such as a file's trailing newline) is never
// written into one, which would split the head: its placeholder is left
// and reported Refused, as for a host it may not go to.
func (s *Set) ForwardHeader(h http.Header, allow []string) Use {
	a := s.allowed(allow)
	for i, e := range s.secrets {
		if slices.ContainsFunc(e.text[value], func(c byte) bool { return c < ' ' && c != '\t' || c == 0x7f }) {
			a[i] = false
		}
	}
	var u Use
	for _, vs := range h {
		for i, v := range vs {
			out, got := s.transform(placeholder, a, []byte(v))
			vs[i] = string(out)
			u = u.merge(got)
		}
	}
	return u
}

// ReverseHeader is Reverse over every name and value of h, in place: a
// server may echo what it was sent anywhere in its head.
func (s *Set) ReverseHeader(h http.Header) Use {
	var u Use
	renamed := map[string]string{}
	for name, vs := range h {
		for i, v := range vs {
			out, got := s.Reverse([]byte(v))
			vs[i] = string(out)
			u = u.merge(got)
		}
		if out, got := s.Reverse([]byte(name)); len(got.Replaced) > 0 {
			renamed[name] = string(out)
			u = u.merge(got)
		}
	}
	// Renamed after the loop: a name added while ranging over a map may
	// or may not be visited.
	for from, to := range renamed {
		h[to] = append(h[to], h[from]...)
		delete(h, from)
	}
	return u
}

func (u Use) merge(v Use) Use {
	join := func(a, b []string) []string {
		if len(b) == 0 {
			return a
		}
		c := slices.Concat(a, b)
		slices.Sort(c)
		return slices.Compact(c)
	}
	return Use{Replaced: join(u.Replaced, v.Replaced), Refused: join(u.Refused, v.Refused)}
}
