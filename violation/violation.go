// Package violation is what the sandbox denied, in the one shape that the
// jail, the network stack, the audit trail and every result share. It holds
// data only: the kinds, and the type that counts them.
package violation

// Kinds of violation.
const (
	Syscall = "syscall" // a system call that the seccomp policy refused

	// The network's: each names what the code asked for (Host, Port).
	DNS          = "dns"             // a DNS question for a name the policy refuses
	Connect      = "connect"         // a TCP connection the policy refused
	SNIMismatch  = "sni_mismatch"    // the TLS SNI is not the name behind the address
	HostMismatch = "host_mismatch"   // the HTTP Host is not the name behind the address
	Protocol     = "protocol"        // neither TLS nor HTTP/1, or nothing sent in time
	UDP          = "udp"             // a UDP datagram to anything but the sandbox's resolver
	Private      = "private_address" // the name resolved to an address the policy refuses
	Limit        = "limit"           // a connection, byte or idle limit; a tool call, size or time limit

	// A secret's placeholder sent where that secret may not go (Host: the
	// destination; Reason names the secret, never its value).
	Secret = "secret"

	// An HTTP request that an API's method and path rules refused (Host:
	// the destination; Reason names the API and the rule).
	HTTP = "http"

	Tool = "tool" // a tool call that the tool policy refused (a denied tool, another group)

	// A tool call that a rule says a human must approve, and no human
	// did: declined, cancelled, not answered in time, or no one to ask.
	Approval = "approval"
)

// Violation is one kind of denied operation, and how often it happened.
// Every field is safe to show the model.
type Violation struct {
	Kind    string `json:"kind"`              // one of the kinds above
	Syscall string `json:"syscall,omitempty"` // for Syscall: the call's name
	Host    string `json:"host,omitempty"`    // for the network's kinds: the name or address asked for
	Port    uint16 `json:"port,omitempty"`
	Count   int    `json:"count"`
	Reason  string `json:"reason"`
}
