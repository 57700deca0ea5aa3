// Package egress is the sandbox's only way out: a userspace TCP/IP stack
// (gVisor's netstack) on a tun device inside the jail's network namespace.
// Every packet the jail sends arrives here and is decided, byte for byte:
//
//   - DNS to the sandbox resolver is answered here, and only for names the
//     policy allows, each with a synthetic address unique to the name within
//     the execution. No query from the jail ever reaches a real DNS server.
//   - A TCP connection is accepted only to a synthetic address (or a literal
//     address the policy allows). Its first bytes must be a TLS ClientHello
//     whose SNI, or an HTTP/1 request whose Host, is the name behind the
//     address. The policy then decides on (name, port); the stack resolves the
//     name itself, refuses any answer that is not allowed (private, metadata),
//     dials the checked address and relays.
//   - Other UDP is dropped.
//   - With [Options.Secrets], a connection to a host that may receive
//     secrets is not passed through: the stack ends the jail's TLS with a
//     certificate of its own [CA], verifies the host's, and swaps
//     placeholders for real values in the requests and back in the
//     responses. A placeholder sent in cleartext is refused.
//   - With [Secrets.Signer], the TLS of a host that has a signer is
//     terminated too, and each of its requests signed (sign.go) with a
//     key the jail never holds.
//   - With [Options.HTTP], each HTTP request to a host that has rules is
//     judged by method and path before it goes out (rules.go); TLS to
//     such a host is always terminated, so that its requests can be.
//
// It is mechanism, not policy: a [Policy] decides, and each decision is
// reported as an [Event]. It knows nothing of the config file or the jail
// beyond the network namespace it is handed.
package egress

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/cruciblehq/crucible/policy/httprule"
	"github.com/cruciblehq/crucible/policy/netpolicy"
	"github.com/cruciblehq/crucible/secrets"
	"github.com/cruciblehq/crucible/violation"
)

// Policy decides what the stack lets through. *netpolicy.Policy implements
// it. It must be safe for concurrent use.
type Policy interface {
	// DecideName decides whether DNS may answer for name (lowercased,
	// without the trailing dot). A refusal carries the reason, safe to show
	// the model, and the rule a connection to the name would get.
	DecideName(name string) netpolicy.Verdict
	// Decide decides one connection.
	Decide(ctx context.Context, req netpolicy.Request) netpolicy.Verdict
	// AddressAllowed checks an address the stack resolved, or a literal
	// one; the reason is safe to show the model.
	AddressAllowed(a netip.Addr) (bool, string)
	// Host returns an address pinned for name instead of DNS.
	Host(name string) (netip.Addr, bool)
}

// Addresses of the sandbox network, as the jail sees them.
var (
	// Resolver is the sandbox's DNS server, the jail's only nameserver.
	Resolver = netip.MustParseAddr("198.18.0.1")
	// Synthetic4 and Synthetic6 hold the addresses handed out for names.
	// Resolver is in Synthetic4 and never handed out.
	Synthetic4 = netip.MustParsePrefix("198.18.0.0/15")
	Synthetic6 = netip.MustParsePrefix("fd63:7275:6369::/64")
	// Local4 and Local6 are the jail's own addresses on the tun device.
	Local4 = netip.MustParseAddr("10.255.255.2")
	Local6 = netip.MustParseAddr("fd63:7275:6369:1::2")
	// OfflineResolver is the nameserver of a jail without a network, on
	// its lo: where [Offline] answers.
	OfflineResolver = netip.MustParseAddr("127.0.0.1")
)

// Event kinds. Every refusal is one of these; an allowed DNS answer or
// connection is reported with Kind KindDNS or KindConnect and Allowed set.
const (
	KindDNS          = violation.DNS          // a DNS question
	KindConnect      = violation.Connect      // a TCP connection decided by the policy
	KindSNIMismatch  = violation.SNIMismatch  // the TLS SNI is not the name behind the address
	KindHostMismatch = violation.HostMismatch // the HTTP Host is not the name behind the address
	KindProtocol     = violation.Protocol     // neither TLS nor HTTP/1, or nothing sent in time
	KindUDP          = violation.UDP          // a UDP datagram to anything but the resolver
	KindPrivate      = violation.Private      // the name resolved to an address the policy refuses
	KindLimit        = violation.Limit        // a connection, byte or idle limit
	KindSecret       = violation.Secret       // a placeholder refused, or (Allowed) secrets substituted
	KindHTTP         = violation.HTTP         // a request that the host's HTTP rules refused
)

// Event is one decision of the stack, for the audit trail and the
// execution's violations.
type Event struct {
	Kind    string
	Allowed bool
	Name    string // the name asked for, or the literal address
	Port    uint16 // 0 for DNS
	Reason  string // why it was refused; safe to show the model
	Rule    string // the policy rule that decided, if any
	// Addr is where the stack connected (or would have), for the operator's
	// audit trail only: it may be an internal address the model must not
	// learn.
	Addr netip.Addr
	// BytesOut and BytesIn are what a finished connection carried (sent by
	// the jail, and received by it).
	BytesOut, BytesIn int64
	// Done marks the end of an allowed connection (with its byte counts).
	Done bool
	// Secrets names the secrets a KindSecret event is about: substituted
	// (Allowed) or refused. Names only, never a value.
	Secrets []string
	// Method, Path and Where say, of secrets substituted (Allowed), in
	// which request and which part of it (InHeader, ...) they went. Path
	// is the request's, as the jail sent it: placeholders, not values.
	Method, Path, Where string
}

// Limits bound one execution's network use. Zero means the default.
type Limits struct {
	Connections int           // open TCP connections at once; default 64
	BytesOut    int64         // total bytes sent by the jail; default 64 MiB
	BytesIn     int64         // total bytes received by the jail; default 1 GiB
	IdleTimeout time.Duration // a connection with no traffic either way; default 60s
}

// Options configure one execution's stack. Policy is required.
type Options struct {
	Policy Policy
	// Report receives every decision, from many goroutines at once; nil
	// discards them. It must not block for long: DNS and UDP decisions are
	// reported on the stack's packet path.
	Report func(Event)
	// Lookup resolves an allowed name on the host; nil uses the host's
	// resolver. Its answers are checked with Policy.AddressAllowed.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to a checked address; nil dials TCP directly.
	Dial   func(ctx context.Context, a netip.AddrPort) (net.Conn, error)
	Limits Limits
	// MTU of the jail's tun device; default 65520 (the largest the tun
	// takes, and the fastest: the stack's cost is per packet).
	MTU uint32
	// Secrets, when set, makes the stack terminate TLS for the hosts that
	// have secrets and swap placeholders for values there; it also refuses
	// any placeholder sent in cleartext. nil: no secrets, and TLS always
	// passes through.
	Secrets *Secrets
	// HTTP, when set, returns the rules that judge every HTTP request to
	// name:port (name lowercased, or a literal address), none for a host
	// without rules. Each set must allow a request before a byte of it
	// goes out, on plain HTTP and on every request of a keep-alive
	// connection; a refused one gets a 403 and a KindHTTP event, and ends
	// the connection. TLS to a host with rules is always terminated, with
	// Secrets' CA and Roots (Secrets may hold no secret at all); without
	// Secrets, it is refused. It must be safe for concurrent use.
	HTTP func(name string, port uint16) []*httprule.Set
	// Client, when set, names whom the jail's execution runs for, as the
	// HTTP rules' conditions see it: client.name and client.profile, ""
	// for no one. It must be safe for concurrent use.
	Client func() (name, profile string)
	// Traced, when set, names the hosts whose requests carry the
	// execution's trace context: each request to one has the program's
	// traceparent and tracestate headers removed and Trace's put in
	// their place. TLS to such a host is always terminated, as for HTTP
	// rules. Both must be safe for concurrent use.
	Traced func(name string, port uint16) bool
	// Trace writes the trace context of a request (to name, with method)
	// into h, and returns what ends its span once it is answered.
	Trace func(name, method string, h http.Header) (end func())
}

// Secrets are what the stack needs to let the jail use credentials it never
// holds: the placeholders, which destinations may receive which secret, and
// the certificates for the connections it terminates to swap them.
type Secrets struct {
	Set *secrets.Set
	// For names the secrets that name:port may receive (name lowercased, as
	// the stack knows it). None: the connection is relayed untouched, TLS
	// passing through. It must be safe for concurrent use.
	For func(name string, port uint16) []string
	// Where says where in a request each secret may go; nil: everywhere.
	// It must be safe for concurrent use.
	Where func(secret string) Where
	// CA signs the leaf certificates the jail is shown.
	CA *CA
	// Roots verify upstream certificates; nil: the host's system roots.
	Roots *x509.CertPool
	// Signer, when set, returns the signer of the requests to name:port
	// and the name of the secret whose key it signs with; a nil Signer
	// for none. A host with a signer has its TLS terminated, and each of
	// its requests signed (sign.go). It must be safe for concurrent use.
	Signer func(name string, port uint16) (secret string, s Signer)
}
