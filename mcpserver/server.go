// Package mcpserver is `crucible serve`: an MCP server in "code mode". An
// agent gets two tools instead of hundreds: search_tools, to find what the
// configured MCP servers offer, and execute, to run a program that calls
// them in a fresh jail (the sandbox package), with the network policy,
// limits and audit trail of the configuration.
//
// It speaks MCP over stdio ([Server.ServeStdio]) and Streamable HTTP
// ([Server.Handler]), with the official Go SDK. It holds the server's own
// state: workspaces by handle, the limits on executions, metrics. It knows
// nothing of jails, networks or languages beyond what sandbox offers.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cruciblehq/crucible/workspace"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/randomid"
	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/mcpserver/auth"
	"github.com/cruciblehq/crucible/replica"
	"github.com/cruciblehq/crucible/sandbox"
	"github.com/cruciblehq/crucible/serverlogin"
)

// Options configure a Server. Config is required.
type Options struct {
	Config *config.Config
	// Audit receives every execution's lines; nil records nothing.
	Audit *audit.Writer
	// Tools is the bridge to the configured MCP servers, which the caller
	// closes after the Server; nil gives programs no tools.
	Tools *sandbox.Tools
	// Secrets, from sandbox.LoadSecrets, is required when the
	// configuration has secrets or API rules.
	Secrets *sandbox.Secrets
	// Logger receives the server's own log lines; nil discards them.
	Logger *slog.Logger
	// Version is the server's version, as initialize reports it.
	Version string
	// ProgressEvery is how often a running execution sends a progress
	// notification to a client that asked for them. Default 5s.
	ProgressEvery time.Duration
	// ReplicaKey is the key of serve.replicas, read: required with it.
	ReplicaKey []byte
	// Reread reads the configuration again, for Reload; nil: the
	// server cannot reload.
	Reread Reread
}

// Server is one `crucible serve`: its MCP servers (one per way of being
// reached) and the state they share.
type Server struct {
	o      Options
	log    *slog.Logger
	gate   *gate
	rate   *rateLimiter
	spaces *workspace.Set
	stats  *metrics

	// gens are the configurations: the current one, which every new
	// execution, search and request takes, and those a reload replaced
	// whose executions still run (see reload.go).
	gens generations
	// faces are the MCP servers that sessions are made on, by what they
	// offer (faceKey): a session keeps its face across reloads, and its
	// calls take the current configuration.
	faces faces

	oauth    *auth.Verifier    // serve.oauth's tokens; nil without
	web      *serverlogin.Web  // the clients' logins to remote servers
	console  *console          // what /console shows
	replicas *replica.Replicas // serve.replicas; nil without
	// mint makes a new id of a kind ("ws_", "se_", "st_"): with replicas,
	// one that names this replica.
	mint       func(kind string) string
	forwardsTo forwards    // requests forwarded to the replica that owns them
	draining   atomic.Bool // Drain has begun: no new executions
	skillMu    sync.Mutex  // held while a client's skill is checked and written
	reloads    reloads     // how reloads went

	ctx    context.Context // ends every execution, on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// calls counts the tool calls being handled: Close waits for them,
	// which end soon once its cancel reaches their executions, before it
	// tears down what they use (the sessions, the workspaces, wg).
	calls sync.WaitGroup

	requests  requests  // the HTTP requests being served
	approvals approvals // executions waiting for a 2026-07-28 client's answer
	sessions  sessions  // the MCP sessions, stdio's and HTTP's

	mu     sync.Mutex
	closed bool // Close has begun: nothing more joins wg or calls
}

// errWorkspaceSet refuses a configuration with sandbox.workspace, at the
// start and at a reload.
var errWorkspaceSet = errors.New("sandbox.workspace: crucible serve gives each client workspaces of its own; leave it out (it is for exec and run)")

// poolIdle is how long a warm jail waits for work before it is replaced.
const poolIdle = 5 * time.Minute

// New makes a Server. Close it to stop its executions and delete its
// workspaces.
func New(o Options) (*Server, error) {
	if o.Config == nil {
		return nil, errors.New("mcpserver: no configuration")
	}
	if o.Config.Sandbox.Workspace != "" {
		return nil, errWorkspaceSet
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 5 * time.Second
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sv := &o.Config.Serve
	replicas, err := newReplicas(sv, o.ReplicaKey)
	if err != nil {
		return nil, err
	}
	mint := func(kind string) string {
		if replicas != nil {
			return replicas.ID(kind)
		}
		return randomid.New(kind, 16)
	}
	spaces, err := workspace.Open(workspace.Options{
		NewHandle: func() string { return mint("ws_") },
		Size:      int64(o.Config.Sandbox.TmpSize), TTL: time.Duration(sv.WorkspaceTTL), Total: sv.MaxWorkspaces,
		TotalBytes: int64(sv.MaxWorkspaceBytes), PerClient: sv.MaxWorkspacesPerClient,
		Spare:  sv.Pool, // as many as the warm jails of a pool, which a burst of fresh calls takes
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		o: o, log: log,
		gate:     newGate(sv.MaxConcurrent, time.Duration(sv.BusyWait)),
		rate:     newRateLimiter(sv.Rate, sv.Burst),
		spaces:   spaces,
		stats:    newMetrics(o.Tools.Servers(), o.Config.ClientNames()),
		ctx:      ctx,
		cancel:   cancel,
		sessions: newSessions(),
		console:  newConsole(),
		replicas: replicas,
		mint:     mint,
	}
	s.stats.gauge("crucible_executions_running", "Executions running now.", func() float64 { return float64(s.gate.running()) })
	s.stats.gauge("crucible_workspaces", "Workspaces alive now (each a directory).", func() float64 { return float64(s.spaces.Count()) })
	if o.Config.Serve.OAuth.Enabled() {
		s.oauth = auth.NewVerifier(ctx, o.Config, log)
	}
	// The login settings of the configuration current when a client's
	// browser comes back.
	s.web = serverlogin.NewWeb(func(name string) (*serverlogin.Settings, error) { return sandbox.LoginSettings(s.config(), name) })
	if replicas != nil {
		s.stats.counter("crucible_replica_forwards_total", "Requests forwarded to the replica that owns their session, workspace or paused execution.", func() float64 { return float64(s.forwardsTo.total()) })
	}
	g, err := s.newGeneration(o.Config, o.Tools, o.Secrets, nil)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	s.gens.start(g, s.retire)
	s.reloads.metrics(s.stats)
	if sv.Pool > 0 {
		s.poolMetrics()
	}
	s.wg.Add(1)
	go s.sweep()
	return s, nil
}

// newReplicas is serve.replicas' replicas, nil when it has none.
func newReplicas(sv *config.Serve, key []byte) (*replica.Replicas, error) {
	if !sv.Replicas.Enabled() {
		return nil, nil
	}
	name := sv.Replicas.Name
	if name == "" {
		name, _ = os.Hostname()
		if !replica.ValidName(name) {
			return nil, fmt.Errorf("serve.replicas.name: the host's name %q is no DNS name: set this one", name)
		}
	}
	replicas, err := replica.New(name, sv.Replicas.Peer, key)
	if err != nil {
		return nil, fmt.Errorf("serve.replicas: %w", err)
	}
	return replicas, nil
}

// poolMetrics are the warm pools' gauges and counters, over every view.
func (s *Server) poolMetrics() {
	poolCount := func(f func(sandbox.PoolStats) int64) func() float64 {
		return func() float64 {
			live, gone := s.gens.pools()
			n := f(gone)
			for _, p := range live {
				n += f(p.Stats())
			}
			return float64(n)
		}
	}
	s.stats.gauge("crucible_pool_ready", "Warm jails waiting for work.", poolCount(func(st sandbox.PoolStats) int64 { return int64(st.Ready) }))
	s.stats.counter("crucible_pool_warm_total", "Executions that found a warm jail ready.", poolCount(func(st sandbox.PoolStats) int64 { return st.Warm }))
	s.stats.counter("crucible_pool_cold_total", "Executions that waited for their jail to be built, or to finish starting.", poolCount(func(st sandbox.PoolStats) int64 { return st.Cold }))
	s.stats.counterBy("crucible_pool_misses_total", "Executions that found no warm jail of their language ready, by language.", "language", func() map[string]float64 {
		m := map[string]float64{}
		live, gone := s.gens.pools()
		for l, n := range gone.Misses {
			m[l] += float64(n)
		}
		for _, p := range live {
			for _, l := range p.Languages() {
				m[l] += 0 // every language, before its first miss
			}
			for l, n := range p.Stats().Misses {
				m[l] += float64(n)
			}
		}
		return m
	})
}

// Drain stops taking executions (a new one is refused, and /readyz says
// the server is draining, so that a load balancer sends work elsewhere),
// and waits for those running to end, or for ctx. It returns how many
// were still running.
func (s *Server) Drain(ctx context.Context) int {
	s.draining.Store(true)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		n := s.gate.running()
		if n == 0 {
			return 0
		}
		select {
		case <-ctx.Done():
			return n
		case <-t.C:
		}
	}
}

// errDraining answers an execution that arrives while the server drains.
var errDraining = errors.New("the server is shutting down (draining): run the program again, and it goes to another replica")

// Close stops every execution, waits for them, and deletes the workspaces.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.approvals.drop()
	s.calls.Wait()
	// Every execution has ended, and so each generation but the current
	// one has been closed, or is being closed (wg).
	g := s.gens.current()
	if g != nil { // nil when New failed
		g.closePools()
	}
	s.wg.Wait()
	if g != nil {
		g.closeTools(false)
	}
	return s.spaces.Close()
}

// join adds one to wg unless Close has begun, and says whether it did:
// Close sets closed under mu before it waits, so every Add comes first.
func (s *Server) join(wg *sync.WaitGroup) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		wg.Add(1)
	}
	return !s.closed
}

// sweep deletes idle workspaces, a few times per TTL.
func (s *Server) sweep() {
	defer s.wg.Done()
	every := min(max(s.spaces.TTL()/4, time.Second), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.spaces.Sweep()
		}
	}
}

// instructions teach the model the tools API in a few lines.
var instructions = fmt.Sprintf(`Crucible runs your code in a fresh, locked-down sandbox. Use it to call many tools in one step.

1. search_tools {query} finds the tools of the connected MCP servers and the HTTP APIs you may call with fetch (detail "full" gives the tools' TypeScript declarations and the APIs' docs; an empty query lists them all).
2. execute {code} runs a TypeScript program (language %s for others). Call tools by the names search_tools shows (a tool named get-sum is get_sum): const r = await tools.<server>.<tool>({...args}); the value of a final "return" is the result. Python: from crucible import tools; tools.<server>.<tool>(...).
3. Files written to /workspace stay for the next execute that passes back the result's "workspace" handle (and within one MCP session).

Limits: each program has a time, memory and output limit, a bounded number of tool calls, and reaches only the network hosts the operator allowed. A refused operation is listed in "violations" with the reason: change the program rather than retry it.`, otherLanguages())

// denoInstructions say what a program may use when Deno runs TypeScript
// and JavaScript (runtimes.engine), and what the sandbox still refuses.
const denoInstructions = `TypeScript and JavaScript run on Deno (V8): the web platform's APIs (fetch, Intl, Blob, streams, AbortSignal.timeout, crypto.subtle) and Deno's (Deno.readTextFile, Deno.env, Deno.Command) are there. Files may be read only under /workspace, /tmp and /skills and written only under /workspace and /tmp; no FFI; subprocesses run inside the sandbox; the network reaches only the hosts the operator allowed, and npm:/jsr:/https: imports only through those.`

// otherLanguages are the languages but the default, quoted: "js", "py" or "deno".
func otherLanguages() string {
	var q []string
	for _, l := range languageNames()[1:] {
		q = append(q, strconv.Quote(l))
	}
	return orList(q)
}

// instructionsOf are the instructions a session of cfg's is given.
func instructionsOf(cfg *config.Config) string {
	ins := instructions
	if sandbox.Engine(cfg) == config.EngineDeno {
		ins += "\n\n" + denoInstructions
		if cfg.Serve.TypeCheck {
			ins += " Each program is type-checked against the tools' declarations before it runs (check: false skips it); one that does not pass does not run, and its TypeCheckError lists each mistake."
		} else {
			ins += " execute's check: true type-checks a program against the tools' declarations before it runs; one that does not pass does not run, and its TypeCheckError lists each mistake."
		}
	}
	if cfg.Serve.Skills != "" {
		ins += "\n\nSkills: reusable programs, listed as resources skill://NAME; import them as `import { f } from \"/skills/NAME.ts\"` (Python: `import NAME`)."
		if cfg.Serve.SkillsWritable {
			ins += " save_skill keeps a program of yours as one, for your programs alone."
		}
	}
	return ins
}

// newMCP makes an MCP server of face k, for sessions (stateless false:
// stdio and 2025-11-25 HTTP sessions, whose executions share a workspace)
// or for 2026-07-28 requests (stateless). Its handlers take the
// configuration current at each call, and the caller's view in it.
func (s *Server) newMCP(cfg *config.Config, k faceKey, stateless bool) (*mcp.Server, error) {
	so := &mcp.ServerOptions{Instructions: k.instructions, Logger: s.log}
	if s.replicas != nil {
		// The session's id names this replica: any other forwards its
		// requests here.
		so.GetSessionID = func() string { return s.mint("se_") }
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "crucible", Title: "Crucible", Version: s.o.Version}, so)
	et, err := executeTool(k.check)
	if err != nil {
		return nil, err
	}
	if err := addTool(s, srv, et, s.executeHandler(stateless)); err != nil {
		return nil, err
	}
	if err := addTool(s, srv, searchTool(), s.searchHandler()); err != nil {
		return nil, err
	}
	if sv := &cfg.Serve; sv.Skills != "" {
		if err := s.addSkills(sv, srv); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

// errClosing is a tool call's answer once the server is closing.
var errClosing = errors.New("the server is shutting down")

// addTool adds t, handled by h while s is not closing (Close waits for
// the calls in flight), with its schemas given as JSON. The SDK marshals a
// tool's input schema again on every call from a client of the 2026
// protocol (it looks for x-mcp-header annotations): for a
// *jsonschema.Schema that is a walk by reflection, for JSON a copy. A
// stateless call that is refused at once took ~10 % less of the server's
// CPU, and 40-50 us less.
func addTool[In, Out any](s *Server, srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) error {
	for _, f := range []*any{&t.InputSchema, &t.OutputSchema} {
		if *f == nil {
			continue
		}
		b, err := json.Marshal(*f)
		if err != nil {
			return fmt.Errorf("the schema of tool %s: %w", t.Name, err)
		}
		*f = json.RawMessage(b)
	}
	mcp.AddTool(srv, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		if !s.join(&s.calls) {
			var none Out
			return nil, none, errClosing
		}
		defer s.calls.Done()
		return h(ctx, req, in)
	})
	return nil
}

// poolFor is the pool of v whose jails run language's programs, if any.
func (v *view) poolFor(language string) *sandbox.Pool {
	for _, p := range v.pools {
		if p.Serves(language) {
			return p
		}
	}
	return nil
}

// view is what the clients of one profile get: the configuration narrowed
// to the profile, its tools, its secrets and its warm jails. A client calls nothing, and sees nothing in a
// search or a listing, that its view does not hold.
type view struct {
	profile string // "" for the whole configuration's
	cfg     *config.Config
	tools   *sandbox.Tools
	secrets *sandbox.Secrets
	owned   bool  // tools were made for the view: Close closes them
	face    *face // the MCP servers its clients' new sessions are made on

	// pools keep warm jails, one pool per worker (the engine's, for ts
	// and js; Python's), serve.pool of them each: every execution in their
	// languages takes one, its workspace bound in when it arrives.
	pools []*sandbox.Pool
}

// profileView makes the view of profile name of cfg: its configuration,
// and the tools and secrets read for it alone; from is the view it
// replaces, if any, whose unchanged tool servers it takes over.
func (s *Server) profileView(cfg *config.Config, name string, from *view) (*view, error) {
	pcfg := cfg.ForProfile(name)
	secrets, err := sandbox.LoadSecrets(pcfg)
	if err != nil {
		return nil, fmt.Errorf("profiles.%s: %w", name, err)
	}
	tools, err := sandbox.ReloadTools(from.toolsOf(), pcfg, s.o.Audit, s.log)
	if err != nil {
		return nil, fmt.Errorf("profiles.%s: %w", name, err)
	}
	return &view{profile: name, cfg: pcfg, tools: tools, secrets: secrets, owned: true}, nil
}

// build makes v's warm pools, which fill in the background.
func (s *Server) build(v *view) error {
	if err := sandbox.CheckEngine(v.cfg); err != nil {
		return err
	}
	if err := sandbox.CanTypeCheck(v.cfg, lang.TypeScript); v.cfg.Serve.TypeCheck && err != nil {
		return fmt.Errorf("serve.typecheck: %w", err)
	}
	if sv := &v.cfg.Serve; sv.Pool > 0 {
		for _, l := range sandbox.PoolLanguages(v.cfg) {
			if _, err := sandbox.Program(v.cfg, l, nil, "-"); err != nil {
				// Its runtime is missing (python3): its jails would never
				// be ready. Its programs run in new jails, which say why.
				s.log.Warn("no warm jails for a language", "language", l, "error", err)
				continue
			}
			p, err := sandbox.NewPool(v.cfg, l, sandbox.PoolOptions{
				Size: sv.Pool, Idle: poolIdle, InFlight: sv.MaxConcurrent,
				Audit: s.o.Audit, Tools: v.tools, Secrets: v.secrets,
				Workspaces: true, Skills: v.cfg.Serve.Skills,
			})
			if err != nil {
				return err
			}
			v.pools = append(v.pools, p)
		}
	}
	return nil
}

// toolsOf is v's tools; nil for a nil v.
func (v *view) toolsOf() *sandbox.Tools {
	if v == nil {
		return nil
	}
	return v.tools
}
