// Package toolbridge is the host side of the tool bridge: MCP clients of the
// downstream servers that an execution's code may call, the policy and
// limits each call passes first, and the TypeScript declarations of the
// tools the code sees.
//
// A [Bridge] holds the servers of one Crucible process: each is started (or
// connected to) on first use, shared by every execution, and restarted with
// back-off when it dies. A [Session] is one execution's view of the bridge:
// it counts the execution's calls and remembers the first group it used.
//
// It knows nothing of the configuration file, the jail or the channel the
// code's calls arrive on: the sandbox package hands it [Server] settings and
// carries calls to a Session. Every error a Session returns is safe to show
// the code: host paths and the servers' own credentials are redacted.
package toolbridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/cruciblehq/crucible/tracing"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/policy/callrule"
	"github.com/cruciblehq/crucible/toolargs"
)

// Defaults of the zero values in [Policy] and [Limits].
const (
	DefaultTimeout     = 30 * time.Second
	DefaultCalls       = 50
	DefaultArgBytes    = 1 << 20
	DefaultResultBytes = 1 << 20
)

// Server is one downstream MCP server: a command that Crucible starts and
// speaks to on its stdin and stdout, or the URL of a Streamable HTTP
// endpoint. Exactly one of Command and URL is set.
type Server struct {
	// Command is the program of a stdio server, looked up in Crucible's
	// PATH when it has no slash.
	Command string
	Args    []string
	// Env is the whole environment of a stdio server: nothing of Crucible's
	// own is passed on. Its values are redacted from whatever the code gets.
	Env map[string]string
	// Dir is the stdio server's working directory; "" is Crucible's.
	Dir string
	// Paths are more host paths the server knows, each (of 6 bytes or
	// more) replaced by its last element in whatever it returns: a jailed
	// server's read-only binds, which it sees at their host paths.
	Paths []string
	// Start, if not nil, starts a stdio server's process in place of the
	// bridge running Command itself: the sandbox passes one that runs the
	// server in a jail, of which the bridge knows nothing. It gets the
	// settings of the instance it starts (their {client} written out: see
	// clients.go), of which it is to run Args with Env in Dir. The process
	// must end when ctx is done; its standard error is to go to stderr,
	// whose last line the bridge reports when the server fails to start.
	Start func(ctx context.Context, s Server, stderr io.Writer) (*Process, error)

	// URL is a Streamable HTTP endpoint; Headers go with every request
	// (an Authorization header, say), and their values are redacted like
	// Env's.
	URL     string
	Headers map[string]string
	// Login, if not nil, authorizes a url server's requests with OAuth:
	// it gives the handler for the instance of a client (by its
	// ClientKey), whose tokens the bridge redacts like Headers' values
	// (package serverlogin makes them).
	Login func(client string) (Authorizer, error)

	// Shared keeps one instance of the server for every client: the
	// operator says it holds nothing of one client that another may not
	// see. Otherwise each client gets its own (see clients.go).
	Shared bool
	// MaxClients bounds the instances at once; zero means
	// DefaultMaxClients. IdleTimeout closes an instance unused that long;
	// zero means DefaultIdleTimeout.
	MaxClients  int
	IdleTimeout time.Duration

	Policy Policy
}

// Authorizer is an OAuth handler that names what it holds: the tokens
// it has handed out, which must not reach the code.
type Authorizer interface {
	auth.OAuthHandler
	Secrets() []string
}

// loginNeeded is an error that a login would mend (serverlogin's
// NeedsLogin): its words name the command to run.
type loginNeeded interface {
	error
	LoginNeeded() bool
}

// Process is a stdio server that a [Server]'s Start started.
type Process struct {
	Stdin  io.WriteCloser // closing it asks the server to exit
	Stdout io.ReadCloser  // ends when the server has exited
	// Wait waits for the server to exit and for what it held to be
	// released; it is called once. Its error, if any, says why the server
	// could not run or ended (a jail that could not be set up, a limit),
	// in words safe to show the code.
	Wait func() error
}

// Policy is what the code may do with one server.
type Policy struct {
	// Allow and Deny are globs of tool names (package glob: * any run,
	// '/' included; ?, [a-z]). Deny wins; an empty Allow allows every
	// tool not denied. With either, or with Rules, a name that is not
	// printable ASCII is refused: it cannot be matched cleanly.
	Allow, Deny []string
	// Resources are globs of the resource URIs the code may read, as
	// Allow and Deny are of tools. nil: every URI, unless Allow lists
	// tools; then none.
	Resources *Filter
	// Rules decide calls by their arguments (package callrule): the
	// first whose tools match a call allows it only if its condition
	// holds, and only once a human approves it if the rule says so.
	Rules []callrule.Rule
	// ApprovalTimeout bounds the wait for a human's approval; zero means
	// DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// Group names the server's data-flow group: once an execution has
	// called a server of one group, a server of another group is refused
	// for the rest of it. "" is no group.
	Group string
	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
}

// Filter is an allow and a deny list of globs; Deny wins, and no Allow
// allows everything not denied.
type Filter struct{ Allow, Deny []string }

// Limits bound one execution's use of the bridge; zero fields mean the
// defaults.
type Limits struct {
	Calls       int   // tool calls and resource reads
	ArgBytes    int64 // the JSON of one call's arguments
	ResultBytes int64 // the JSON of one call's value
}

func (l Limits) withDefaults() Limits {
	l.Calls = cmp.Or(l.Calls, DefaultCalls)
	l.ArgBytes = cmp.Or(l.ArgBytes, DefaultArgBytes)
	l.ResultBytes = cmp.Or(l.ResultBytes, DefaultResultBytes)
	return l
}

// Options configure a [Bridge].
type Options struct {
	Servers map[string]Server // by name, as the code names them
	Limits  Limits            // of each Session
	// Logger receives the servers' starts and failures; nil discards
	// them.
	Logger *slog.Logger
	// From is the bridge this one replaces, on a reload of the
	// configuration: each of its servers that Keep says is unchanged is
	// shared with its instances running, not made anew. It stays From's
	// until Commit hands it over (then From's Close leaves it to this
	// bridge; before, this bridge's Close leaves it to From). From goes
	// on serving the executions that use it until it is closed.
	From *Bridge
	Keep func(name string) bool
}

// Bridge holds the downstream servers of one Crucible process. It is safe
// for concurrent use.
type Bridge struct {
	servers map[string]*endpoint
	limits  Limits
	log     *slog.Logger
	stop    chan struct{} // closed by Close: ends the sweep
	swept   sync.WaitGroup
	closing sync.Once

	from     *Bridge            // Options.From, until Commit
	borrowed map[*endpoint]bool // From's, shared until Commit

	mu     sync.Mutex
	given  map[*endpoint]bool // handed over to the bridge that replaced this one
	closed bool               // Close has begun: nothing more is handed over
}

// New returns a bridge to the servers of o. It starts nothing: each server
// starts on its first use.
func New(o Options) (*Bridge, error) {
	b := &Bridge{servers: map[string]*endpoint{}, limits: o.Limits.withDefaults(), log: o.Logger, stop: make(chan struct{})}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	home, _ := os.UserHomeDir()
	for name, s := range o.Servers {
		if e := o.From.lend(name, o.Keep); e != nil {
			if b.borrowed == nil {
				b.from, b.borrowed = o.From, map[*endpoint]bool{}
			}
			b.servers[name], b.borrowed[e] = e, true
			continue
		}
		if why := ServerNameOK(name); why != "" {
			return nil, fmt.Errorf("tool server %q: the name %s", name, why)
		}
		if (s.Command == "") == (s.URL == "") {
			return nil, fmt.Errorf("tool server %s: exactly one of a command and a URL is needed", name)
		}
		r, err := compileRules(s.Policy)
		if err != nil {
			return nil, fmt.Errorf("tool server %s: %w", name, err)
		}
		s.Policy.Timeout = cmp.Or(s.Policy.Timeout, DefaultTimeout)
		s.Policy.ApprovalTimeout = cmp.Or(s.Policy.ApprovalTimeout, DefaultApprovalTimeout)
		s.MaxClients = cmp.Or(s.MaxClients, DefaultMaxClients)
		s.IdleTimeout = cmp.Or(s.IdleTimeout, DefaultIdleTimeout)
		log, bound := b.log.With("server", name), messageBound(b.limits.ResultBytes)
		b.servers[name] = newEndpoint(name, s, r, func(client string) *server {
			key := ClientKey(client)
			return newServer(name, key, perClient(s, key), r, bound, home, log)
		})
	}
	b.swept.Go(b.sweep)
	return b, nil
}

// lend is b's server name, to share with the bridge that replaces b, if
// b has it, keep says it is unchanged, and b is not closing; else nil.
func (b *Bridge) lend(name string, keep func(string) bool) *endpoint {
	if b == nil || keep == nil || b.servers[name] == nil || !keep(name) {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	return b.servers[name]
}

// Commit takes over the servers shared with Options.From: from now on
// this bridge's Close stops them, and From's leaves them. Called when the
// reload that made this bridge is taken; a bridge never committed leaves
// them to From.
func (b *Bridge) Commit() {
	if b.from == nil {
		return
	}
	b.from.mu.Lock()
	if b.from.given == nil {
		b.from.given = map[*endpoint]bool{}
	}
	for e := range b.borrowed {
		b.from.given[e] = true
	}
	b.from.mu.Unlock()
	b.mu.Lock()
	b.from, b.borrowed = nil, nil
	b.mu.Unlock()
}

// sweep closes idle instances until Close.
func (b *Bridge) sweep() {
	every := time.Minute
	for _, e := range b.servers {
		every = min(every, max(e.cfg.IdleTimeout/4, 10*time.Millisecond))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case now := <-t.C:
			for _, e := range b.servers {
				e.sweep(now.Add(-e.cfg.IdleTimeout))
			}
		}
	}
}

// Close stops every server the bridge started and ends its connections,
// but those handed over to a bridge that replaced it and those it shares
// uncommitted (see Options.From); a stdio server has a moment to exit
// before it is killed. It may be called more than once.
func (b *Bridge) Close() {
	b.closing.Do(func() { close(b.stop) })
	b.swept.Wait()
	b.mu.Lock()
	b.closed = true
	var wg sync.WaitGroup
	for _, e := range b.servers {
		if !b.given[e] && !b.borrowed[e] {
			wg.Go(e.close)
		}
	}
	b.mu.Unlock()
	wg.Wait()
}

// Servers returns the names of the configured servers, sorted.
func (b *Bridge) Servers() []string { return slices.Sorted(maps.Keys(b.servers)) }

// Failing names the servers whose last start failed and that have not
// started since, sorted: what the bridge knows of its servers' health
// without starting any.
func (b *Bridge) Failing() []string {
	var out []string
	for _, name := range b.Servers() {
		for _, s := range b.servers[name].instances() {
			s.mu.Lock()
			failing := s.sess == nil && s.failures > 0
			s.mu.Unlock()
			if failing {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// ServerStatus is what an operator's console shows of a server.
type ServerStatus struct {
	Name      string `json:"name"`
	Instances int    `json:"instances"` // started, with a live session
	Failing   int    `json:"failing"`   // whose last start failed
	LastError string `json:"last_error,omitempty"`
}

// Status is each server's state, starting nothing.
func (b *Bridge) Status() []ServerStatus {
	var out []ServerStatus
	for _, name := range b.Servers() {
		st := ServerStatus{Name: name}
		for _, s := range b.servers[name].instances() {
			s.mu.Lock()
			switch {
			case s.sess != nil:
				st.Instances++
			case s.failures > 0:
				st.Failing++
				if s.lastErr != nil {
					st.LastError = s.lastErr.Error() // redacted as the code gets it
				}
			}
			s.mu.Unlock()
		}
		out = append(out, st)
	}
	return out
}

// Tool is one tool that the code may call.
type Tool struct {
	Server string `json:"server"`
	Name   string `json:"name"`
	// JSName is the name the code calls the tool by in every language,
	// tools.<server>.<JSName>(args): the bridge's lists set it (see
	// [Named]), and whatever shows the tool to the model shows it.
	JSName       string `json:"js_name,omitempty"`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"input_schema,omitempty"`
	OutputSchema any    `json:"output_schema,omitempty"`
}

// Tools lists the tools of every server that their policies allow, sorted
// by server and name, starting the servers that have not started yet. A
// server that cannot list its tools is left out, and its error (naming it)
// is joined into the error returned with the others' tools.
func (b *Bridge) Tools(ctx context.Context) ([]Tool, error) {
	return b.tools(ctx, func(e *endpoint) ([]Tool, error) { return e.listing().tools(ctx) })
}

// tools lists every server's tools with list, at once.
func (b *Bridge) tools(ctx context.Context, list func(*endpoint) ([]Tool, error)) ([]Tool, error) {
	names := b.Servers()
	lists := make([][]Tool, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { lists[i], errs[i] = list(b.servers[name]) })
	}
	wg.Wait()
	return slices.Concat(lists...), errors.Join(errs...)
}

// Session is one execution's use of the bridge: its calls are counted
// against the bridge's [Limits] and its groups kept apart. It is safe for
// concurrent use.
type Session struct {
	b      *Bridge
	asking chan struct{} // held while a human is asked

	mu     sync.Mutex
	calls  int
	listed bool   // the session has listed the tools once
	group  string // the first group called, "" until then
	caller Caller
	// loginsAsked says how the caller's client was asked to log in to a
	// server, by server.
	loginsAsked map[string]string
}

// NewSession begins an execution's use of the bridge.
func (b *Bridge) NewSession() *Session { return &Session{b: b, asking: make(chan struct{}, 1)} }

// Calls returns how many calls the session has made (refused ones not
// counted).
func (s *Session) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Tools lists the tools the session may call; see [Bridge.Tools]. A
// server with a login lists them through the caller's own instance: the
// tools are those its client's login may see.
func (s *Session) Tools(ctx context.Context) ([]Tool, error) {
	s.mu.Lock()
	client := s.caller.Client
	s.mu.Unlock()
	return s.b.tools(ctx, func(e *endpoint) ([]Tool, error) {
		if e.cfg.Login == nil {
			return e.listing().tools(ctx)
		}
		srv, ok := e.acquire(client)
		if !ok {
			return nil, e.full("")
		}
		defer e.release(srv)
		list, err := srv.tools(ctx)
		return list, s.askLogin(ctx, e.name, err)
	})
}

// admit checks a call of tool with args (tool "" and args nil for a
// resource) on the named server against the policy and the limits, counts
// it, and, if a rule says so, has a human approve it.
//
// The call goes to the client's instance of the server, which the caller
// releases once the call is done.
func (s *Session) admit(ctx context.Context, name, tool string, args *toolargs.Args) (srv *server, release func(), err error) {
	e, ok := s.b.servers[name]
	if !ok {
		return nil, nil, refusef(KindTool, name, tool, "there is no tool server %q (servers: %s)", name, strings.Join(s.b.Servers(), ", "))
	}
	s.mu.Lock()
	client := s.caller.Client
	s.mu.Unlock()
	srv, ok = e.acquire(client)
	if !ok {
		return nil, nil, e.full(tool)
	}
	defer func() {
		if err != nil {
			e.release(srv)
		}
	}()
	var d callrule.Decision
	if tool != "" {
		if why := srv.rules.refuses(tool); why != "" {
			return nil, nil, refusef(KindTool, name, tool, "%s", why)
		}
		// Only a tool the server lists, by the name it lists: the
		// policy matched that name, and a server that took
		// "Delete_repo" for "delete_repo" must not get a name the
		// policy never saw.
		if ok, err := srv.lists(ctx, tool); err != nil {
			return nil, nil, err
		} else if !ok {
			return nil, nil, refusef(KindTool, name, tool, "tool server %s has no tool %q that the code may call; tools.list() shows them, by the names to use", name, tool)
		}
		if len(srv.rules.calls) > 0 {
			s.mu.Lock()
			c := callrule.Call{Server: name, Tool: tool, Args: args, Calls: s.calls, Now: time.Now(),
				Client: s.caller.Client, Profile: s.caller.Profile, Language: s.caller.Language}
			s.mu.Unlock()
			if d = callrule.Decide(srv.rules.calls, c); d.Refused != "" {
				return nil, nil, refusef(KindTool, name, tool, "%s", d.Refused)
			}
		}
	}
	if err := s.count(srv, tool); err != nil {
		return nil, nil, err
	}
	if d.Approve {
		// Counted before the human is asked: a program that asks in a
		// loop runs out of calls.
		if err := s.approve(ctx, srv, tool, args, d); err != nil {
			return nil, nil, err
		}
	}
	return srv, func() { e.release(srv) }, nil
}

// count counts a call of srv against the limits, and binds its group.
func (s *Session) count(srv *server, tool string) error {
	lim := s.b.limits
	s.mu.Lock()
	defer s.mu.Unlock()
	name, g := srv.name, srv.cfg.Policy.Group
	if g != "" && s.group != "" && g != s.group {
		return refusef(KindTool, name, tool, "tool server %s is in group %q, and this execution has already used group %q: groups are kept apart, so use %q's tools in another execution", name, g, s.group, g)
	}
	if s.calls >= lim.Calls {
		return refusef(KindLimit, name, tool, "this execution has made its %d tool calls, the most allowed: make fewer calls, e.g. one that returns more", lim.Calls)
	}
	if g != "" {
		s.group = g
	}
	s.calls++
	return nil
}

// Count counts a request of the code that is not a call but costs the
// host work (what names it: "tools.apis"), against the same limit as
// calls: a program cannot have the host search without end.
func (s *Session) Count(what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lim := s.b.limits.Calls; s.calls >= lim {
		return refusef(KindLimit, "", "", "%s: this execution has made its %d tool calls and searches, the most allowed: make fewer", what, lim)
	}
	s.calls++
	return nil
}

// CountList counts a listing of the tools: the first of an execution is
// free (the runners list once, to map the names the code calls tools by),
// each one after it counts as a call, as Count.
func (s *Session) CountList() error {
	s.mu.Lock()
	first := !s.listed
	s.listed = true
	s.mu.Unlock()
	if first {
		return nil
	}
	return s.Count("tools.list")
}

// Call calls tool on the named server with args (a JSON object; empty means
// {}) and returns its value as JSON: the tool's structured content when it
// has some; else, for each content item, its text (parsed, when it is JSON)
// or, for an image, audio or resource, an object {type, mimeType, data} (or
// {type, uri, ...}); one item is the value itself, several are an array of
// them, none is null.
//
// A refusal is a [*Refusal]; a tool that reports an error is a
// [*ToolError]; a server that cannot be reached is an error naming it.
//
// The arguments are decoded once, strictly (package toolargs), and what
// the rules judge and a human approves is what the server gets: their
// JSON re-encoded, never the bytes the code wrote.
func (s *Session) Call(ctx context.Context, server, tool string, args []byte) ([]byte, error) {
	s.mu.Lock()
	parent := s.caller.Trace
	s.mu.Unlock()
	// The call's span: names and sizes, never the arguments or the result.
	ctx, span := tracing.Tracer().Start(trace.ContextWithSpanContext(ctx, parent), "tools/call", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("crucible.server", server), attribute.String("crucible.tool", tracing.Name(tool)), attribute.Int("crucible.args_bytes", len(args))))
	defer span.End()
	out, err := s.call(ctx, server, tool, args)
	if err != nil {
		outcome := "error"
		if r, ok := errors.AsType[*Refusal](err); ok {
			outcome = "refused: " + r.Kind
		}
		span.SetAttributes(attribute.String("crucible.outcome", outcome))
		span.SetStatus(codes.Error, outcome)
		return nil, err
	}
	span.SetAttributes(attribute.String("crucible.outcome", "ok"), attribute.Int("crucible.result_bytes", len(out)))
	return out, nil
}

func (s *Session) call(ctx context.Context, server, tool string, args []byte) ([]byte, error) {
	if int64(len(args)) > s.b.limits.ArgBytes {
		return nil, refusef(KindLimit, server, tool, "the arguments are %d bytes of JSON, more than the %d allowed: pass less data, or a reference to it", len(args), s.b.limits.ArgBytes)
	}
	a, err := toolargs.Parse(args)
	if err != nil {
		return nil, refusef(KindTool, server, tool, "tool %s is refused: %v", tool, err)
	}
	srv, release, err := s.admit(ctx, server, tool, a)
	if err != nil {
		return nil, s.askLogin(ctx, server, err)
	}
	defer release()
	s.mu.Lock()
	ask := s.caller.Elicit
	s.mu.Unlock()
	out, err := srv.call(ctx, tool, a.JSON(), ask)
	if err != nil {
		return nil, s.askLogin(ctx, server, err)
	}
	return s.bounded(srv, tool, out)
}

// full is the refusal of a call of tool (or a listing, "") when e serves
// its most clients at once.
func (e *endpoint) full(tool string) error {
	return refusef(KindLimit, e.name, tool, "tool server %s is serving its most clients at once (servers.%s.max_clients, %d), none of them idle: try again shortly", e.name, e.name, e.cfg.MaxClients)
}

// askLogin has the caller's client asked to log in to server when err
// says a login of its own would let the call through, and adds how.
func (s *Session) askLogin(ctx context.Context, server string, err error) error {
	if _, ok := errors.AsType[loginNeeded](err); !ok {
		return err
	}
	s.mu.Lock()
	ask, how, asked := s.caller.Login, s.loginsAsked[server], false
	if how != "" {
		asked = true
	}
	s.mu.Unlock()
	if ask == nil {
		return err
	}
	if !asked {
		// Once an execution: its client is asked once a server.
		how = ask(ctx, server)
		s.mu.Lock()
		if s.loginsAsked == nil {
			s.loginsAsked = map[string]string{}
		}
		s.loginsAsked[server] = how
		s.mu.Unlock()
	}
	if how != "" {
		return fmt.Errorf("%w: %s", err, how)
	}
	return err
}

// Resource reads the resource at uri on the named server and returns its
// contents as JSON: a list of {uri, mimeType, text} or {uri, mimeType,
// blob} (base64). It counts as a call, and binds the server's group like
// one; the server's resource globs apply (Policy.Resources).
func (s *Session) Resource(ctx context.Context, server, uri string) ([]byte, error) {
	if int64(len(uri)) > s.b.limits.ArgBytes {
		return nil, refusef(KindLimit, server, "", "the resource URI is %d bytes, more than the %d allowed", len(uri), s.b.limits.ArgBytes)
	}
	if e, ok := s.b.servers[server]; ok {
		if why := e.rules.refusesResource(uri); why != "" {
			return nil, refusef(KindTool, server, "", "%s", why)
		}
	}
	srv, release, err := s.admit(ctx, server, "", nil)
	if err != nil {
		return nil, s.askLogin(ctx, server, err)
	}
	defer release()
	out, err := srv.resource(ctx, uri)
	if err != nil {
		return nil, s.askLogin(ctx, server, err)
	}
	return s.bounded(srv, "", out)
}

// bounded checks the size of a value before it is redacted (which walks
// all of it), and redacts it.
func (s *Session) bounded(srv *server, tool string, out []byte) ([]byte, error) {
	if max := s.b.limits.ResultBytes; int64(len(out)) > max {
		return nil, refusef(KindLimit, srv.name, tool, "the result is %d bytes of JSON, more than the %d allowed: ask the tool for less (a filter, a page, a smaller range)", len(out), max)
	}
	out, err := srv.redactJSON(out)
	if err != nil {
		return nil, fmt.Errorf("tool server %s: %w", srv.name, err)
	}
	return out, nil
}
