package netpolicy

import (
	"context"
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
		{"*", false, false, "AllowAll"},
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
		// Not public names.
		{"localhost", 443, false, "", "localhost:443 is not in the allowlist"},
		{"com", 443, false, "", "com:443 is not in the allowlist"},
		{"db.internal", 443, false, "", "db.internal:443 is not in the allowlist"},
		{"printer.local", 443, false, "", "printer.local:443 is not in the allowlist"},
		{"foo.localhost", 443, false, "", "foo.localhost:443 is not in the allowlist"},
		{"1.0.0.127.in-addr.arpa", 443, false, "", "1.0.0.127.in-addr.arpa:443 is not in the allowlist"},
		{"router.home.arpa", 80, false, "", "router.home.arpa:80 is not in the allowlist"},
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

func TestAllowsName(t *testing.T) {
	p, err := Compile(Rules{
		Allow: []string{"api.github.com", "*.example.com", "pypi.org:8443", "93.184.215.14", "smtp.example.net:25"},
		Deny:  []string{"evil.example.com", "*.secret.example.com", "smtp.example.net:25"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want bool
	}{
		{"api.github.com", true},
		{"API.GITHUB.COM.", true},
		{"pypi.org", true}, // on its one port
		{"www.example.com", true},
		{"example.com", false},
		{"github.com", false},
		{"evil.example.com", false},     // denied on every port
		{"x.secret.example.com", false}, // likewise
		{"smtp.example.net", true},      // denied on port 25 only: Decide refuses the connection
		{"93.184.215.14", false},        // literal addresses are not names
		{"", false},
		{"api.github.com..", false},
		{"*.example.com", false},
	}
	for _, tt := range tests {
		if got := p.AllowsName(tt.name); got != tt.want {
			t.Errorf("AllowsName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}

	all, err := Compile(Rules{AllowAll: true, Deny: []string{"*.ru"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"example.com": true, "yandex.ru": false, "db.internal": false, "localhost": false, "8.8.8.8": false,
	} {
		if got := all.AllowsName(name); got != want {
			t.Errorf("AllowAll: AllowsName(%q) = %v, want %v", name, got, want)
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
	if p.AllowsName("pinned.example.com") {
		t.Error("a Hosts entry allowed its name")
	}
}
