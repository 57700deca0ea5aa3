package netpolicy

import (
	"net/netip"
	"testing"
)

func TestPublic(t *testing.T) {
	tests := []struct {
		addr   string
		public bool
	}{
		// Public IPv4.
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"100.63.255.255", true},  // just below CGNAT
		{"100.128.0.0", true},     // just above CGNAT
		{"172.15.255.255", true},  // just below 172.16/12
		{"172.32.0.0", true},      // just above
		{"192.0.1.1", true},       // between 192.0.0/24 and TEST-NET-1
		{"198.17.255.255", true},  // just below benchmarking
		{"198.20.0.0", true},      // just above
		{"223.255.255.255", true}, // last before multicast
		{"169.253.255.255", true},

		// Every non-public IPv4 range.
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"10.255.255.255", false},
		{"100.64.0.1", false},
		{"100.127.255.255", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.1.1", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.0.0.1", false},
		{"192.0.0.170", false}, // ipv4only.arpa
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.1.1", false},
		{"198.18.0.1", false}, // synthetic range
		{"198.19.255.255", false},
		{"198.51.100.1", false},
		{"203.0.113.1", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},

		// Metadata endpoints, including the one in public space.
		{"169.254.169.254", false},
		{"168.63.129.16", false},
		{"100.100.100.200", false},
		{"fd00:ec2::254", false},

		// Public IPv6.
		{"2606:4700:4700::1111", true},
		{"2001:4860:4860::8888", true},
		{"2a00:1450:4001::1", true},
		{"2001:200::1", true}, // just past 2001::/23

		// Non-public IPv6 outside embedded forms.
		{"::", false},
		{"::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"febf::1", false},
		{"fec0::1", false}, // site-local
		{"ff02::1", false},
		{"ff0e::1", false},
		{"100::1", false}, // discard
		{"2001:db8::1", false},
		{"2001:2::1", false},  // benchmarking, inside 2001::/23
		{"2001:10::1", false}, // ORCHID
		{"3fff::1", false},    // documentation (RFC 9637)
		{"4000::1", false},    // outside 2000::/3
		{"::ffff:0:808:808", false},
		{"64:ff9b:1::808:808", false}, // local-use NAT64 is never public

		// IPv4-mapped.
		{"::ffff:8.8.8.8", true},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		// IPv4-compatible.
		{"::8.8.8.8", true},
		{"::127.0.0.1", false},
		{"::192.168.0.1", false},
		// NAT64 well-known prefix.
		{"64:ff9b::8.8.8.8", true},
		{"64:ff9b::7f00:1", false},
		{"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b::c0a8:101", false},
		// 6to4: v4 in bytes 2..5.
		{"2002:808:808::1", true},
		{"2002:7f00:1::1", false},
		{"2002:a00:1::1", false},
		{"2002:a9fe:a9fe::1", false},
		// Teredo: server v4 in bytes 4..7, client v4 XOR 0xff in bytes 12..15.
		{"2001:0:808:808:0:0:f7f7:f7f7", true},        // server 8.8.8.8, client 8.8.8.8
		{"2001:0:808:808:0:0:80ff:fffe", false},       // client 127.0.0.1
		{"2001:0:808:808:0:0:f5ff:fffe", false},       // client 10.0.0.1
		{"2001:0:a00:1:0:0:f7f7:f7f7", false},         // server 10.0.0.1
		{"2001:0:808:808:8000:ffff:5601:5601", false}, // client 169.254.169.254

		// Zones and invalid addresses.
		{"2606:4700:4700::1111%eth0", false},
		{"fe80::1%eth0", false},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := Public(a); got != tt.public {
			t.Errorf("Public(%s) = %v, want %v", tt.addr, got, tt.public)
		}
	}
	if Public(netip.Addr{}) {
		t.Error("Public(zero Addr) = true")
	}
}

func TestMetadata(t *testing.T) {
	tests := []struct {
		addr     string
		metadata bool
	}{
		{"169.254.169.254", true},
		{"169.254.170.2", true},
		{"169.254.170.23", true},
		{"169.254.0.23", true},
		{"100.100.100.200", true},
		{"192.0.0.192", true},
		{"168.63.129.16", true},
		{"fd00:ec2::254", true},
		{"fd00:ec2::23", true},
		{"fd20:ce::254", true},
		{"fd00:ec2::254%eth0", true},

		// Embedded forms.
		{"::ffff:169.254.169.254", true},
		{"::169.254.169.254", true},
		{"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b::100.100.100.200", true},
		{"2002:a9fe:a9fe::1", true},
		{"2002:6464:64c8::", true},
		{"2001:0:a9fe:a9fe::1", true},          // Teredo server
		{"2001:0:808:808:0:0:5601:5601", true}, // Teredo client 169.254.169.254
		{"64:ff9b:1:a9fe:a9:fe00::", true},     // local-use NAT64 /48 layout
		{"64:ff9b:1::a9fe:a9fe", true},         // local-use NAT64 /96 layout
		{"64:ff9b:1:0:a9:fea9:fe00:0", true},   // /64 layout
		{"64:ff9b:1:a9:fe:a9fe::", true},       // /56 layout

		{"169.254.169.253", false},
		{"8.8.8.8", false},
		{"10.0.0.1", false},
		{"fd00:ec2::253", false},
		{"::ffff:8.8.8.8", false},
		{"2002:808:808::1", false},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := Metadata(a); got != tt.metadata {
			t.Errorf("Metadata(%s) = %v, want %v", tt.addr, got, tt.metadata)
		}
		if tt.metadata && Public(a) {
			t.Errorf("Public(%s) = true for a metadata address", tt.addr)
		}
	}
	if Metadata(netip.Addr{}) {
		t.Error("Metadata(zero Addr) = true")
	}
}

func TestAddressAllowed(t *testing.T) {
	p, err := Compile(Rules{
		AllowAll: true,
		AllowPrivate: []netip.Prefix{
			netip.MustParsePrefix("10.1.0.0/16"),
			netip.MustParsePrefix("169.254.0.0/16"), // cannot reopen metadata
			netip.MustParsePrefix("fd00::/8"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr   string
		ok     bool
		reason string
	}{
		{"8.8.8.8", true, ""},
		{"10.1.2.3", true, ""},
		{"::ffff:10.1.2.3", true, ""},
		{"10.2.0.1", false, "the address is not public"},
		{"127.0.0.1", false, "the address is not public"},
		{"192.168.1.1", false, "the address is not public"},
		{"169.254.1.1", true, ""},
		{"169.254.169.254", false, "the address is a cloud metadata endpoint"},
		{"::ffff:169.254.169.254", false, "the address is a cloud metadata endpoint"},
		{"fd00:ec2::254", false, "the address is a cloud metadata endpoint"},
		{"fd00::1", true, ""},
		{"fd00::1%eth0", false, "the address is not public"},
		{"168.63.129.16", false, "the address is a cloud metadata endpoint"},
	}
	for _, tt := range tests {
		ok, reason := p.AddressAllowed(netip.MustParseAddr(tt.addr))
		if ok != tt.ok || reason != tt.reason {
			t.Errorf("AddressAllowed(%s) = %v, %q; want %v, %q", tt.addr, ok, reason, tt.ok, tt.reason)
		}
	}

	// AllowAll on its own opens names, never private addresses.
	p, err = Compile(Rules{AllowAll: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"10.0.0.1", "127.0.0.1", "192.168.0.1", "100.64.0.1", "::1", "fc00::1"} {
		if ok, _ := p.AddressAllowed(netip.MustParseAddr(s)); ok {
			t.Errorf("AllowAll: AddressAllowed(%s) = true", s)
		}
	}
}
