package whatwgurl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// The web-platform-tests' URL data is not vendored: Debian ships it in the
// source package of Rust's url crate (librust-url-dev), which .ci/run
// installs. wptFile finds one of its files.
func wptFile(t *testing.T, name string) []byte {
	t.Helper()
	files, _ := filepath.Glob("/usr/share/cargo/registry/url-*/tests/" + name)
	if len(files) == 0 {
		testenv.Missing(t, "no web-platform-tests URL data: apt-get install librust-url-dev")
	}
	sort.Strings(files)
	b, err := os.ReadFile(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// knownFailures are the cases this package fails on purpose, by the name
// the tests give them: "INPUT against BASE" and "ATTR = VALUE on HREF".
// The data is Debian's copy from rust-url 2.3.1 (late 2022), so besides
// the IDNA this package leaves out, some cases predate the Standard it
// follows (the 2026-08 review draft), and a few are rust-url's own edits.
var knownFailures = map[string]string{
	// No IDNA: a domain with a non-ASCII code point is refused (ErrIDNA)
	// instead of being mapped and punycoded.
	"http://GOO\u200b\u2060\ufeffgoo.com against http://other.com/":                                             idna,
	"http://www.foo\u3002bar.com against http://other.com/":                                                     idna,
	"http://\uff27\uff4f.com against http://other.com/":                                                         idna,
	"http://\u4f60\u597d\u4f60\u597d against http://other.com/":                                                 idna,
	"https://fa\u00df.ExAmPlE/ against about:blank":                                                             idna,
	"http://\uff10\uff38\uff43\uff10\uff0e\uff10\uff12\uff15\uff10\uff0e\uff10\uff11 against http://other.com/": idna,
	"ftp://%e2%98%83 against about:blank":                                                                       idna,
	"https://%e2%98%83 against about:blank":                                                                     idna,
	"file://a\u00adb/p against about:blank":                                                                     idna,
	"file://a%C2%ADb/p against about:blank":                                                                     idna,
	"host = \u00df on https://x/":                                                                               idna,

	// The domain parser now lowercases an ASCII domain whatever Unicode
	// ToASCII says of it (web compatibility); the data still wants
	// failure for labels that are not valid punycode.
	"http://a.b.c.xn--pokxncvks against about:blank":  newer,
	"http://10.0.0.xn--pokxncvks against about:blank": newer,
	"http://a.b.c.XN--pokxncvks against about:blank":  newer,
	"http://a.b.c.Xn--pokxncvks against about:blank":  newer,
	"http://10.0.0.XN--pokxncvks against about:blank": newer,
	"http://10.0.0.xN--pokxncvks against about:blank": newer,
	"file://xn--/p against about:blank":               newer,

	// ^ joined the path percent-encode set after the data was taken.
	"foo://host/ !\"$%&'()*+,-./:;<=>@[\\]^_`{|}~ against about:blank":                                          newer,
	"wss://host/ !\"$%&'()*+,-./:;<=>@[\\]^_`{|}~ against about:blank":                                          newer,
	"pathname = \x00\x01\t\n\r\x1f !\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~\x7f\u0080\u0081\u00c9\u00e9 on a:/": newer,

	// The hostname setter now refuses a value with a port outright.
	"hostname = example.com:8080 on http://example.net/path":  newer,
	"hostname = example.com: on http://example.net:8080/path": newer,

	// rust-url's copy wants leading empty segments of a file path dropped,
	// as rust-url does; the web-platform-tests and browsers keep them
	// (rust-url issue 1118).
	"pathname = \\\\ on file://monkey/":           rustURL,
	"pathname = //\\/ on file:///unicorn":         rustURL,
	"pathname = //monkey/..// on file:///unicorn": rustURL,
}

const (
	idna    = "no IDNA"
	newer   = "the Standard changed after the data was taken"
	rustURL = "rust-url's edit of the data"
)

// getters reads the URL class's attributes, by their names in the data.
var getters = map[string]func(*URL) string{
	"href": (*URL).Href, "origin": (*URL).Origin, "protocol": (*URL).Protocol,
	"username": (*URL).Username, "password": (*URL).Password, "host": (*URL).Host,
	"hostname": (*URL).Hostname, "port": (*URL).Port, "pathname": (*URL).Pathname,
	"search": (*URL).Search, "hash": (*URL).Hash,
}

func TestWPTURLTestData(t *testing.T) {
	var cases []json.RawMessage
	if err := json.Unmarshal(wptFile(t, "urltestdata.json"), &cases); err != nil {
		t.Fatal(err)
	}
	ran, failed := 0, 0
	for _, raw := range cases {
		var tc struct {
			Input      string
			Base       *string
			Failure    bool
			RelativeTo *string
		}
		if json.Unmarshal(raw, &tc) != nil {
			continue // a comment
		}
		var want map[string]any
		_ = json.Unmarshal(raw, &want)
		base := ""
		if tc.Base != nil {
			base = *tc.Base
		}
		name := tc.Input + " against " + base
		ran++
		msg := checkParse(tc.Input, base, tc.Failure, tc.RelativeTo == nil, want)
		if why, known := knownFailures[name]; known {
			if msg == "" {
				t.Errorf("%q passes but is listed as a known failure (%s): remove it from the list", name, why)
			}
			continue
		}
		if msg != "" {
			failed++
			t.Errorf("%q: %s", name, msg)
		}
	}
	t.Logf("%d cases of urltestdata.json, %d failed", ran, failed)
}

// parseRef parses input against base, if not empty, as the URL
// constructor does with two strings.
func parseRef(input, base string) (*URL, error) {
	if base == "" {
		return Parse(input, nil)
	}
	b, err := Parse(base, nil)
	if err != nil {
		return nil, err
	}
	return Parse(input, b)
}

// checkParse runs one urltestdata.json case and says what went wrong.
func checkParse(input, base string, failure, neverParses bool, want map[string]any) string {
	u, err := parseRef(input, base)
	if failure {
		if err == nil {
			return "parsed to " + u.Href() + ", want failure"
		}
		// Input that never parses must not work as a base either.
		if _, err := parseRef("about:blank", input); neverParses && err == nil {
			return "works as a base, want failure"
		}
		return ""
	}
	if err != nil {
		return err.Error()
	}
	for k, get := range getters {
		if w, ok := want[k].(string); ok && get(u) != w {
			return k + " is " + get(u) + ", want " + w
		}
	}
	if again, err := Parse(u.Href(), nil); err != nil || again.Href() != u.Href() {
		return "its href does not parse back to itself"
	}
	return ""
}

func TestWPTSetters(t *testing.T) {
	var groups map[string]json.RawMessage
	if err := json.Unmarshal(wptFile(t, "setters_tests.json"), &groups); err != nil {
		t.Fatal(err)
	}
	setters := map[string]func(*URL, string){
		"protocol": (*URL).SetProtocol, "username": (*URL).SetUsername, "password": (*URL).SetPassword,
		"host": (*URL).SetHost, "hostname": (*URL).SetHostname, "port": (*URL).SetPort,
		"pathname": (*URL).SetPathname, "search": (*URL).SetSearch, "hash": (*URL).SetHash,
		"href": func(u *URL, v string) { _ = u.SetHref(v) },
	}
	ran, failed := 0, 0
	for attr, raw := range groups {
		if attr == "comment" {
			continue
		}
		set := setters[attr]
		if set == nil {
			t.Errorf("no setter %s", attr)
			continue
		}
		var cases []struct {
			Href     string
			NewValue string `json:"new_value"`
			Expected map[string]string
		}
		if err := json.Unmarshal(raw, &cases); err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			name := attr + " = " + tc.NewValue + " on " + tc.Href
			ran++
			msg := ""
			u, err := Parse(tc.Href, nil)
			if err != nil {
				msg = err.Error()
			} else {
				set(u, tc.NewValue)
				for k, w := range tc.Expected {
					if got := getters[k](u); got != w {
						msg += k + " is " + got + ", want " + w + "; "
					}
				}
			}
			if why, known := knownFailures[name]; known {
				if msg == "" {
					t.Errorf("%q passes but is listed as a known failure (%s): remove it from the list", name, why)
				}
				continue
			}
			if msg != "" {
				failed++
				t.Errorf("%q: %s", name, msg)
			}
		}
	}
	t.Logf("%d cases of setters_tests.json, %d failed", ran, failed)
}
