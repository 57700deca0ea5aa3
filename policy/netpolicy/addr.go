package netpolicy

import "net/netip"

// notPublic4 lists the IPv4 ranges that are not public unicast destinations
// (IANA special-purpose registry, plus multicast and reserved space). IPv4 is
// checked against a blocklist because almost all of it is allocated.
var notPublic4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"; dialling 0.0.0.0 reaches the host itself
	netip.MustParsePrefix("10.0.0.0/8"),      // RFC 1918
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT shared space
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local (and most cloud metadata)
	netip.MustParsePrefix("172.16.0.0/12"),   // RFC 1918
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("192.88.99.0/24"),  // deprecated 6to4 relay anycast
	netip.MustParsePrefix("192.168.0.0/16"),  // RFC 1918
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking; also our synthetic range
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and 255.255.255.255
}

// IPv6 is checked against an allowlist instead: only global unicast
// (2000::/3) can be public, minus the ranges below. Everything outside it —
// loopback, ULA fc00::/7, link-local, site-local fec0::/10, multicast,
// discard 100::/64, the SIIT and local-use NAT64 prefixes — is not.
var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	notPublic6     = []netip.Prefix{
		netip.MustParsePrefix("2001::/23"),     // IETF protocol assignments (Teredo is handled before this)
		netip.MustParsePrefix("2001:db8::/32"), // documentation
		netip.MustParsePrefix("3fff::/20"),     // documentation (RFC 9637)
	}
)

// IPv6 forms that carry an IPv4 address, and where. A host that routes them
// (a NAT64 gateway, a 6to4 or Teredo interface, the kernel for mapped
// addresses) ends up talking to the embedded address, so that address must
// pass the same checks.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052 well-known prefix, v4 in bytes 12..15
	nat64Loc  = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215 local use; the v4 position depends on the operator's prefix length
	sixToFour = netip.MustParsePrefix("2002::/16")      // v4 in bytes 2..5
	teredo    = netip.MustParsePrefix("2001::/32")      // server v4 in bytes 4..7, client v4 in bytes 12..15 XOR 0xff
)

// metadata lists cloud instance-metadata and platform endpoints. They hand
// out credentials, so no policy may reach them.
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OCI, DigitalOcean, OpenStack, ...
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task credentials
	netip.MustParseAddr("169.254.170.23"),  // AWS EKS Pod Identity
	netip.MustParseAddr("169.254.0.23"),    // Tencent Cloud
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud Classic
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer (public address space, so Public checks this too)
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS Pod Identity over IPv6
	netip.MustParseAddr("fd20:ce::254"),    // GCP metadata over IPv6
}

// Public reports whether a is a public unicast address: not private,
// loopback, link-local, CGNAT, multicast, reserved, documentation or
// benchmarking space, not an IPv6 form embedding such an IPv4 address, and
// not a [Metadata] endpoint. Addresses with a zone are never public.
func Public(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" || Metadata(a) {
		return false
	}
	if a.Is4() {
		return public4(a)
	}
	b := a.As16()
	switch {
	case a.Is4In6():
		return public4(a.Unmap())
	case [12]byte(b[:12]) == [12]byte{}:
		// IPv4-compatible ::a.b.c.d; :: and ::1 land in 0.0.0.0/8.
		return public4(v4(b[12:]))
	case nat64.Contains(a):
		return public4(v4(b[12:]))
	case !globalUnicast6.Contains(a):
		return false
	case sixToFour.Contains(a):
		return public4(v4(b[2:]))
	case teredo.Contains(a):
		return public4(v4(b[4:])) && public4(teredoClient(b))
	}
	for _, p := range notPublic6 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

func public4(a netip.Addr) bool {
	for _, p := range notPublic4 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Metadata reports whether a is a cloud metadata endpoint, directly or
// embedded in an IPv6 form (mapped, compatible, NAT64, 6to4, Teredo).
func Metadata(a netip.Addr) bool {
	a = a.WithZone("")
	for _, e := range append(embedded(a), a) {
		for _, m := range metadata {
			if e == m {
				return true
			}
		}
	}
	return false
}

// embedded returns every IPv4 address a may stand for when routed. For the
// local-use NAT64 prefix that is each RFC 6052 position the operator could
// have picked inside it.
func embedded(a netip.Addr) []netip.Addr {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	switch {
	case a.Is4In6():
		return []netip.Addr{a.Unmap()}
	case [12]byte(b[:12]) == [12]byte{}, nat64.Contains(a):
		return []netip.Addr{v4(b[12:])}
	case nat64Loc.Contains(a):
		// RFC 6052 §2.2: bits 64..71 are always zero and skipped.
		return []netip.Addr{
			v4([]byte{b[6], b[7], b[9], b[10]}),  // /48
			v4([]byte{b[7], b[9], b[10], b[11]}), // /56
			v4(b[9:]),                            // /64
			v4(b[12:]),                           // /96
		}
	case sixToFour.Contains(a):
		return []netip.Addr{v4(b[2:])}
	case teredo.Contains(a):
		return []netip.Addr{v4(b[4:]), teredoClient(b)}
	}
	return nil
}

func v4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b[:4])) }

func teredoClient(b [16]byte) netip.Addr {
	return netip.AddrFrom4([4]byte{b[12] ^ 0xff, b[13] ^ 0xff, b[14] ^ 0xff, b[15] ^ 0xff})
}
