package secrets

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestHeader(t *testing.T) {
	s := testSet(t)
	gh, sym := string(ph(s, "GITHUB")), string(ph(s, "SYMBOLS"))
	basic := func(tok string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+tok)) }
	h := http.Header{
		"Authorization": {"Bearer " + gh},
		"X-Basic":       {basic(gh)},
		"X-Other":       {"token " + sym, "plain"},
	}
	u := s.ForwardHeader(h, []string{"GITHUB"})
	want := http.Header{
		"Authorization": {"Bearer " + string(values["GITHUB"])},
		"X-Basic":       {basic(string(values["GITHUB"]))},
		"X-Other":       {"token " + sym, "plain"},
	}
	if !equalHeader(h, want) || !slices.Equal(u.Replaced, []string{"GITHUB"}) || !slices.Equal(u.Refused, []string{"SYMBOLS"}) {
		t.Errorf("ForwardHeader: %v %+v", h, u)
	}

	// Echoed back, in a value or a name.
	h = http.Header{
		"X-Echo":                     {"Bearer " + string(values["GITHUB"])},
		"X-" + string(values["TEN"]): {"1"},
		"Set-Cookie":                 {"a=" + base64.URLEncoding.EncodeToString(values["SYMBOLS"])},
	}
	u = s.ReverseHeader(h)
	want = http.Header{
		"X-Echo":                    {"Bearer " + gh},
		"X-" + string(ph(s, "TEN")): {"1"},
		"Set-Cookie":                {"a=" + base64.URLEncoding.EncodeToString([]byte(sym))},
	}
	if !equalHeader(h, want) || !slices.Equal(u.Replaced, []string{"GITHUB", "SYMBOLS", "TEN"}) {
		t.Errorf("ReverseHeader: %v %+v", h, u)
	}
}

// TestHeaderControl: a value with a newline is never written into a head.
func TestHeaderControl(t *testing.T) {
	s, err := New(map[string][]byte{"FILE": []byte("token-from-a-file\n")})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Placeholder("FILE")
	h := http.Header{"Authorization": {"Bearer " + p}}
	if u := s.ForwardHeader(h, []string{"FILE"}); h.Get("Authorization") != "Bearer "+p || u.Replaced != nil || len(u.Refused) != 1 {
		t.Errorf("ForwardHeader wrote %q, %+v", h.Get("Authorization"), u)
	}
	// In a body, the same value goes as it is.
	if out, u := s.Forward([]byte(p), []string{"FILE"}); string(out) != "token-from-a-file\n" || len(u.Replaced) != 1 {
		t.Errorf("Forward = %q, %+v", out, u)
	}
}

// TestURL: in a request target, a value is percent-encoded where it must
// be, in whatever form its placeholder was.
func TestURL(t *testing.T) {
	s := testSet(t)
	v, p := values["SYMBOLS"], string(ph(s, "SYMBOLS"))
	for _, c := range []struct{ target, key string }{
		{"/v1/x?key=" + p + "&n=1", "key"},
		{"/v1/x?n=1&key=" + forms["percentall"](nil, []byte(p), nil), "key"},
		{"/v1/x?b64=" + forms["std"]([]byte("u:"), []byte(p), nil), "b64"},
	} {
		out, u := s.ForwardURL(c.target, []string{"SYMBOLS"})
		q, err := url.ParseRequestURI(out)
		if err != nil || len(u.Replaced) != 1 {
			t.Fatalf("%q became %q (%v), %+v", c.target, out, err, u)
		}
		got := q.Query().Get(c.key)
		if c.key == "b64" {
			d, _ := base64.StdEncoding.DecodeString(got)
			got = strings.TrimPrefix(string(d), "u:")
		}
		if got != string(v) || q.Query().Get("n") != "1" && c.key == "key" {
			t.Errorf("%q became %q: %s = %q", c.target, out, c.key, got)
		}
	}
	// Refused elsewhere, untouched.
	if out, u := s.ForwardURL("/?key="+p, nil); out != "/?key="+p || len(u.Refused) != 1 {
		t.Errorf("ForwardURL to another host: %q, %+v", out, u)
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}
