package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/replica"
)

// Serve configures `crucible serve`, the MCP server.
type Serve struct {
	// Token is the bearer token that HTTP clients must send. The
	// CRUCIBLE_TOKEN environment variable, when set, takes its place;
	// with neither, serve makes one and prints it once. Required when the
	// HTTP address is not a loopback one. At least 16 characters.
	Token string `yaml:"token"`
	// Tokens are more bearer tokens, each a client of its own: its own
	// workspaces and its own rate limit. Same rules as Token.
	Tokens []string `yaml:"tokens"`
	// AllowedOrigins are the browser origins ("http://host:port", or
	// "http://host" for any port) from which an HTTP request may come;
	// a request with another Origin header gets 403. Default:
	// http://localhost and http://127.0.0.1, any port.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// AllowedHosts are the names (host, or host:port) by which HTTP
	// clients reach the server: a request whose Host header is another is
	// refused, on every endpoint. Default: none checked, except that a
	// server listening on loopback takes only loopback names (localhost,
	// 127.0.0.1, [::1]) against DNS rebinding.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// OAuth makes the HTTP server an OAuth 2.1 resource server: beside the
	// bearer tokens above, it takes JWTs from one issuer (see OAuth).
	OAuth OAuth `yaml:"oauth,omitempty"`
	// OTel exports OpenTelemetry traces (OTLP over HTTP); the standard
	// OTEL_* environment variables win over it.
	OTel OTel `yaml:"otel,omitempty"`
	// Replicas makes this serve one of several that serve each other's
	// clients (a StatefulSet's pods): see Replicas.
	Replicas Replicas `yaml:"replicas,omitempty"`
	// DrainTimeout is how long serve --http, told to stop (SIGTERM,
	// SIGINT), waits for the executions running to end, while /readyz
	// says it is draining and new executions are refused; then it stops
	// the rest. Default 30s; 0 (stop at once) to 1h. A second signal ends
	// the wait.
	DrainTimeout Duration `yaml:"drain_timeout"`
	// OpsPublic serves /readyz and /metrics to anyone who can connect;
	// default false: they need a client's bearer token, as /mcp does.
	// /healthz is always public.
	OpsPublic bool `yaml:"ops_public"`
	// MaxConcurrent bounds the executions running at once. Default 4;
	// 1 to 1024.
	MaxConcurrent int `yaml:"max_concurrent"`
	// BusyWait is how long an execution past MaxConcurrent waits for a
	// place before it is refused as busy. Default 2s; 0 to 1m.
	BusyWait Duration `yaml:"busy_wait"`
	// Rate is how many executions per second one client may start, on
	// average, and Burst how many at once (a token bucket per client: a
	// bearer token, or a stdio connection). Defaults 10 and 20; a Rate of
	// 0 turns the limit off.
	Rate  float64 `yaml:"rate"`
	Burst int     `yaml:"burst"`
	// WorkspaceTTL is how long an idle workspace handle lives; its
	// directory is then deleted. Default 30m; 1s to 7 days.
	WorkspaceTTL Duration `yaml:"workspace_ttl"`
	// MaxWorkspaces bounds the workspaces the server holds at once, the
	// spares made ahead included; past it, an execution that needs a new
	// one is refused. A client holds at most MaxWorkspacesPerClient.
	// Default 256; 1 to 65536.
	MaxWorkspaces int `yaml:"max_workspaces"`
	// MaxWorkspaceBytes bounds what the workspaces may hold together:
	// each is a tmpfs of sandbox.tmp_size, in memory, so the server holds
	// at most this divided by that many of them (and MaxWorkspaces at
	// most). Default 16GiB (256 of the default 64MiB); from
	// sandbox.tmp_size to 1TiB.
	MaxWorkspaceBytes ByteSize `yaml:"max_workspace_bytes"`
	// MaxWorkspacesPerClient bounds the workspaces one client holds (past
	// it, its least recently used idle one is deleted), and so its bytes:
	// this many times sandbox.tmp_size. Default 32; 1 to MaxWorkspaces.
	MaxWorkspacesPerClient int `yaml:"max_workspaces_per_client"`
	// MaxSessionsPerClient bounds the HTTP sessions (2025-11-25) one
	// client holds at once: past it, an initialize ends the client's
	// least recently used idle session (no request in flight; its next
	// request gets 404, and its client starts anew), and is refused (429)
	// only when every one is busy. Default 16; 1 to 1024.
	MaxSessionsPerClient int `yaml:"max_sessions_per_client"`
	// MaxBody bounds one HTTP request body. Default 4MiB; 1KiB to 256MiB.
	MaxBody ByteSize `yaml:"max_body"`
	// MaxResultOutput bounds each of an execute result's stdout, stderr,
	// result and error as they go back to the model, whatever the jail's
	// own output limit let through: past it, the head and the tail are
	// kept and truncated says so. Default 32KiB; 1KiB to 16MiB.
	MaxResultOutput ByteSize `yaml:"max_result_output"`
	// Pool is how many warm jails wait for work, per worker (one for ts
	// and js, one for py). Default 2; 0 to 64 (0: every execution builds
	// its jail).
	Pool int `yaml:"pool"`
	// TypeCheck type-checks every TypeScript and JavaScript program before
	// it runs, as execute's check: true does (a program that does not
	// pass does not run). It needs them on Deno (runtimes.engine deno, or
	// auto with a deno binary): serve refuses to start otherwise. Its
	// pool's workers wait with the checker started, so that a check is
	// warm. Default false.
	TypeCheck bool `yaml:"typecheck"`
	// Skills is a host directory of reusable programs, read-only at
	// /skills in the jail and listed as MCP resources. Default "": none.
	Skills string `yaml:"skills"`
	// SkillsWritable offers the save_skill and delete_skill tools. A skill
	// saved is its client's alone: it is kept in the client's directory
	// under SavedSkills, which only that client's jails see, laid over
	// Skills at /skills. The skills of Skills are the operator's, which
	// no client may change. Default false.
	SkillsWritable bool `yaml:"skills_writable"`
	// SavedSkills is where the skills that clients save are kept, one
	// directory per client: see SavedSkillsDir.
	SavedSkills string `yaml:"saved_skills"`
	// SkillsPerClient bounds the skills one client has saved, and
	// SkillBytesPerClient their sizes together. Defaults 32 and 2MiB.
	SkillsPerClient     int      `yaml:"skills_per_client"`
	SkillBytesPerClient ByteSize `yaml:"skill_bytes_per_client"`
}

// Bounds of the serve section.
const (
	minTokenLen                = 16
	maxConcurrent              = 1024
	maxBusyWait                = time.Minute
	minWorkspaceTTL            = time.Second
	maxWorkspaceTTL            = 7 * 24 * time.Hour
	minMaxBody                 = 1 * KiB
	maxMaxBody                 = 256 * MiB
	minResultOutput            = 1 * KiB
	maxResultOutput            = 16 * MiB
	maxPool                    = 64
	maxWorkspaces              = 65536
	maxWorkspaceBytes ByteSize = 1 << 40
	maxRate                    = 1e6
	maxBurst                   = 1000000
	defaultServePool           = 2
)

func defaultServe() Serve {
	return Serve{
		MaxConcurrent:          4,
		BusyWait:               Duration(2 * time.Second),
		Rate:                   10,
		Burst:                  20,
		WorkspaceTTL:           Duration(30 * time.Minute),
		MaxBody:                4 * MiB,
		MaxResultOutput:        32 * KiB,
		MaxWorkspaces:          256,
		MaxWorkspaceBytes:      16 * GiB,
		MaxWorkspacesPerClient: 32,
		SkillsPerClient:        32,
		DrainTimeout:           Duration(30 * time.Second),
		SkillBytesPerClient:    2 * MiB,
		MaxSessionsPerClient:   16,
		Pool:                   defaultServePool,
	}
}

// OTel is where serve's traces go.
type OTel struct {
	// Endpoint is an OTLP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT:
	// /v1/traces is added). "" (the default): no traces, unless the
	// environment names one.
	Endpoint string `yaml:"endpoint,omitempty"`
	// ServiceName is the traces' service.name; default "crucible".
	ServiceName string `yaml:"service_name,omitempty"`
}

// validate checks s; workspace is the size of one workspace
// (sandbox.tmp_size).
func (s *Serve) validate(workspace ByteSize) error {
	if e := s.OTel.Endpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return fieldErrorf("serve.otel.endpoint", "%s is not an http or https URL", quote(e))
		}
	}
	if s.Token != "" && !TokenOK(s.Token) {
		// The value is not quoted: it is a credential.
		return fieldErrorf("serve.token", "must be at least %d characters, without spaces or line breaks", minTokenLen)
	}
	for i, t := range s.Tokens {
		if !TokenOK(t) {
			return fieldErrorf(fmt.Sprintf("serve.tokens[%d]", i), "must be at least %d characters, without spaces or line breaks", minTokenLen)
		}
	}
	for i, o := range s.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return fieldErrorf(fmt.Sprintf("serve.allowed_origins[%d]", i), "%s is not an origin such as http://localhost:3000 or https://app.example.com", quote(o))
		}
	}
	if s.OAuth.Enabled() {
		if err := s.OAuth.validate(); err != nil {
			return err
		}
	} else if s.OAuth.Audience != "" || s.OAuth.JWKSURL != "" || len(s.OAuth.Scopes) > 0 {
		return fieldErrorf("serve.oauth.issuer", "is needed: the authorization server whose tokens to take")
	}
	if err := s.Replicas.validate(); err != nil {
		return err
	}
	for i, h := range s.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ \t\r\n@?#") {
			return fieldErrorf(fmt.Sprintf("serve.allowed_hosts[%d]", i), "%s is not a host name such as crucible.example.com or crucible.example.com:8080", quote(h))
		}
	}
	if s.MaxConcurrent < 1 || s.MaxConcurrent > maxConcurrent {
		return fieldErrorf("serve.max_concurrent", "must be between 1 and %d, not %d", maxConcurrent, s.MaxConcurrent)
	}
	if s.BusyWait < 0 || time.Duration(s.BusyWait) > maxBusyWait {
		return fieldErrorf("serve.busy_wait", "must be from 0 to 1m, not %v", s.BusyWait)
	}
	if !(s.Rate >= 0 && s.Rate <= maxRate) {
		return fieldErrorf("serve.rate", "must be from 0 (no limit) to %g per second, not %g", float64(maxRate), s.Rate)
	}
	if s.Rate > 0 && (s.Burst < 1 || s.Burst > maxBurst) {
		return fieldErrorf("serve.burst", "must be between 1 and %d, not %d", maxBurst, s.Burst)
	}
	if time.Duration(s.WorkspaceTTL) < minWorkspaceTTL || time.Duration(s.WorkspaceTTL) > maxWorkspaceTTL {
		return fieldErrorf("serve.workspace_ttl", "must be from 1s to 168h, not %v", s.WorkspaceTTL)
	}
	if s.MaxBody < minMaxBody || s.MaxBody > maxMaxBody {
		return fieldErrorf("serve.max_body", "must be between %v and %v, not %v", minMaxBody, maxMaxBody, s.MaxBody)
	}
	if s.MaxResultOutput < minResultOutput || s.MaxResultOutput > maxResultOutput {
		return fieldErrorf("serve.max_result_output", "must be between %v and %v, not %v", minResultOutput, maxResultOutput, s.MaxResultOutput)
	}
	if s.MaxWorkspaces < 1 || s.MaxWorkspaces > maxWorkspaces {
		return fieldErrorf("serve.max_workspaces", "must be between 1 and %d, not %d", maxWorkspaces, s.MaxWorkspaces)
	}
	if s.MaxWorkspacesPerClient < 1 || s.MaxWorkspacesPerClient > s.MaxWorkspaces {
		return fieldErrorf("serve.max_workspaces_per_client", "must be between 1 and serve.max_workspaces (%d), not %d", s.MaxWorkspaces, s.MaxWorkspacesPerClient)
	}
	if s.MaxSessionsPerClient < 1 || s.MaxSessionsPerClient > 1024 {
		return fieldErrorf("serve.max_sessions_per_client", "must be between 1 and 1024, not %d", s.MaxSessionsPerClient)
	}
	if s.MaxWorkspaceBytes < workspace || s.MaxWorkspaceBytes > maxWorkspaceBytes {
		return fieldErrorf("serve.max_workspace_bytes", "must be between one workspace (sandbox.tmp_size: %v) and %v, not %v", workspace, maxWorkspaceBytes, s.MaxWorkspaceBytes)
	}
	if s.Pool < 0 || s.Pool > maxPool {
		return fieldErrorf("serve.pool", "must be from 0 to %d, not %d", maxPool, s.Pool)
	}
	if s.Skills != "" {
		if err := hostPath(s.Skills); err != nil {
			return fieldErrorf("serve.skills", "%v", err)
		}
	} else if s.SkillsWritable {
		return fieldErrorf("serve.skills_writable", "needs serve.skills, the directory of the operator's skills")
	}
	if s.SavedSkills != "" {
		if err := hostPath(s.SavedSkills); err != nil {
			return fieldErrorf("serve.saved_skills", "%v", err)
		}
	}
	if s.DrainTimeout < 0 || time.Duration(s.DrainTimeout) > time.Hour {
		return fieldErrorf("serve.drain_timeout", "must be from 0 to 1h, not %v", s.DrainTimeout)
	}
	if s.SkillsPerClient < 1 || s.SkillsPerClient > 10000 {
		return fieldErrorf("serve.skills_per_client", "must be between 1 and 10000, not %d", s.SkillsPerClient)
	}
	if s.SkillBytesPerClient < 1*KiB || s.SkillBytesPerClient > 1*GiB {
		return fieldErrorf("serve.skill_bytes_per_client", "must be between 1KiB and 1GiB, not %v", s.SkillBytesPerClient)
	}
	return nil
}

// TokenOK reports whether t may be a bearer token (as CRUCIBLE_TOKEN too).
func TokenOK(t string) bool {
	return len(t) >= minTokenLen && !strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// OAuth is the authorization server whose access tokens (JWTs) the HTTP
// server takes, as the MCP authorization spec has it: Issuer its issuer
// URL; Audience the server's own resource URL (RFC 8707), which tokens
// must name in aud; Scopes those every token must hold; JWKSURL where its
// keys are, when not in its metadata (RFC 8414, or OpenID discovery).
type OAuth struct {
	Issuer   string   `yaml:"issuer"`
	Audience string   `yaml:"audience"`
	Scopes   []string `yaml:"scopes,omitempty"`
	JWKSURL  string   `yaml:"jwks_url,omitempty"`
}

// Enabled says whether the server takes OAuth access tokens.
func (o *OAuth) Enabled() bool { return o.Issuer != "" }

func (o *OAuth) validate() error {
	for _, u := range []struct{ key, url string }{{"issuer", o.Issuer}, {"audience", o.Audience}, {"jwks_url", o.JWKSURL}} {
		if u.url == "" && u.key == "jwks_url" {
			continue
		}
		p, err := url.Parse(u.url)
		secure := err == nil && (p.Scheme == "https" || p.Scheme == "http" && loopbackHost(p.Hostname()))
		if !secure || p.Host == "" || p.User != nil || p.Fragment != "" {
			return fieldErrorf("serve.oauth."+u.key, "%s is not an https URL (http only on loopback)", quote(u.url))
		}
	}
	for i, sc := range o.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\r\n\"") {
			return fieldErrorf(fmt.Sprintf("serve.oauth.scopes[%d]", i), "%s is not a scope", quote(sc))
		}
	}
	return nil
}

// loopbackHost says whether host is a loopback name or address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SavedSkillsDir is where the skills that clients save are kept: SavedSkills,
// or by default Skills's path with ".saved" appended; "" without Skills.
func (s *Serve) SavedSkillsDir() string {
	if s.Skills == "" {
		return ""
	}
	if s.SavedSkills != "" {
		return s.SavedSkills
	}
	return filepath.Clean(s.Skills) + ".saved"
}

// Replicas, when Peer is set, makes serve one replica of a set whose
// members serve each other's clients: the session ids, workspace handles
// and paused executions' states it hands out name it, with a MAC under
// Key, and a request for another member's is forwarded there, to Peer
// with {name} replaced by that member's Name.
type Replicas struct {
	// Name is this replica's: a DNS name, by which the others reach it.
	// Default: the host's name (a StatefulSet pod's is its own).
	Name string `yaml:"name,omitempty"`
	// Peer is a member's URL, {name} where its name goes, e.g.
	// http://{name}.crucible-peers:8080 (the headless Service's names).
	Peer string `yaml:"peer,omitempty"`
	// Key is the key the members share, at least 32 bytes (a Kubernetes
	// Secret's file).
	Key SecretSource `yaml:"key,omitempty"`
}

// Enabled says whether serve is one of several replicas.
func (r *Replicas) Enabled() bool { return r.Peer != "" }

func (r *Replicas) validate() error {
	if !r.Enabled() {
		if r.Name != "" || r.Key.From != "" {
			return fieldErrorf("serve.replicas.peer", "is needed: the URL of a replica, {name} where its name goes")
		}
		return nil
	}
	if err := replica.CheckPeer(r.Peer); err != nil {
		return fieldErrorf("serve.replicas.peer", "%v", err)
	}
	if r.Name != "" && !replica.ValidName(r.Name) {
		return fieldErrorf("serve.replicas.name", "%s is not a DNS name (lowercase letters, digits, '-' and '.')", quote(r.Name))
	}
	if r.Key.From == "" {
		return fieldErrorf("serve.replicas.key", "is needed: the replicas' shared key (from: file:PATH or env:VAR)")
	}
	return nil
}
