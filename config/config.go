// Package config is the schema of crucible.yaml, the operator's configuration
// file: its types, their defaults, a strict decoder and validation.
//
// It describes what the operator asked for, not how it is enforced: it imports
// none of the mechanism packages (jail, seccomp, egress, ...), and they do not
// import it. The sandbox package translates a [Config] into their settings.
//
// Decoding is strict: an unknown key, a duplicate key or a value of the wrong
// shape is an error that names the file, the line and the key. Every error is a
// single line and quotes at most the offending key or value.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/policy/callrule"
	"github.com/cruciblehq/crucible/policy/cond"
	"github.com/cruciblehq/crucible/policy/glob"
)

// Config is the whole of crucible.yaml. Each top-level key is one field; a new
// section is a new field with a yaml tag and, if it has bounds, a line in
// [Config.Validate].
type Config struct {
	Sandbox  Sandbox  `yaml:"sandbox"`
	Network  Network  `yaml:"network"`
	Runtimes Runtimes `yaml:"runtimes"`
	Audit    Audit    `yaml:"audit"`
	// Servers are the downstream MCP servers whose tools the code may
	// call, by the name the code calls them by.
	Servers map[string]Server `yaml:"servers"`
	Tools   Tools             `yaml:"tools"`
	// Secrets are the credentials the code may use without holding them,
	// by the name the code sees them under (see secrets.go).
	Secrets map[string]Secret `yaml:"secrets"`
	// APIs are the HTTP APIs the code may call, described and limited
	// (see apis.go).
	APIs map[string]API `yaml:"apis"`
	// Clients name the clients of crucible serve by their bearer tokens
	// (beside serve.token and serve.tokens, which stay anonymous).
	Clients map[string]Client `yaml:"clients,omitempty"`
	// Profiles are named subsets of this configuration, which clients get
	// (see profiles.go).
	Profiles map[string]Profile `yaml:"profiles,omitempty"`
	// Serve configures `crucible serve` (see serve.go).
	Serve Serve `yaml:"serve"`

	// Where each key was written, when the config came from a file, so
	// that a problem found later (a network rule that does not compile)
	// can name its line.
	src *source
}

type source struct {
	name  string
	lines map[string]int // key path ("network.allow[2]") → line
}

// Where names the file and line where the key at path ("network.allow[2]",
// as errors name keys) was written: "crucible.yaml:7", or "" for a key that
// did not come from a file.
func (c *Config) Where(path string) string {
	if c.src == nil || c.src.lines[path] == 0 {
		return ""
	}
	return c.src.name + ":" + strconv.Itoa(c.src.lines[path])
}

// KeyPath names the entry i of the list at path, or key of the map at path,
// as errors and [Config.Where] name keys.
func KeyPath(path string, i int, key string) string {
	if i >= 0 {
		return fmt.Sprintf("%s[%d]", path, i)
	}
	return mapPath(path, key)
}

// Network is what the code may reach. The default is nothing: the jail has
// only its loopback. With Allow rules (or AllowAll) it gets a network whose
// every connection Crucible decides: DNS answers only allowed names, TCP
// must go to the name it resolved (TLS SNI or HTTP Host), and every resolved
// address must be public. The rule syntax is checked when the file is loaded
// (see docs/network.md).
type Network struct {
	// (omitempty: as for Server, so that a jailed server's network
	// encodes and parses back to the same thing.)
	// Allow lists the names, wildcards (*.example.com, not the apex), literal
	// addresses and CIDRs that may be reached, each optionally with :port;
	// without a port, 80 and 443.
	Allow []string `yaml:"allow,omitempty"`
	// Deny wins over Allow and AllowAll; without a port, every port.
	Deny []string `yaml:"deny,omitempty"`
	// DenyReasons maps a Deny rule, as written, to the reason the code is
	// told.
	DenyReasons map[string]string `yaml:"deny_reasons,omitempty"`
	// AllowAll allows every public name on every port. Private and metadata
	// addresses, DNS, SNI/Host matching and the limits stay in force.
	AllowAll bool `yaml:"allow_all,omitempty"`
	// AllowPrivate lists internal CIDRs that resolved addresses may be in
	// (off by default; metadata addresses stay blocked even then).
	AllowPrivate []string `yaml:"allow_private,omitempty"`
	// Hosts pins a name to an address instead of DNS; an entry does not
	// allow the name, and its address must pass the private-address check.
	Hosts map[string]string `yaml:"hosts,omitempty"`
	// Resolver is the DNS server ("ip:port") that Crucible itself uses to
	// resolve allowed names. Default: the host's resolver. The code's own
	// DNS questions never reach it.
	Resolver string `yaml:"resolver,omitempty"`
	// MaxConnections bounds the TCP connections open at once.
	// Default 64; 1 to 4096.
	MaxConnections int `yaml:"max_connections,omitempty"`
	// MaxBytesOut and MaxBytesIn bound what one execution sends and
	// receives in total. Defaults 64MiB and 1GiB; at least 1KiB.
	MaxBytesOut ByteSize `yaml:"max_bytes_out,omitempty"`
	MaxBytesIn  ByteSize `yaml:"max_bytes_in,omitempty"`
	// IdleTimeout closes a connection with no traffic either way.
	// Default 60s; more than 0, at most 24h.
	IdleTimeout Duration `yaml:"idle_timeout,omitempty"`
	// UpstreamCA is a PEM file of certificates trusted, beside the host's
	// system roots, for the upstreams whose TLS Crucible terminates (the
	// hosts of a secret). Default "": the system roots only.
	UpstreamCA string `yaml:"upstream_ca,omitempty"`
}

// Enabled reports whether the code gets a network beyond its loopback.
func (n *Network) Enabled() bool { return n.AllowAll || len(n.Allow) > 0 }

func (n *Network) validate() error {
	for i, c := range n.AllowPrivate {
		p, err := netip.ParsePrefix(c)
		if err != nil || p != p.Masked() {
			return fieldErrorf(fmt.Sprintf("network.allow_private[%d]", i), "%s is not a CIDR without host bits (e.g. 10.0.0.0/8)", quote(c))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(n.Hosts)) {
		if _, err := netip.ParseAddr(n.Hosts[k]); err != nil {
			return fieldErrorf(mapPath("network.hosts", k), "%s is not an IP address", quote(n.Hosts[k]))
		}
	}
	if n.Resolver != "" {
		if _, err := netip.ParseAddrPort(n.Resolver); err != nil {
			return fieldErrorf("network.resolver", "%s is not ip:port (e.g. 1.1.1.1:53 or [::1]:53)", quote(n.Resolver))
		}
	}
	if n.MaxConnections < 1 || n.MaxConnections > maxConnections {
		return fieldErrorf("network.max_connections", "must be between 1 and %d, not %d", maxConnections, n.MaxConnections)
	}
	if n.MaxBytesOut < minNetBytes {
		return fieldErrorf("network.max_bytes_out", "must be at least %v, not %v", minNetBytes, n.MaxBytesOut)
	}
	if n.MaxBytesIn < minNetBytes {
		return fieldErrorf("network.max_bytes_in", "must be at least %v, not %v", minNetBytes, n.MaxBytesIn)
	}
	if n.IdleTimeout <= 0 || time.Duration(n.IdleTimeout) > maxTimeout {
		return fieldErrorf("network.idle_timeout", "must be more than 0 and at most 24h, not %v", n.IdleTimeout)
	}
	if n.UpstreamCA != "" {
		if err := hostPath(n.UpstreamCA); err != nil {
			return fieldErrorf("network.upstream_ca", "%v", err)
		}
	}
	return nil
}

// Server is a downstream MCP server: either a command that Crucible starts
// and speaks to on its stdin and stdout (Command, Args, Env, Cwd), or a
// Streamable HTTP endpoint (URL, Headers). Its name, the key in
// Config.Servers, is an identifier: letters, digits and _, not starting with
// a digit. (omitempty: what yaml.v3 encodes parses back to the same thing,
// since an empty list written out would come back as a non-nil one.)
type Server struct {
	// Command is the server's program: an absolute path, or a name looked
	// up in Crucible's PATH.
	Command string   `yaml:"command,omitempty"`
	Args    []string `yaml:"args,omitempty"`
	// Env is the whole environment of the command: nothing of Crucible's
	// own is passed on (give PATH if the server needs one). Its values
	// never reach the code; a value of 6 bytes or more is redacted from
	// what the server returns.
	Env map[string]string `yaml:"env,omitempty"`
	// Cwd is the command's working directory, an absolute path; "" is
	// Crucible's own. With Jail, it is a path inside the jail ("" is its
	// /workspace).
	Cwd string `yaml:"cwd,omitempty"`
	// URL is an http or https Streamable HTTP endpoint; Headers go with
	// each request and are redacted like Env.
	URL     string            `yaml:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	// OAuth logs in to a url server with OAuth 2.1 (crucible login NAME)
	// instead of a static header: its tokens live in the user's state
	// directory, never in the config, and never reach the code.
	OAuth *ServerOAuth `yaml:"oauth,omitempty"`

	// Tools says which of the server's tools the code may call.
	Tools ToolFilter `yaml:"tools,omitempty"`
	// Rules decide calls by what they do: in order, the first whose tools
	// match a call allows it only if its allow_if, a CEL condition over
	// the call's arguments, holds (package callrule).
	Rules []CallRule `yaml:"rules,omitempty"`
	// Resources says which of the server's resources (by URI) the code
	// may read with tools.resource. Neither allow nor deny: every one,
	// unless tools.allow lists tools; then none (resources.allow: ["*"]
	// opens them).
	Resources ToolFilter `yaml:"resources,omitempty"`
	// Group is the server's data-flow group: once an execution has called
	// a server of one group, servers of any other group are refused to it.
	// Default "": no group.
	Group string `yaml:"group,omitempty"`
	// Timeout bounds each call. 0 (the default) means 30s; at most 24h.
	Timeout Duration `yaml:"timeout,omitempty"`
	// ApprovalTimeout bounds the wait for a human to approve a call that
	// a rule with approve names. 0 (the default) means 2m; at most 24h.
	ApprovalTimeout Duration `yaml:"approval_timeout,omitempty"`
	// Shared keeps one instance of the server (one process, one MCP
	// session) for every client of crucible serve: say so only of a
	// server that holds nothing of one client that another may not see.
	// Default false: each client gets its own, started on first use.
	Shared bool `yaml:"shared,omitempty"`
	// MaxClients bounds the server's instances at once (past it, the
	// least recently used idle one is closed). 0 (the default) means 16;
	// at most 1024.
	MaxClients int `yaml:"max_clients,omitempty"`
	// IdleTimeout closes an instance unused that long. 0 (the default)
	// means 10m; at most 24h.
	IdleTimeout Duration `yaml:"idle_timeout,omitempty"`

	// Jail runs a stdio server in a long-lived jail of its own, like an
	// execution's, with an empty environment plus Env. The settings below
	// are for such a server only.
	Jail bool `yaml:"jail,omitempty"`
	// RO lists the host paths bound read-only into the server's jail
	// (beside /usr and the command itself): its scripts, node_modules,
	// data. Each follows the rules of sandbox.ro.
	RO []string `yaml:"ro,omitempty"`
	// Network is what the jailed server may reach: the keys of the
	// top-level network section, whose defaults its limits take. Default
	// nothing: the jail has only its loopback.
	Network Network `yaml:"network,omitempty"`
	// Limits bound the server's jail; it has no timeout (it lives until
	// Crucible stops it).
	Limits ServerLimits `yaml:"limits,omitempty"`
}

// ServerLimits bound a jailed server's jail. Zero values take the defaults
// and bounds of the sandbox section's keys of the same names.
type ServerLimits struct {
	Memory ByteSize `yaml:"memory,omitempty"`
	Pids   int      `yaml:"pids,omitempty"`
	CPUs   float64  `yaml:"cpus,omitempty"`
}

// JailLimits are the limits of s's jail, the defaults filled in.
func (s *Server) JailLimits() ServerLimits {
	l, d := s.Limits, Default().Sandbox
	return ServerLimits{Memory: cmp.Or(l.Memory, d.Memory), Pids: cmp.Or(l.Pids, d.Pids), CPUs: cmp.Or(l.CPUs, d.CPUs)}
}

// JailNetwork is the network of s's jail: its network section, with the
// limits it leaves out at the top-level section's defaults.
func (s *Server) JailNetwork() Network {
	n, d := s.Network, Default().Network
	n.MaxConnections = cmp.Or(n.MaxConnections, d.MaxConnections)
	n.MaxBytesOut = cmp.Or(n.MaxBytesOut, d.MaxBytesOut)
	n.MaxBytesIn = cmp.Or(n.MaxBytesIn, d.MaxBytesIn)
	n.IdleTimeout = cmp.Or(n.IdleTimeout, d.IdleTimeout)
	return n
}

// CallRule is one of a server's rules on calls: Tools are globs of tool
// names, AllowIf the CEL condition that a matching call must meet (see
// docs/tools.md for its variables), Approve that a human must approve each call
// it allows, and Reason what a refused call is told.
type CallRule struct {
	Tools   []string `yaml:"tools,omitempty"`
	AllowIf string   `yaml:"allow_if,omitempty"`
	Approve bool     `yaml:"approve,omitempty"`
	Reason  string   `yaml:"reason,omitempty"`
}

// CallRules is s's rules as package callrule takes them.
func (s *Server) CallRules() []callrule.Rule {
	var out []callrule.Rule
	for _, r := range s.Rules {
		out = append(out, callrule.Rule{Tools: r.Tools, AllowIf: r.AllowIf, Approve: r.Approve, Reason: r.Reason})
	}
	return out
}

// ToolFilter selects a server's tools by name, or its resources by URI,
// with globs (package glob: * any run, '/' included; ? one character;
// [a-z] a class). Deny wins; no Allow means every one.
type ToolFilter struct {
	Allow []string `yaml:"allow,omitempty"`
	Deny  []string `yaml:"deny,omitempty"`
}

// Tools bounds one execution's tool calls.
type Tools struct {
	// MaxCalls is the most tool calls (and resource reads, tools.apis
	// searches, and tools.list() listings past the first) of one
	// execution. Default 50; 1 to 100000.
	MaxCalls int `yaml:"max_calls"`
	// MaxArgSize bounds the JSON of one call's arguments, and
	// MaxResultSize the JSON of one call's result. Defaults 1MiB; 1KiB to
	// 64MiB.
	MaxArgSize    ByteSize `yaml:"max_arg_size"`
	MaxResultSize ByteSize `yaml:"max_result_size"`
}

// Bounds of the tools section.
const (
	maxToolCalls = 100000
	minToolBytes = 1 * KiB
	maxToolBytes = 64 * MiB
)

// Compiled on first use, not by every process of the binary at its start.
var (
	identifier = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	headerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })
)

func validateServer(name string, s *Server) error {
	at := mapPath("servers", name)
	if !identifier().MatchString(name) {
		return fieldErrorf(at, "the name must be an identifier: letters, digits and _, not starting with a digit")
	}
	switch {
	case s.Command == "" && s.URL == "":
		return fieldErrorf(at, "needs a command (a stdio server) or a url (a Streamable HTTP server)")
	case s.Command != "" && s.URL != "":
		return fieldErrorf(at, "has both a command and a url; a server is one or the other")
	}
	check := validateCommand
	if s.URL != "" {
		check = validateURLServer
	}
	for _, f := range []func(string, *Server) error{check, validateJail, validatePolicy, validateServerBounds} {
		if err := f(at, s); err != nil {
			return err
		}
	}
	return nil
}

// validateURLServer checks a Streamable HTTP server's settings at at.
func validateURLServer(at string, s *Server) error {
	key := func(k string) string { return at + "." + k }
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fieldErrorf(key("url"), "%s is not an http or https URL", quote(s.URL))
	}
	for _, f := range []struct {
		k   string
		set bool
	}{{"args", len(s.Args) > 0}, {"env", len(s.Env) > 0}, {"cwd", s.Cwd != ""}} {
		if f.set {
			return fieldErrorf(key(f.k), "is for a command; a url server takes headers")
		}
	}
	if s.OAuth != nil {
		if err := s.OAuth.validate(key("oauth")); err != nil {
			return err
		}
		for k := range s.Headers {
			if strings.EqualFold(k, "Authorization") {
				return fieldErrorf(mapPath(key("headers"), k), "is oauth's to set; a server logs in one way")
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		if !headerName().MatchString(k) {
			return fieldErrorf(mapPath(key("headers"), k), "not a valid header name")
		}
		// The value is not quoted: it may well be a credential.
		if strings.ContainsAny(s.Headers[k], "\r\n\x00") {
			return fieldErrorf(mapPath(key("headers"), k), "value contains a line break or a NUL byte")
		}
	}
	return nil
}

// validateCommand checks a stdio server's settings at at.
func validateCommand(at string, s *Server) error {
	key := func(k string) string { return at + "." + k }
	if strings.Contains(s.Command, "\x00") {
		return fieldErrorf(key("command"), "contains a NUL byte")
	}
	for i, a := range s.Args {
		if strings.Contains(a, "\x00") {
			return fieldErrorf(fmt.Sprintf("%s[%d]", key("args"), i), "contains a NUL byte")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if !envName().MatchString(k) {
			return fieldErrorf(mapPath(key("env"), k), "not a valid variable name (letters, digits and _, not starting with a digit)")
		}
		if strings.Contains(s.Env[k], "\x00") {
			return fieldErrorf(mapPath(key("env"), k), "value contains a NUL byte")
		}
	}
	if s.Cwd != "" && (strings.Contains(s.Cwd, "\x00") || !filepath.IsAbs(s.Cwd)) {
		return fieldErrorf(key("cwd"), "%s is not an absolute path", quote(s.Cwd))
	}
	if len(s.Headers) > 0 {
		return fieldErrorf(key("headers"), "is for a url; a command server takes env")
	}
	if s.OAuth != nil {
		return fieldErrorf(key("oauth"), "is for a url; a command server takes env")
	}
	return nil
}

// validatePolicy checks the globs of a server's tool and resource lists,
// and its rules, at at.
func validatePolicy(at string, s *Server) error {
	key := func(k string) string { return at + "." + k }
	const tool, tools, uri, uris = "tool name", "get_*, *_issue or [a-c]*", "resource URI", "file:///data/*"
	for _, l := range []struct {
		k, what, eg string
		globs       []string
	}{
		{"tools.allow", tool, tools, s.Tools.Allow}, {"tools.deny", tool, tools, s.Tools.Deny},
		{"resources.allow", uri, uris, s.Resources.Allow}, {"resources.deny", uri, uris, s.Resources.Deny},
	} {
		for i, g := range l.globs {
			if _, err := glob.Compile(g); err != nil {
				return fieldErrorf(fmt.Sprintf("%s[%d]", key(l.k), i), "%s is not a %s pattern: %v (use e.g. %s)", quote(g), l.what, err, l.eg)
			}
		}
	}
	if _, err := callrule.Compile(s.CallRules()); err != nil {
		var ce *callrule.Error
		if errors.As(err, &ce) {
			msg := ce.Msg
			if ce.Column > 0 {
				msg = conditionError(&cond.Error{Column: ce.Column, Msg: ce.Msg})
			}
			return fieldErrorf(fmt.Sprintf("%s[%d].%s", key("rules"), ce.Rule, ce.Field), "%s", msg)
		}
		return fieldErrorf(key("rules"), "%v", err)
	}
	return nil
}

// validateServerBounds checks a server's timeouts and instance bound at at.
func validateServerBounds(at string, s *Server) error {
	key := func(k string) string { return at + "." + k }
	if s.Timeout < 0 || time.Duration(s.Timeout) > maxTimeout {
		return fieldErrorf(key("timeout"), "must be at most 24h (0 means 30s), not %v", s.Timeout)
	}
	if s.ApprovalTimeout < 0 || time.Duration(s.ApprovalTimeout) > maxTimeout {
		return fieldErrorf(key("approval_timeout"), "must be at most 24h (0 means 2m), not %v", s.ApprovalTimeout)
	}
	if s.MaxClients < 0 || s.MaxClients > 1024 {
		return fieldErrorf(key("max_clients"), "must be between 1 and 1024 (0 means 16), not %d", s.MaxClients)
	}
	if s.IdleTimeout < 0 || time.Duration(s.IdleTimeout) > maxTimeout {
		return fieldErrorf(key("idle_timeout"), "must be at most 24h (0 means 10m), not %v", s.IdleTimeout)
	}
	return nil
}

// validateJail checks the settings of a jailed server, and that a server
// without a jail has none.
func validateJail(at string, s *Server) error {
	key := func(k string) string { return at + "." + k }
	if !s.Jail {
		for _, f := range []struct {
			k   string
			set bool
		}{{"ro", s.RO != nil}, {"network", !reflect.ValueOf(s.Network).IsZero()}, {"limits", s.Limits != ServerLimits{}}} {
			if f.set {
				return fieldErrorf(key(f.k), "is for a jailed server: add jail: true (a stdio server only)")
			}
		}
		return nil
	}
	if s.URL != "" {
		return fieldErrorf(key("jail"), "is for a stdio server (a command); a url server runs elsewhere")
	}
	for i, p := range s.RO {
		if err := hostPath(p); err != nil {
			return fieldErrorf(fmt.Sprintf("%s[%d]", key("ro"), i), "%v", err)
		}
	}
	n := s.JailNetwork()
	if err := n.validate(); err != nil {
		// The same checks as the top-level section's, named by this key.
		var fe *fieldError
		if errors.As(err, &fe) {
			fe.path = key(fe.path)
		}
		return err
	}
	l := s.JailLimits()
	sb := Default().Sandbox
	sb.Memory, sb.Pids, sb.CPUs = l.Memory, l.Pids, l.CPUs
	if err := sb.validate(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			fe.path = key("limits." + strings.TrimPrefix(fe.path, "sandbox."))
		}
		return err
	}
	return nil
}

func (t *Tools) validate() error {
	if t.MaxCalls < 1 || t.MaxCalls > maxToolCalls {
		return fieldErrorf("tools.max_calls", "must be between 1 and %d, not %d", maxToolCalls, t.MaxCalls)
	}
	if t.MaxArgSize < minToolBytes || t.MaxArgSize > maxToolBytes {
		return fieldErrorf("tools.max_arg_size", "must be between %v and %v, not %v", minToolBytes, maxToolBytes, t.MaxArgSize)
	}
	if t.MaxResultSize < minToolBytes || t.MaxResultSize > maxToolBytes {
		return fieldErrorf("tools.max_result_size", "must be between %v and %v, not %v", minToolBytes, maxToolBytes, t.MaxResultSize)
	}
	return nil
}

// Audit configures the audit trail: one JSON line per execution and per
// denied operation.
type Audit struct {
	// File is appended to (created with mode 0600); empty means no trail.
	File string `yaml:"file"`
}

// Runtimes says where the language runtimes that run inside the jail live on
// the host. Each is bound read-only into the jail (a path under /usr already
// is there).
type Runtimes struct {
	// Python is the interpreter for `crucible run --lang py`.
	Python string `yaml:"python"`
	// Deno is the deno binary for `--lang deno` and the deno engine.
	// Empty means: look for "deno" in PATH, then in ./node_modules (where
	// `npm install deno` puts it).
	Deno string `yaml:"deno"`
	// Engine runs TypeScript and JavaScript: EngineAuto (the default: Deno
	// when a deno binary is found, else the embedded engine),
	// EngineEmbedded, or EngineDeno (Deno in the jail, warm in serve's
	// pools; refused without a deno binary).
	Engine string `yaml:"engine"`
	// JSHeap bounds the embedded TypeScript/JavaScript engine's heap: past
	// it, an allocation throws a catchable "out of memory".
	JSHeap ByteSize `yaml:"js_heap"`
	// JSStack bounds its call depth, in frames: past it, a call throws a
	// catchable "stack overflow".
	JSStack int `yaml:"js_stack"`
}

// The engines that may run TypeScript and JavaScript (Runtimes.Engine).
const (
	EngineEmbedded = "embedded"
	EngineDeno     = "deno"
	EngineAuto     = "auto"
)

// Bounds of the embedded engine's limits.
const (
	minJSHeap  = 16 * MiB
	maxJSHeap  = 4 * GiB
	minJSStack = 100
	maxJSStack = 100000
)

// Sandbox holds the limits and contents of each execution's jail. The
// comments give each key's default and the bounds that Validate enforces.
type Sandbox struct {
	// Timeout is the wall-clock limit of one execution.
	// Default 30s; more than 0, at most 24h.
	Timeout Duration `yaml:"timeout"`
	// Memory is the memory limit of the execution's cgroup.
	// Default 512MiB; at least 16MiB, no upper bound (the host decides).
	Memory ByteSize `yaml:"memory"`
	// Pids is the most processes and threads alive at once, the jail's own
	// (init and its helper, up to 10) included. Default 128; 16 to 65536.
	Pids int `yaml:"pids"`
	// CPUs is the CPU bandwidth, in CPUs; fractions such as 0.5 are allowed.
	// Default 1; 0.01 (the smallest quota cgroups accept) to 1024.
	CPUs float64 `yaml:"cpus"`
	// TmpSize is the size of the private tmpfs mounted at /tmp.
	// Default 64MiB; at least 1MiB.
	TmpSize ByteSize `yaml:"tmp_size"`
	// Workspace is a host directory bind-mounted read-write at /workspace.
	// Default "": a fresh empty directory, removed afterwards. Otherwise an
	// absolute path, not "/" and not in /proc, /sys or /dev.
	Workspace string `yaml:"workspace"`
	// UnsafeWorkspace lets Workspace be a directory through which the code
	// would write as host root (one owned by root) or into the system or a
	// home (/etc, /usr, /home, the invoking user's home, ...). Default
	// false: such a workspace is refused. Every execution warns while it is
	// on.
	UnsafeWorkspace bool `yaml:"unsafe_workspace"`
	// RO lists host paths bind-mounted read-only at the same path.
	// Default none; each follows the rules of Workspace.
	RO []string `yaml:"ro"`
	// Env holds extra environment variables for the code; the host's own
	// environment is never passed in. Default none; names match
	// [A-Za-z_][A-Za-z0-9_]*, values hold no NUL byte.
	Env map[string]string `yaml:"env"`
	// MaxOutput caps each of stdout and stderr; the rest is dropped.
	// Default 1MiB; 1KiB to 1GiB, since the host buffers this much per
	// stream of every running execution.
	MaxOutput ByteSize `yaml:"max_output"`
	// AllowDegraded names the layers, out of [DegradableLayers], that may be
	// missing on this host. Default none: any missing layer refuses the
	// execution.
	AllowDegraded []string `yaml:"allow_degraded"`
}

// Names of the layers that the operator may allow to be missing.
const (
	LayerCgroup        = "cgroup"         // memory, pids and cpu limits
	LayerLandlock      = "landlock"       // filesystem access rules
	LayerSeccompNotify = "seccomp_notify" // seccomp user notification
)

// DegradableLayers is every valid name for Sandbox.AllowDegraded, for code and
// docs to agree on. Do not modify it.
var DegradableLayers = []string{LayerCgroup, LayerLandlock, LayerSeccompNotify}

// Bounds checked by Validate.
const (
	maxTimeout     = 24 * time.Hour
	minMemory      = 16 * MiB
	minPids        = 16 // the jail's own processes need some (jail.MinPids; a test keeps them equal)
	maxPids        = 65536
	minCPUs        = 0.01 // cgroups refuse a quota under 1ms per 100ms period
	maxCPUs        = 1024
	minTmpSize     = 1 * MiB
	minMaxOutput   = 1 * KiB
	maxMaxOutput   = 1 * GiB // host memory, per stream, per execution
	maxConnections = 4096
	minNetBytes    = 1 * KiB
)

// Default returns the configuration used when crucible.yaml is absent or
// empty, and the base that Parse decodes onto.
func Default() *Config {
	return &Config{
		Sandbox: Sandbox{
			Timeout:   Duration(30 * time.Second),
			Memory:    512 * MiB,
			Pids:      128,
			CPUs:      1,
			TmpSize:   64 * MiB,
			MaxOutput: 1 * MiB,
		},
		Network: Network{
			MaxConnections: 64,
			MaxBytesOut:    64 * MiB,
			MaxBytesIn:     1 * GiB,
			IdleTimeout:    Duration(60 * time.Second),
		},
		Runtimes: Runtimes{Python: "/usr/bin/python3", Engine: EngineAuto, JSHeap: 256 * MiB, JSStack: 10000},
		Tools:    Tools{MaxCalls: 50, MaxArgSize: 1 * MiB, MaxResultSize: 1 * MiB},
		Serve:    defaultServe(),
	}
}

// Normalize puts c's host paths in their clean form (filepath.Clean: no
// "//", "." or trailing "/"), so that a path set by hand (a command-line
// flag) compares equal to the same path read from the file. It checks
// nothing; Parse calls it after Validate (whose errors quote the paths as
// written), and so should callers that set fields by hand.
func (c *Config) Normalize() {
	clean := func(p *string) {
		if *p != "" {
			*p = filepath.Clean(*p)
		}
	}
	clean(&c.Sandbox.Workspace)
	for i := range c.Sandbox.RO {
		clean(&c.Sandbox.RO[i])
	}
	clean(&c.Runtimes.Python)
	clean(&c.Runtimes.Deno)
	clean(&c.Audit.File)
	clean(&c.Network.UpstreamCA)
	for name, a := range c.APIs {
		clean(&a.Docs)
		c.APIs[name] = a
	}
	c.normalizeSecrets()
	clean(&c.Serve.Skills)
	for name, s := range c.Servers {
		clean(&s.Cwd)
		for i := range s.RO {
			clean(&s.RO[i])
		}
		c.Servers[name] = s
	}
}

// Validate checks every bound, in field order, and returns the first violation
// as a one-line error that starts with the key, e.g.
// "sandbox.memory: must be at least 16MiB, not 1MiB". It changes nothing.
func (c *Config) Validate() error {
	if err := c.Sandbox.validate(); err != nil {
		return err
	}
	if err := c.Network.validate(); err != nil {
		return err
	}
	if err := c.Runtimes.validate(); err != nil {
		return err
	}
	if f := c.Audit.File; f != "" {
		if strings.Contains(f, "\x00") || !filepath.IsAbs(f) {
			return fieldErrorf("audit.file", "%s is not an absolute path", quote(f))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		s := c.Servers[name]
		if err := validateServer(name, &s); err != nil {
			return err
		}
	}
	if err := c.Tools.validate(); err != nil {
		return err
	}
	if err := c.validateSecrets(); err != nil {
		return err
	}
	if err := c.validateAPIs(); err != nil {
		return err
	}
	if err := c.validateClients(); err != nil {
		return err
	}
	if err := c.validateProfiles(); err != nil {
		return err
	}
	return c.Serve.validate(c.Sandbox.TmpSize)
}

func (r *Runtimes) validate() error {
	for _, f := range []struct {
		key string
		p   *string
	}{{"runtimes.python", &r.Python}, {"runtimes.deno", &r.Deno}} {
		if *f.p == "" {
			continue
		}
		if err := hostPath(*f.p); err != nil {
			return fieldErrorf(f.key, "%v", err)
		}
	}
	if r.Python == "" {
		return fieldErrorf("runtimes.python", "must not be empty")
	}
	switch r.Engine {
	case EngineEmbedded, EngineDeno, EngineAuto:
	default:
		return fieldErrorf("runtimes.engine", "must be %s, %s or %s, not %q", EngineAuto, EngineEmbedded, EngineDeno, r.Engine)
	}
	if r.JSHeap < minJSHeap || r.JSHeap > maxJSHeap {
		return fieldErrorf("runtimes.js_heap", "must be from %v to %v, not %v", minJSHeap, maxJSHeap, r.JSHeap)
	}
	if r.JSStack < minJSStack || r.JSStack > maxJSStack {
		return fieldErrorf("runtimes.js_stack", "must be from %d to %d frames, not %d", minJSStack, maxJSStack, r.JSStack)
	}
	return nil
}

// envName is a valid environment variable name: an identifier.
var envName = identifier

func (s *Sandbox) validate() error {
	if s.Timeout <= 0 || time.Duration(s.Timeout) > maxTimeout {
		return fieldErrorf("sandbox.timeout", "must be more than 0 and at most 24h, not %v", s.Timeout)
	}
	if s.Memory < minMemory {
		return fieldErrorf("sandbox.memory", "must be at least %v, not %v", minMemory, s.Memory)
	}
	if s.Pids < minPids || s.Pids > maxPids {
		return fieldErrorf("sandbox.pids", "must be between %d and %d, not %d (the jail's own processes count too)", minPids, maxPids, s.Pids)
	}
	// Written so that NaN fails too.
	if !(s.CPUs >= minCPUs && s.CPUs <= maxCPUs) {
		return fieldErrorf("sandbox.cpus", "must be between %g and %d, not %g", minCPUs, maxCPUs, s.CPUs)
	}
	if s.TmpSize < minTmpSize {
		return fieldErrorf("sandbox.tmp_size", "must be at least %v, not %v", minTmpSize, s.TmpSize)
	}
	if s.Workspace != "" {
		if err := hostPath(s.Workspace); err != nil {
			return fieldErrorf("sandbox.workspace", "%v", err)
		}
	}
	for i, p := range s.RO {
		if err := hostPath(p); err != nil {
			return fieldErrorf(fmt.Sprintf("sandbox.ro[%d]", i), "%v", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		path := mapPath("sandbox.env", k)
		if !envName().MatchString(k) {
			return fieldErrorf(path, "not a valid variable name (letters, digits and _, not starting with a digit)")
		}
		// The value is not quoted: it may well be a credential.
		if strings.Contains(s.Env[k], "\x00") {
			return fieldErrorf(path, "value contains a NUL byte")
		}
	}
	if s.MaxOutput < minMaxOutput || s.MaxOutput > maxMaxOutput {
		return fieldErrorf("sandbox.max_output", "must be between %v and %v, not %v", minMaxOutput, maxMaxOutput, s.MaxOutput)
	}
	for i, l := range s.AllowDegraded {
		if !slices.Contains(DegradableLayers, l) {
			return fieldErrorf(fmt.Sprintf("sandbox.allow_degraded[%d]", i), "unknown layer %s (want one of %s)", quote(l), strings.Join(DegradableLayers, ", "))
		}
	}
	return nil
}

// hostPath checks that p may be bind-mounted into a jail: an absolute path
// that, once clean, is neither the whole host nor in one of the kernel's own
// filesystems, whose host instances would hand the code other processes,
// devices and kernel knobs. It does not resolve symlinks (the path may not
// exist yet on this machine); the code that mounts must check what it opens.
func hostPath(p string) error {
	if strings.Contains(p, "\x00") {
		return fmt.Errorf("%s contains a NUL byte", quote(p))
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%s is not an absolute path", quote(p))
	}
	c := filepath.Clean(p)
	if c == "/" {
		return fmt.Errorf("%s is the host's root", quote(p))
	}
	for _, k := range []string{"/proc", "/sys", "/dev"} {
		if c == k || strings.HasPrefix(c, k+"/") {
			return fmt.Errorf("%s is inside %s, which must not be mounted into the sandbox", quote(p), k)
		}
	}
	return nil
}

// Duration is a span of time, written as Go duration text: decimal numbers
// each followed by a unit, e.g. "30s", "1m30s", "1.5h", "500ms" (units ns, us,
// µs, ms, s, m, h; see [time.ParseDuration]). A bare number such as 30 is
// rejected rather than guessed to be seconds.
//
// Like [ByteSize], it implements the encoding.Text interfaces, for yaml.v3
// and flag.TextVar.
type Duration time.Duration

// String formats d like [time.Duration.String], e.g. "30s", "1m30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements [encoding.TextMarshaler] with [Duration.String].
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements [encoding.TextUnmarshaler].
func (d *Duration) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	if s != "" && strings.Trim(s, "0123456789.") == "" {
		return fmt.Errorf("%s has no unit (use e.g. 30s or 5m)", quote(s))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%s is not a duration (use e.g. 30s, 5m or 1h30m)", quote(s))
	}
	*d = Duration(v)
	return nil
}

// fieldError is a problem with one key; Parse adds the key's line to it.
type fieldError struct {
	path string // as the decoder records it: "sandbox.ro[2]", `sandbox.env["K"]`
	msg  string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

func fieldErrorf(path, format string, args ...any) error {
	return &fieldError{path, fmt.Sprintf(format, args...)}
}

// mapPath names the entry key of the map at path, quoted so that any key
// stays on one line.
func mapPath(path, key string) string {
	return path + "[" + strconv.Quote(key) + "]"
}

// quote renders a value from the file for an error message: quoted, so that
// it stays on one line, and shortened, so that a message never carries more
// than the start of it.
func quote(s string) string {
	const max = 48
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// conditionError says where a CEL condition fails to load.
func conditionError(err error) string {
	var ce *cond.Error
	if errors.As(err, &ce) && ce.Column > 0 {
		return fmt.Sprintf("at character %d of the condition: %s", ce.Column, ce.Msg)
	}
	return err.Error()
}
