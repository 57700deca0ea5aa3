package secrets

import (
	"net/http"
	"slices"
)

// ForwardHeader is Forward over every value of h, in place. Names are left
// as they are: a credential goes in a value.
func (s *Set) ForwardHeader(h http.Header, allow []string) Use {
	a := s.allowed(allow)
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
