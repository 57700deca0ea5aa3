package secrets

import (
	"encoding/base64"
	"net/http"
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
