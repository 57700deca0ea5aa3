package whatwgurl

import (
	"errors"
	"testing"
)

// Cases from the Standard's own examples, and ones newer than the
// web-platform-tests data that wpt_test.go reads.
func TestParse(t *testing.T) {
	for _, tc := range []struct{ input, base, want string }{
		// Userinfo keeps its percent-encoding (Crucible used to decode it).
		{"https://User:Pa%20ss@host/", "", "https://User:Pa%20ss@host/"},
		{"https://us er:pa ss@h.com/", "", "https://us%20er:pa%20ss@h.com/"},
		{"http://a@b@c/", "", "http://a%40b@c/"},
		// The Standard's table of parses.
		{"https:example.org", "", "https://example.org/"},
		{"https://////example.com///", "", "https://example.com///"},
		{"https://example.com/././foo", "", "https://example.com/foo"},
		{"hello:world", "https://example.com/", "hello:world"},
		{"https:example.org", "https://example.com/", "https://example.com/example.org"},
		{`\example\..\demo/.\`, "https://example.com/", "https://example.com/demo/"},
		{"example", "https://example.com/demo", "https://example.com/example"},
		{"file:///C|/demo", "", "file:///C:/demo"},
		{"..", "file:///C:/demo", "file:///C:/"},
		{"file://localhost/", "", "file:///"},
		{"file://loc%61lhost/", "", "file:///"},
		{"https://example.org/foo bar", "", "https://example.org/foo%20bar"},
		{"https://EXAMPLE.com/../x", "", "https://example.com/x"},
		{"https://example.org//", "", "https://example.org//"},
		{"https://example.com/[]?[]#[]", "", "https://example.com/[]?[]#[]"},
		{"https://example/%?%#%", "", "https://example/%?%#%"},
		// Dot segments, also percent-encoded.
		{"http://h/a/%2e%2E/b/%2e/c/.%2e", "", "http://h/b/"},
		{"/c:/x", "file:///d:/y", "file:///c:/x"},
		// ^ is in the path percent-encode set (newer than the data).
		{"http://h/a^b?c^d#e^f", "", "http://h/a%5Eb?c^d#e^f"},
		// Hosts: IPv4 in all its forms, IPv6 compressed and with IPv4.
		{"http://0x7f.1/", "", "http://127.0.0.1/"},
		{"http://0300.0250.1.1/", "", "http://192.168.1.1/"},
		{"http://4294967295/", "", "http://255.255.255.255/"},
		{"http://1.2.3.4./", "", "http://1.2.3.4/"},
		{"http://%31%32%37.0.0.1/", "", "http://127.0.0.1/"},
		{"http://[0:0::1]/", "", "http://[::1]/"},
		{"http://[1:0:0:2:0:0:0:3]/", "", "http://[1:0:0:2::3]/"},
		{"http://[::ffff:192.168.0.1]/", "", "http://[::ffff:c0a8:1]/"},
		{"http://[1:2:3:4:5:6:7:8]:8080/", "", "http://[1:2:3:4:5:6:7:8]:8080/"},
		{"sc://EXAMPLE.COM/", "", "sc://EXAMPLE.COM/"},
		{"sc://%41/", "", "sc://%41/"},
		// Ports.
		{"https://h:443/", "", "https://h/"},
		{"http://h:0080/", "", "http://h/"},
		{"ws://h:443/", "", "ws://h:443/"},
		// Opaque paths keep a space, unless it ends up last.
		{"data:text/plain,a b", "", "data:text/plain,a b"},
		{"sc:a b ?q", "", "sc:a b%20?q"},
		{"mailto:x@y?subject=hi", "", "mailto:x@y?subject=hi"},
		// Queries: ' is encoded only in special URLs.
		{"http://h/?a'b", "", "http://h/?a%27b"},
		{"sc://h/?a'b", "", "sc://h/?a'b"},
		// A path-only URL whose path starts with an empty segment.
		{"web+demo:/.//not-a-host/", "", "web+demo:/.//not-a-host/"},
		{"web+demo:/path/..//not-a-host/", "", "web+demo:/.//not-a-host/"},
		// Tabs and newlines go, leading and trailing C0 and spaces too.
		{" \x01https://h.c\tom/a\nb \x1f", "", "https://h.com/ab"},
	} {
		u, err := parseRef(tc.input, tc.base)
		if err != nil {
			t.Errorf("%q against %q: %v", tc.input, tc.base, err)
			continue
		}
		if got := u.Href(); got != tc.want {
			t.Errorf("%q against %q: %s, want %s", tc.input, tc.base, got, tc.want)
		}
	}
}

func TestParseFailure(t *testing.T) {
	for _, tc := range []struct{ input, base string }{
		{"https://ex ample.org/", ""},
		{"example", ""},
		{"https://example.com:demo", ""},
		{"http://[www.example.com]/", ""},
		{"https://h:65536/", ""},
		{"http://", ""},
		{"http://user@/", ""},
		{"http://1.2.3.4.5/", ""},
		{"http://256.256.256.256.256/", ""},
		{"http://0x100000000/", ""},
		{"http://09/", ""},
		{"http://[1::2::3]/", ""},
		{"http://[::1.2.3]/", ""},
		{"http://exa%23mple/", ""},
		{"sc://a b/", ""},
		{"x", "mailto:a@b"},
		{"x", "not a url"},
	} {
		if u, err := parseRef(tc.input, tc.base); err == nil {
			t.Errorf("%q against %q parsed to %s, want failure", tc.input, tc.base, u.Href())
		}
	}
}

// Non-ASCII domains are refused with ErrIDNA, saying what to write instead.
func TestNoIDNA(t *testing.T) {
	_, err := Parse("https://münchen.de/", nil)
	if !errors.Is(err, ErrIDNA) {
		t.Fatalf("error %v, want ErrIDNA", err)
	}
	if u, err := Parse("https://XN--mnchen-3ya.de/", nil); err != nil || u.Hostname() != "xn--mnchen-3ya.de" {
		t.Fatalf("the punycode form: %v, %v", u, err)
	}
	// Opaque hosts are not domains: they are percent-encoded instead.
	if u, err := Parse("sc://münchen/", nil); err != nil || u.Host() != "m%C3%BCnchen" {
		t.Fatalf("an opaque host: %v, %v", u, err)
	}
}

func TestGettersAndSetters(t *testing.T) {
	u, err := Parse("https://User:Pa%20ss@Host:8443/p/a?x=1#frag", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{u.Protocol(), u.Username(), u.Password(), u.Host(), u.Hostname(), u.Port(), u.Pathname(), u.Search(), u.Hash(), u.Origin()}
	want := []string{"https:", "User", "Pa%20ss", "host:8443", "host", "8443", "/p/a", "?x=1", "#frag", "https://host:8443"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("getter %d: %q, want %q", i, got[i], want[i])
		}
	}
	u.SetPassword("p@ss word")
	u.SetUsername("")
	u.SetPort("80x") // digits up to the first other character
	u.SetPathname("/a b/../c?")
	u.SetSearch("?q=a b'")
	u.SetHash("#x y")
	u.SetHostname("EXAMPLE.org")
	u.SetProtocol("wss:")
	if got, want := u.Href(), "wss://:p%40ss%20word@example.org:80/c%3F?q=a%20b%27#x%20y"; got != want {
		t.Errorf("after the setters: %s, want %s", got, want)
	}
	u.SetProtocol("ws") // a port that becomes the default goes
	if got := u.Host(); got != "example.org" {
		t.Errorf("host %s, want no port", got)
	}
	u.SetPort("443")
	u.SetProtocol("mailto") // special stays special
	if got := u.Href(); got != "ws://:p%40ss%20word@example.org:443/c%3F?q=a%20b%27#x%20y" {
		t.Errorf("after the port: %s", got)
	}
	if err := u.SetHref("not a url"); err == nil {
		t.Error("SetHref took an invalid URL")
	}
	for _, tc := range []struct{ href, origin string }{
		{"blob:https://whatwg.org/d0360e2f", "https://whatwg.org"},
		{"blob:ftp://x/", "null"},
		{"file:///tmp/x", "null"},
		{"sc://h/", "null"},
	} {
		if u, err := Parse(tc.href, nil); err != nil || u.Origin() != tc.origin {
			t.Errorf("origin of %s: %v, %v, want %s", tc.href, u, err, tc.origin)
		}
	}
}

// FuzzParse: the parser never panics, what it serializes parses back to
// itself, and so does what any setter makes of it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"https://User:Pa%20ss@host:8080/p/../q?x#y", "file:///C|/a/../..", "sc:a b ?q#f",
		"http://[::ffff:1.2.3.4]/", "http://0x7f.1/", "web+demo:/.//x", "a:/", "\\\\x\\y",
		"//h/p", "?q", "#f", "http://a@b@c:1/", "file://loc%61lhost/", "non-spec:/..//p",
	} {
		f.Add(s, "https://base.example/dir/file?q#f", "x")
	}
	f.Fuzz(func(t *testing.T, input, base, value string) {
		b, _ := Parse(base, nil)
		u, err := Parse(input, b)
		if err != nil {
			return
		}
		roundTrip(t, u, "parse")
		for name, set := range map[string]func(string){
			"protocol": u.SetProtocol, "username": u.SetUsername, "password": u.SetPassword,
			"host": u.SetHost, "hostname": u.SetHostname, "port": u.SetPort,
			"pathname": u.SetPathname, "search": u.SetSearch, "hash": u.SetHash,
		} {
			set(value)
			roundTrip(t, u, name)
		}
	})
}

func roundTrip(t *testing.T, u *URL, after string) {
	href := u.Href()
	again, err := Parse(href, nil)
	if err != nil {
		t.Fatalf("after %s, %q does not parse: %v", after, href, err)
	}
	if again.Href() != href {
		t.Fatalf("after %s, %q parses to %q", after, href, again.Href())
	}
}
