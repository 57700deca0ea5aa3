package netpolicy

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"api.github.com", "*.example.com", "example.com:8443", "*.co.uk", "*", "Example.COM.",
		"93.184.215.14", "10.0.0.0/8:5432", "[2001:db8::1]:443", "2001:db8::1:443", "[::ffff:1.2.3.4]",
		"bücher.example", "example..com", "127.1", "a:0", "[", "]:", "xn--bcher-kva.example",
	} {
		f.Add(s, strings.TrimPrefix(s, "*."), uint16(443))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, rule, name string, port uint16) {
		allow, allowErr := Compile(Rules{Allow: []string{rule}})
		_, denyErr := Compile(Rules{Deny: []string{rule}})
		if allowErr == nil && denyErr != nil {
			t.Fatalf("%q is a valid Allow rule but not a valid Deny rule: %v", rule, denyErr)
		}
		for _, err := range []error{allowErr, denyErr} {
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error for %q: %q", rule, err)
			}
		}
		if allowErr != nil {
			return
		}

		req := Request{Name: name, Port: port}
		v := allow.Decide(ctx, req)
		if v.Allow == (v.Reason != "") {
			t.Fatalf("Decide(%+v) under %q = %+v: Reason must be set exactly when refused", req, rule, v)
		}
		if v.Allow && v.Rule != rule {
			t.Fatalf("Decide(%+v) under %q allowed by rule %q", req, rule, v.Rule)
		}
		// DNS must answer for every name a connection could be allowed to,
		// and say why it refuses.
		dv := allow.DecideName(name)
		if dv.Allow == (dv.Reason != "") || len(dv.Reason) > 300 {
			t.Fatalf("DecideName(%q) under %q = %+v: Reason must be set, and short, exactly when refused", name, rule, dv)
		}
		if _, err := netip.ParseAddr(name); err != nil && v.Allow && !dv.Allow {
			t.Fatalf("Decide(%+v) under %q allows, but DecideName(%q) refuses: %+v", req, rule, name, dv)
		}

		// Deny wins over the same rule in Allow.
		both, err := Compile(Rules{Allow: []string{rule}, Deny: []string{rule}})
		if err != nil {
			t.Fatalf("Compile(Allow and Deny %q): %v", rule, err)
		}
		if v := both.Decide(ctx, req); v.Allow {
			t.Fatalf("Decide(%+v) with %q in Allow and Deny = %+v", req, rule, v)
		}
		if !strings.Contains(rule[strings.LastIndexByte(rule, ']')+1:], ":") {
			if dv := both.DecideName(name); dv.Allow || (dv.Rule != "" && dv.Rule != rule) {
				t.Fatalf("DecideName(%q) with port-less %q in Allow and Deny = %+v", name, rule, dv)
			}
		}
	})
}

func FuzzPublic(f *testing.F) {
	f.Add([]byte{8, 8, 8, 8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{127, 0, 0, 1, 0x80, 0xff, 0xff, 0xfe})
	f.Add([]byte{169, 254, 169, 254})
	f.Add([]byte{0x20, 0x02, 0x7f, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0, 0x64, 0xff, 0x9b, 0, 1, 0xa9, 0xfe, 0, 0xa9, 0xfe, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var a16 [16]byte
		copy(a16[:], b)
		a := netip.AddrFrom16(a16)
		// Any address: no panic, and metadata is never public.
		if Metadata(a) && Public(a) {
			t.Fatalf("%s is both metadata and public", a)
		}
		if a.Is4In6() && Public(a) != Public(a.Unmap()) {
			t.Fatalf("Public(%s) = %v but Public(%s) = %v", a, Public(a), a.Unmap(), Public(a.Unmap()))
		}

		// Every embedded form of an IPv4 address judges it as the address itself.
		v4 := netip.AddrFrom4([4]byte(a16[:4]))
		other := [4]byte(a16[4:8])
		forms := map[string]netip.Addr{
			"mapped": netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: a16[0], 13: a16[1], 14: a16[2], 15: a16[3]}),
			"compat": netip.AddrFrom16([16]byte{12: a16[0], 13: a16[1], 14: a16[2], 15: a16[3]}),
			"nat64":  netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: a16[0], 13: a16[1], 14: a16[2], 15: a16[3]}),
			"6to4": netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: a16[0], 3: a16[1], 4: a16[2], 5: a16[3],
				6: a16[8], 7: a16[9], 8: a16[10], 15: a16[11]}),
		}
		for kind, e := range forms {
			if Public(e) != Public(v4) {
				t.Fatalf("%s %s: Public = %v, but Public(%s) = %v", kind, e, Public(e), v4, Public(v4))
			}
			if Metadata(e) != Metadata(v4) {
				t.Fatalf("%s %s: Metadata = %v, but Metadata(%s) = %v", kind, e, Metadata(e), v4, Metadata(v4))
			}
		}
		// Teredo: server is v4, client is other, stored XOR 0xff.
		client := netip.AddrFrom4(other)
		ter := netip.AddrFrom16([16]byte{0: 0x20, 1: 0x01, 4: a16[0], 5: a16[1], 6: a16[2], 7: a16[3],
			8: a16[8], 10: a16[9], 11: a16[10],
			12: other[0] ^ 0xff, 13: other[1] ^ 0xff, 14: other[2] ^ 0xff, 15: other[3] ^ 0xff})
		if want := Public(v4) && Public(client); Public(ter) != want {
			t.Fatalf("Teredo %s (server %s, client %s): Public = %v, want %v", ter, v4, client, Public(ter), want)
		}
		if want := Metadata(v4) || Metadata(client); Metadata(ter) != want {
			t.Fatalf("Teredo %s (server %s, client %s): Metadata = %v, want %v", ter, v4, client, Metadata(ter), want)
		}
	})
}
