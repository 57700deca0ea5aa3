package netpolicy

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCompileSyntax(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	tests := []struct {
		rule    string
		allowOK bool   // accepted as an Allow rule
		denyOK  bool   // accepted as a Deny rule
		err     string // substring of the Allow error
	}{
		{"api.github.com", true, true, ""},
		{"API.GitHub.COM", true, true, ""},
		{"api.github.com.", true, true, ""},
		{"*.example.com", true, true, ""},
		{"*.example.com.", true, true, ""},
		{"api.github.com:8443", true, true, ""},
		{"*.example.com:443", true, true, ""},
		{"localhost", true, true, ""},
		{"xn--bcher-kva.example", true, true, ""},
		{"a-b.c-d.example", true, true, ""},
		{"1password.com", true, true, ""},
		{long63 + ".com", true, true, ""},
		{strings.Repeat("a.", 125) + "com", true, true, ""}, // 253 characters
		{"93.184.215.14", true, true, ""},
		{"93.184.215.14:443", true, true, ""},
		{"93.184.215.0/24", true, true, ""},
		{"93.184.215.0/24:8080", true, true, ""},
		{"[2606:2800:21f:cb07:6820:80da:af6b:8b2c]", true, true, ""},
		{"[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443", true, true, ""},
		{"[2606:2800::/32]:443", true, true, ""},
		{"example.com:1", true, true, ""},
		{"example.com:65535", true, true, ""},

		// Wildcards over public suffixes: wrong to allow, fine to deny.
		{"*.com", false, true, `public suffix "com"`},
		{"*.co.uk", false, true, `public suffix "co.uk"`},
		{"*.github.io", false, true, `public suffix "github.io"`},
		{"*.internal", false, true, `public suffix "internal"`},
		{"*.COM.", false, true, `public suffix "com"`},

		{"", false, false, "empty rule"},
		{"*", false, false, "allow_all"},
		{"*.", false, false, "empty host name"},
		{"*.*.example.com", false, false, `label "*"`},
		{"a.*.example.com", false, false, `label "*"`},
		{"*example.com", false, false, `label "*example"`},
		{"**.example.com", false, false, "label"},
		{".example.com", false, false, "empty label"},
		{"example..com", false, false, "empty label"},
		{"example.com..", false, false, "empty label"},
		{".", false, false, "empty host name"},
		{"-example.com", false, false, "starts or ends with '-'"},
		{"example-.com", false, false, "starts or ends with '-'"},
		{"exa_mple.com", false, false, `character '_'`},
		{"exa mple.com", false, false, `character ' '`},
		{" example.com", false, false, `character ' '`},
		{"example.com/path", false, false, "not an IP address or CIDR"},
		{"https://example.com", false, false, "port"},
		{"bücher.example", false, false, "punycode"},
		{"ex\x00ample.com", false, false, "character"},
		{long63 + "a.com", false, false, "longer than 63"},
		{strings.Repeat("a.", 126) + "com", false, false, "longer than 253"},
		{strings.Repeat("a.", 125) + "com.", true, true, ""}, // the trailing dot does not count
		{"example.123", false, false, "ends in a number"},
		{"127.1", false, false, "ends in a number"},
		{"0x7f.0.0.1", false, false, "ends in a number"},
		{"1.2.3.4.", false, false, "ends in a number"},
		{"1.2.3.256", false, false, "not an IP address"},
		{"01.2.3.4", false, false, "not an IP address"},
		{"example.com:", false, false, "empty port"},
		{"example.com:0", false, false, "1..65535"},
		{"example.com:65536", false, false, "1..65535"},
		{"example.com:080", false, false, "1..65535"},
		{"example.com:+80", false, false, "1..65535"},
		{"example.com:http", false, false, "1..65535"},
		{"example.com:443:443", false, false, "bracketed"},
		{":443", false, false, "empty host name"},
		{"2606:2800::1", false, false, "bracketed"},
		{"2606:2800::1:443", false, false, "bracketed"},
		{"[2606:2800::1", false, false, "missing ']'"},
		{"[2606:2800::1]443", false, false, "after ']'"},
		{"[2606:2800::1]:", false, false, "after ']'"},
		{"[2606:2800::1%eth0]", false, false, "not an IP address"},
		{"[93.184.215.14]", false, false, "only IPv6 literals are bracketed"},
		{"[example.com]", false, false, "not an IP address"},
		{"[::ffff:93.184.215.14]", false, false, "IPv4 form"},
		{"93.184.215.14/33", false, false, "not an IP address or CIDR"},
		{"93.184.215.1/24", false, false, "did you mean 93.184.215.0/24"},
		{"[2606:2800::1/32]", false, false, "host bits"},
	}
	for _, tt := range tests {
		_, err := Compile(Rules{Allow: []string{tt.rule}})
		if (err == nil) != tt.allowOK {
			t.Errorf("Compile(Allow %q) error = %v, want ok=%v", tt.rule, err, tt.allowOK)
		} else if err != nil {
			if !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Compile(Allow %q) error = %q, want it to contain %q", tt.rule, err, tt.err)
			}
			if !strings.HasPrefix(err.Error(), "allow rule ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("Compile(Allow %q) error = %q, want one line naming the rule", tt.rule, err)
			}
		}
		_, err = Compile(Rules{Deny: []string{tt.rule}})
		if (err == nil) != tt.denyOK {
			t.Errorf("Compile(Deny %q) error = %v, want ok=%v", tt.rule, err, tt.denyOK)
		}
	}
}

func TestCompileOther(t *testing.T) {
	tests := []struct {
		name string
		r    Rules
		err  string // empty: must compile
	}{
		{"zero", Rules{}, ""},
		{"private literal needs AllowPrivate", Rules{Allow: []string{"10.0.0.5:5432"}}, `allow rule "10.0.0.5:5432": the address is not public`},
		{"private literal with AllowPrivate", Rules{
			Allow:        []string{"10.0.0.5:5432"},
			AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		}, ""},
		{"metadata literal", Rules{
			Allow:        []string{"169.254.169.254"},
			AllowPrivate: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")},
		}, "metadata"},
		{"whole internet CIDR", Rules{Allow: []string{"0.0.0.0/0"}}, "not public"},
		{"deny reason for a rule", Rules{
			Deny:        []string{"evil.example"},
			DenyReasons: map[string]string{"evil.example": "no"},
		}, ""},
		{"deny reason for a missing rule", Rules{
			Deny:        []string{"evil.example"},
			DenyReasons: map[string]string{"Evil.example": "no"},
		}, `deny reason for "Evil.example": no such deny rule`},
		{"invalid AllowPrivate", Rules{AllowPrivate: []netip.Prefix{{}}}, "private range"},
		{"mapped AllowPrivate", Rules{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}}, "private range"},
		{"hosts", Rules{Hosts: map[string]netip.Addr{"Api.Example.com.": netip.MustParseAddr("93.184.215.14")}}, ""},
		{"hosts bad name", Rules{Hosts: map[string]netip.Addr{"*.example.com": netip.MustParseAddr("93.184.215.14")}}, `hosts entry "*.example.com"`},
		{"hosts private", Rules{Hosts: map[string]netip.Addr{"db.internal": netip.MustParseAddr("10.0.0.5")}}, "not public"},
		{"hosts private allowed", Rules{
			Hosts:        map[string]netip.Addr{"db.internal": netip.MustParseAddr("10.0.0.5")},
			AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")},
		}, ""},
		{"hosts metadata", Rules{
			Hosts:        map[string]netip.Addr{"meta.internal": netip.MustParseAddr("169.254.169.254")},
			AllowPrivate: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")},
		}, "metadata"},
		{"hosts conflict", Rules{Hosts: map[string]netip.Addr{
			"a.example.com": netip.MustParseAddr("93.184.215.14"),
			"A.example.com": netip.MustParseAddr("93.184.215.15"),
		}}, "also given"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.r)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error = %v, want it to contain %q", tt.name, err, tt.err)
		}
	}
}

func TestDecide(t *testing.T) {
	p, err := Compile(Rules{
		Allow: []string{
			"api.github.com",
			"*.example.com",
			"pypi.org:8443",
			"Upper.Example.ORG.",
			"93.184.215.14:443",
			"[2606:2800:21f:cb07:6820:80da:af6b:8b2c]",
			"93.184.216.0/24:22",
			"10.0.0.5:5432",
			"db.corp.internal:5432",
			"blocked.example.com:9000",
		},
		Deny: []string{
			"evil.example.com",
			"*.secret.example.com",
			"blocked.example.com:9000",
			"93.184.216.66",
		},
		DenyReasons: map[string]string{
			"evil.example.com": "evil.example.com is off limits for this task",
		},
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		port   uint16
		allow  bool
		rule   string
		reason string
	}{
		// Exact names on the default ports only.
		{"api.github.com", 443, true, "api.github.com", ""},
		{"api.github.com", 80, true, "api.github.com", ""},
		{"api.github.com", 22, false, "", "api.github.com:22 is not in the allowlist"},
		{"api.github.com", 8443, false, "", "api.github.com:8443 is not in the allowlist"},
		{"github.com", 443, false, "", "github.com:443 is not in the allowlist"},
		{"x.api.github.com", 443, false, "", "x.api.github.com:443 is not in the allowlist"},
		// Case and the trailing dot.
		{"API.GitHub.com", 443, true, "api.github.com", ""},
		{"api.github.com.", 443, true, "api.github.com", ""},
		{"api.github.com..", 443, false, "", `"api.github.com.." is not a valid host name`},
		{"upper.example.org", 443, true, "Upper.Example.ORG.", ""},
		// Wildcards: subdomains at any depth, never the apex or look-alikes.
		{"www.example.com", 443, true, "*.example.com", ""},
		{"a.b.example.com", 80, true, "*.example.com", ""},
		{"example.com", 443, false, "", "example.com:443 is not in the allowlist"},
		{"badexample.com", 443, false, "", "badexample.com:443 is not in the allowlist"},
		{"www.example.com.evil.net", 443, false, "", "www.example.com.evil.net:443 is not in the allowlist"},
		{"www.example.com", 8080, false, "", "www.example.com:8080 is not in the allowlist"},
		// host:port.
		{"pypi.org", 8443, true, "pypi.org:8443", ""},
		{"pypi.org", 443, false, "", "pypi.org:443 is not in the allowlist"},
		// Deny wins, with the operator's reason when there is one.
		{"evil.example.com", 443, false, "evil.example.com", "evil.example.com is off limits for this task"},
		{"evil.example.com", 1234, false, "evil.example.com", "evil.example.com is off limits for this task"},
		{"EVIL.example.com.", 443, false, "evil.example.com", "evil.example.com is off limits for this task"},
		{"x.secret.example.com", 443, false, "*.secret.example.com", "x.secret.example.com:443 is denied by policy"},
		{"secret.example.com", 443, true, "*.example.com", ""},
		{"blocked.example.com", 9000, false, "blocked.example.com:9000", "blocked.example.com:9000 is denied by policy"},
		{"blocked.example.com", 443, true, "*.example.com", ""},
		// Literal addresses.
		{"93.184.215.14", 443, true, "93.184.215.14:443", ""},
		{"93.184.215.14", 80, false, "", "93.184.215.14:80 is not in the allowlist"},
		{"::ffff:93.184.215.14", 443, true, "93.184.215.14:443", ""},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", 80, true, "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]", ""},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2d", 443, false, "", "[2606:2800:21f:cb07:6820:80da:af6b:8b2d]:443 is not in the allowlist"},
		{"93.184.216.7", 22, true, "93.184.216.0/24:22", ""},
		{"93.184.216.66", 22, false, "93.184.216.66", "93.184.216.66:22 is denied by policy"},
		{"10.0.0.5", 5432, true, "10.0.0.5:5432", ""},
		{"8.8.8.8", 443, false, "", "8.8.8.8:443 is not in the allowlist"},
		{"fe80::1%eth0", 443, false, "", `"fe80::1%eth0" is not a valid address`},
		// A name allowed by rule still needs AddressAllowed once resolved;
		// Decide only says the name may be tried.
		{"db.corp.internal", 5432, true, "db.corp.internal:5432", ""},
		// Malformed requests.
		{"", 443, false, "", `"" is not a valid host name`},
		{"api.github.com", 0, false, "", "port 0 is not allowed"},
		{"[::1]", 443, false, "", `"[::1]" is not a valid host name`},
		{"api.github.com\n", 443, false, "", `"api.github.com\n" is not a valid host name`},
		{"*.example.com", 443, false, "", `"*.example.com" is not a valid host name`},
	}
	for _, tt := range tests {
		v := p.Decide(context.Background(), Request{Name: tt.name, Port: tt.port})
		want := Verdict{Allow: tt.allow, Rule: tt.rule, Reason: tt.reason}
		if v != want {
			t.Errorf("Decide(%q, %d) = %+v, want %+v", tt.name, tt.port, v, want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v := p.Decide(ctx, Request{Name: "api.github.com", Port: 443}); v.Allow {
		t.Error("Decide with a cancelled context allowed the request")
	}
}

func TestDecideLiteralNeedsAddressAllowed(t *testing.T) {
	// A literal rule inside an AllowPrivate range passes Compile, but a
	// loopback or metadata address in a wider CIDR still fails per request.
	p, err := Compile(Rules{
		Allow:        []string{"10.0.0.0/8", "[fd00::/8]"},
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("fd00::/8")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		addr   string
		allow  bool
		reason string
	}{
		{"10.0.1.1", true, ""},
		{"10.1.0.1", false, "10.1.0.1:443: the address is not public"},
		{"fd00:ec2::254", false, "[fd00:ec2::254]:443: the address is a cloud metadata endpoint"},
		{"fd00::1", true, ""},
	} {
		v := p.Decide(context.Background(), Request{Name: tt.addr, Port: 443})
		if v.Allow != tt.allow || v.Reason != tt.reason {
			t.Errorf("Decide(%s) = %+v, want allow=%v reason=%q", tt.addr, v, tt.allow, tt.reason)
		}
	}
}

func TestAllowAll(t *testing.T) {
	p, err := Compile(Rules{
		AllowAll:    true,
		Deny:        []string{"*.ru", "evil.example.com", "mail.example.com:25"},
		DenyReasons: map[string]string{"*.ru": "no .ru for this task"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		port   uint16
		allow  bool
		rule   string
		reason string
	}{
		{"example.com", 443, true, AllowAllRule, ""},
		{"example.com", 22, true, AllowAllRule, ""},
		{"user.github.io", 443, true, AllowAllRule, ""},
		{"www.bbc.co.uk", 443, true, AllowAllRule, ""},
		{"mail.example.com", 587, true, AllowAllRule, ""},
		{"mail.example.com", 25, false, "mail.example.com:25", "mail.example.com:25 is denied by policy"},
		{"evil.example.com", 443, false, "evil.example.com", "evil.example.com:443 is denied by policy"},
		{"yandex.ru", 443, false, "*.ru", "no .ru for this task"},
		// Not public names: the reason says so, not "not in the allowlist".
		{"localhost", 443, false, "", "localhost is not a public name, and only public names are allowed"},
		{"com", 443, false, "", "com is not a public name, and only public names are allowed"},
		{"db.internal", 443, false, "", "db.internal is not a public name, and only public names are allowed"},
		{"printer.local", 443, false, "", "printer.local is not a public name, and only public names are allowed"},
		{"foo.localhost", 443, false, "", "foo.localhost is not a public name, and only public names are allowed"},
		{"1.0.0.127.in-addr.arpa", 443, false, "", "1.0.0.127.in-addr.arpa is not a public name, and only public names are allowed"},
		{"router.home.arpa", 80, false, "", "router.home.arpa is not a public name, and only public names are allowed"},
		// No raw IP egress through AllowAll.
		{"8.8.8.8", 443, false, "", "8.8.8.8:443 is not in the allowlist"},
		{"2001:4860:4860::8888", 443, false, "", "[2001:4860:4860::8888]:443 is not in the allowlist"},
	}
	for _, tt := range tests {
		v := p.Decide(context.Background(), Request{Name: tt.name, Port: tt.port})
		want := Verdict{Allow: tt.allow, Rule: tt.rule, Reason: tt.reason}
		if v != want {
			t.Errorf("Decide(%q, %d) = %+v, want %+v", tt.name, tt.port, v, want)
		}
	}
}

func TestDecideName(t *testing.T) {
	p, err := Compile(Rules{
		Allow: []string{"api.github.com", "*.example.com", "pypi.org:8443", "93.184.215.14", "smtp.example.net:25", "*.wild.test"},
		Deny:  []string{"evil.example.com", "*.secret.example.com", "smtp.example.net:25", "blocked.wild.test"},
		DenyReasons: map[string]string{
			"blocked.wild.test":   "use the API instead",
			"smtp.example.net:25": "no mail",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const notAllowed = " is not in the allowlist"
	tests := []struct {
		name string
		want Verdict
	}{
		{"api.github.com", Verdict{Allow: true, Rule: "api.github.com"}},
		{"API.GITHUB.COM.", Verdict{Allow: true, Rule: "api.github.com"}},
		{"pypi.org", Verdict{Allow: true, Rule: "pypi.org:8443"}}, // on its one port
		{"www.example.com", Verdict{Allow: true, Rule: "*.example.com"}},
		{"example.com", Verdict{Reason: "example.com" + notAllowed}},
		{"github.com", Verdict{Reason: "github.com" + notAllowed}},
		// Denied on every port: the deny rule's reason, as a connection gets.
		{"evil.example.com", Verdict{Reason: "evil.example.com is denied by policy", Rule: "evil.example.com"}},
		{"x.secret.example.com", Verdict{Reason: "x.secret.example.com is denied by policy", Rule: "*.secret.example.com"}},
		{"blocked.wild.test", Verdict{Reason: "use the API instead", Rule: "blocked.wild.test"}},
		{"Blocked.Wild.Test.", Verdict{Reason: "use the API instead", Rule: "blocked.wild.test"}},
		{"other.wild.test", Verdict{Allow: true, Rule: "*.wild.test"}},
		// Denied on port 25 only: DNS answers, and Decide refuses the connection.
		{"smtp.example.net", Verdict{Allow: true, Rule: "smtp.example.net:25"}},
		// Literal addresses are not names.
		{"93.184.215.14", Verdict{Reason: `"93.184.215.14" is not a valid host name`}},
		{"2001:db8::1", Verdict{Reason: `"2001:db8::1" is not a valid host name`}},
		{"", Verdict{Reason: `"" is not a valid host name`}},
		{"api.github.com..", Verdict{Reason: `"api.github.com.." is not a valid host name`}},
		{"*.example.com", Verdict{Reason: `"*.example.com" is not a valid host name`}},
		// Any bytes a DNS label can hold come back escaped.
		{"\u212Aernel.example.com", Verdict{Reason: `"\u212aernel.example.com" is not a valid host name`}}, // KELVIN SIGN
		{"a\x1b[2Jb.example.com", Verdict{Reason: `"a\x1b[2Jb.example.com" is not a valid host name`}},
	}
	for _, tt := range tests {
		if got := p.DecideName(tt.name); got != tt.want {
			t.Errorf("DecideName(%q) = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// A name of any bytes gives a reason of bounded length.
	if r := p.DecideName(strings.Repeat("\x00", 255)).Reason; len(r) > 300 {
		t.Errorf("a reason of %d bytes: %q", len(r), r)
	}
	// The operator's reason is the one a connection gets too.
	ctx := context.Background()
	if dns, conn := p.DecideName("blocked.wild.test"), p.Decide(ctx, Request{Name: "blocked.wild.test", Port: 443}); dns != conn {
		t.Errorf("blocked.wild.test: DecideName %+v, Decide %+v", dns, conn)
	}

	all, err := Compile(Rules{AllowAll: true, Deny: []string{"*.ru"}, DenyReasons: map[string]string{"*.ru": "no .ru for this task"}})
	if err != nil {
		t.Fatal(err)
	}
	const notPublic = " is not a public name, and only public names are allowed"
	for name, want := range map[string]Verdict{
		"example.com":      {Allow: true, Rule: AllowAllRule},
		"user.github.io":   {Allow: true, Rule: AllowAllRule},
		"yandex.ru":        {Reason: "no .ru for this task", Rule: "*.ru"},
		"db.internal":      {Reason: "db.internal" + notPublic},
		"localhost":        {Reason: "localhost" + notPublic},
		"com":              {Reason: "com" + notPublic},
		"router.home.arpa": {Reason: "router.home.arpa" + notPublic},
	} {
		got := all.DecideName(name)
		if got != want {
			t.Errorf("AllowAll: DecideName(%q) = %+v, want %+v", name, got, want)
		}
		// The same verdict as a connection to the name.
		if conn := all.Decide(ctx, Request{Name: name, Port: 443}); conn != got {
			t.Errorf("AllowAll: DecideName(%q) = %+v, but Decide = %+v", name, got, conn)
		}
	}
}

func TestHost(t *testing.T) {
	a := netip.MustParseAddr("93.184.215.14")
	p, err := Compile(Rules{Hosts: map[string]netip.Addr{"Pinned.Example.com.": a}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"pinned.example.com": true, "PINNED.example.com.": true, "other.example.com": false, "": false,
	} {
		got, ok := p.Host(name)
		if ok != want || (ok && got != a) {
			t.Errorf("Host(%q) = %v, %v; want ok=%v", name, got, ok, want)
		}
	}
	// Pinning a name does not allow it.
	if p.DecideName("pinned.example.com").Allow {
		t.Error("a Hosts entry allowed its name")
	}
}

// Compile's errors say which rule, by list and place, so that the config's
// loader can name the line it was written on.
func TestRuleError(t *testing.T) {
	for _, tc := range []struct {
		r     Rules
		list  string
		index int
		rule  string
	}{
		{Rules{Allow: []string{"ok.test", "*.com"}}, "allow", 1, "*.com"},
		{Rules{Deny: []string{"[::1"}}, "deny", 0, "[::1"},
		{Rules{Deny: []string{"a.test"}, DenyReasons: map[string]string{"b.test": "no"}}, "deny_reasons", -1, "b.test"},
		{Rules{Hosts: map[string]netip.Addr{"x..test": netip.MustParseAddr("1.1.1.1")}}, "hosts", -1, "x..test"},
	} {
		_, err := Compile(tc.r)
		var re *RuleError
		if !errors.As(err, &re) || re.List != tc.list || re.Index != tc.index || re.Rule != tc.rule {
			t.Errorf("Compile(%+v) = %#v, want %s[%d] %q", tc.r, err, tc.list, tc.index, tc.rule)
		}
	}
}
