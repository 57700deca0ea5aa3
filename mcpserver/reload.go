package mcpserver

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/sandbox"
)

// A reload (SIGHUP, POST /reload) replaces the configuration whole, or
// not at all. Everything that the configuration decides per execution or
// per request is one generation: the configuration, and each profile's
// view of it (its tool servers, secrets and warm pools). An execution or
// a search takes the current generation when it begins and holds it to
// its end, so it finishes under the configuration it began with; the next
// one takes the new generation. A generation replaced is closed once the
// last execution holding it has ended: its pools, and its tool servers
// but those the new one took over unchanged (sandbox.ReloadTools).
//
// Sessions and workspaces are not the configuration's, and outlive it: a
// session is made on a face (an MCP server that offers execute and
// search_tools, with the instructions of the configuration current then),
// whose handlers look up the caller's view in the current generation at
// each call. A client's profile, tokens and limits are those of the
// configuration current when its request comes.
//
// What the server set up once, at its start, cannot change without a
// restart (restartOnly): a reload that changes it is refused, naming it.

// generation is one configuration's state.
type generation struct {
	seq   int // 1 for the configuration serve started with
	cfg   *config.Config
	views map[string]*view // by profile; "" is the whole configuration's

	// Guarded by generations.mu.
	users   int  // executions and searches holding it
	retired bool // a reload replaced it: closed once users is 0
}

// viewOf is the view of client in g: a named client's profile's; the
// whole configuration's for a client without a profile, stdio, an
// anonymous token ("token:…") and an OAuth subject ("oauth:…"). It is nil
// for a named client that g does not know: one a reload removed after its
// request was let in, which gets nothing of it.
func (g *generation) viewOf(client string) *view {
	if _, named := g.cfg.Clients[client]; !named && client != "stdio" && !strings.Contains(client, ":") {
		return nil
	}
	return g.views[g.cfg.ProfileOf(client)]
}

// errNoClient answers a call of a client that the configuration no longer
// names.
var errNoClient = errors.New("this client is not in the server's configuration any more: its token was removed")

// closePools closes g's pools, destroying their waiting jails.
func (g *generation) closePools() {
	for _, p := range g.pools() {
		p.Close()
	}
}

// closeTools closes g's tool bridges: those its views made, and, when a
// reload replaced g (replaced), the one given at the server's start too;
// a bridge leaves running the servers handed over to the next.
func (g *generation) closeTools(replaced bool) {
	for _, v := range g.views {
		if v.owned || replaced {
			v.tools.Close()
		}
	}
}

// pools are g's pools.
func (g *generation) pools() []*sandbox.Pool {
	var out []*sandbox.Pool
	for _, v := range g.views {
		out = append(out, v.pools...)
	}
	return out
}

// newGeneration makes the generation of cfg: the whole configuration's
// view with tools and secrets (made here when nil), and each profile's;
// from is the generation it replaces (nil at the start), whose unchanged
// tool servers it takes over. On error nothing of it is left running.
func (s *Server) newGeneration(cfg *config.Config, tools *sandbox.Tools, secrets *sandbox.Secrets, from *generation) (_ *generation, err error) {
	g := &generation{seq: 1, cfg: cfg, views: map[string]*view{}}
	if from != nil {
		g.seq = from.seq + 1
	}
	defer func() {
		if err != nil {
			g.closePools()
			g.closeTools(false)
		}
	}()
	whole := &view{cfg: cfg, tools: tools, secrets: secrets}
	if from != nil {
		if whole.secrets, err = sandbox.LoadSecrets(cfg); err != nil {
			return nil, err
		}
		if whole.tools, err = sandbox.ReloadTools(from.views[""].tools, cfg, s.o.Audit, s.log); err != nil {
			return nil, err
		}
		whole.owned = true
	}
	g.views[""] = whole
	for _, name := range cfg.ProfileNames() {
		var old *view
		if from != nil {
			old = from.views[name]
		}
		v, err := s.profileView(cfg, name, old)
		if err != nil {
			return nil, err
		}
		g.views[name] = v
	}
	for _, v := range g.views {
		if err := s.build(v); err != nil {
			return nil, err
		}
		if v.face, err = s.faceFor(v.cfg); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// generations are the server's configurations: the current one, and those
// replaced that are still held.
type generations struct {
	mu   sync.Mutex
	cur  *generation
	live []*generation       // cur and those replaced, until closed
	gone sandbox.PoolStats   // the counts of the pools of generations closed
	done func(g *generation) // closes a generation replaced (Server.retire)
}

// start makes g the first generation; done closes each one replaced.
func (gs *generations) start(g *generation, done func(*generation)) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gs.cur, gs.live, gs.done = g, []*generation{g}, done
}

// current is the current generation, to read, not to hold.
func (gs *generations) current() *generation {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return gs.cur
}

// hold takes the current generation for an execution or a search, until
// release is called.
func (gs *generations) hold() (g *generation, release func()) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g = gs.cur
	g.users++
	var once sync.Once
	return g, func() { once.Do(func() { gs.leave(g) }) }
}

// leave ends one hold of g, and closes g if a reload replaced it and it
// was the last.
func (gs *generations) leave(g *generation) {
	gs.mu.Lock()
	g.users--
	last := g.retired && g.users == 0
	gs.mu.Unlock()
	if last {
		gs.done(g)
	}
}

// replace makes g current; the one it replaces is closed at once if
// nothing holds it, else when the last hold ends.
func (gs *generations) replace(g *generation) {
	gs.mu.Lock()
	old := gs.cur
	gs.cur = g
	gs.live = append(gs.live, g)
	old.retired = true
	idle := old.users == 0
	gs.mu.Unlock()
	if idle {
		gs.done(old)
	}
}

// closed forgets g, closed, keeping its pools' counts, which the metrics
// go on counting from.
func (gs *generations) closed(g *generation) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gs.live = slices.DeleteFunc(gs.live, func(o *generation) bool { return o == g })
	for _, p := range g.pools() {
		gs.gone = addPoolStats(gs.gone, p.Stats())
	}
}

// pools are the pools of every generation not yet closed, and what those
// of the generations closed counted: read at once, so that a generation
// closed meanwhile is counted once.
func (gs *generations) pools() (live []*sandbox.Pool, gone sandbox.PoolStats) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for _, g := range gs.live {
		live = append(live, g.pools()...)
	}
	gone = gs.gone
	gone.Misses = maps.Clone(gone.Misses)
	return live, gone
}

// addPoolStats adds the counters of b to a.
func addPoolStats(a, b sandbox.PoolStats) sandbox.PoolStats {
	a.Warm += b.Warm
	a.Cold += b.Cold
	a.Failed += b.Failed
	if len(b.Misses) > 0 && a.Misses == nil {
		a.Misses = map[string]int64{}
	}
	for l, n := range b.Misses {
		a.Misses[l] += n
	}
	return a
}

// retire closes g, which a reload replaced and nothing holds any more, in
// the background (Close waits for it).
func (s *Server) retire(g *generation) {
	closeIt := func() {
		g.closePools()
		g.closeTools(true)
		s.gens.closed(g)
	}
	if !s.join(&s.wg) {
		closeIt() // Close has begun, and waits for the calls that hold g
		return
	}
	go func() {
		defer s.wg.Done()
		closeIt()
	}()
}

// config is the current configuration.
func (s *Server) config() *config.Config { return s.gens.current().cfg }

// Reread reads the configuration again for a reload, checked as at the
// start; commit, if not nil, is called once the server has taken it (to
// take its clients' tokens, say), and must not fail.
type Reread func() (cfg *config.Config, commit func(), err error)

// Reload reads the configuration again (Options.Reread) and makes it the
// current one: the next execution, search and request run under it, the
// running ones finish under theirs. A configuration that does not load,
// or that changes a setting only a restart can (restartOnly), is refused
// whole and the old one keeps serving. Each reload is counted
// (crucible_config_reloads_total) and written to the audit trail; what it
// restarted is returned: the tool servers whose settings changed, and
// those gone.
func (s *Server) Reload() (restarted, stopped []string, err error) {
	s.reloads.mu.Lock()
	defer s.reloads.mu.Unlock()
	restarted, stopped, err = s.reload()
	ev := audit.Reload{Result: "ok", Restarted: restarted, Stopped: stopped}
	if err != nil {
		ev = audit.Reload{Result: "error", Error: err.Error()}
	}
	s.reloads.count(ev.Result)
	_ = s.o.Audit.Log(ev)
	return restarted, stopped, err
}

func (s *Server) reload() (restarted, stopped []string, err error) {
	if s.o.Reread == nil {
		return nil, nil, errors.New("this server was not given its configuration's file: it cannot reload")
	}
	// Counted as a call: Close waits for it, then closes what it made.
	if s.draining.Load() || !s.join(&s.calls) {
		return nil, nil, errors.New("the server is shutting down")
	}
	defer s.calls.Done()
	cfg, commit, err := s.o.Reread()
	if err != nil {
		return nil, nil, err
	}
	if cfg.Sandbox.Workspace != "" {
		return nil, nil, errWorkspaceSet
	}
	old := s.gens.current()
	if key := restartOnly(old.cfg, cfg); key != "" {
		return nil, nil, fmt.Errorf("%s changed: only a restart of crucible serve takes that; nothing was reloaded", key)
	}
	if err := sandbox.CheckEngine(cfg); err != nil {
		return nil, nil, err
	}
	g, err := s.newGeneration(cfg, nil, nil, old)
	if err != nil {
		return nil, nil, err
	}
	s.warmUp(g)
	s.stats.relabel(g.views[""].tools.Servers(), cfg.ClientNames())
	for _, v := range g.views {
		v.tools.Commit()
	}
	s.gens.replace(g)
	// The clients' tokens last: a client added is let in only once the
	// configuration that names it serves (one removed and let in before
	// gets nothing of the new one: viewOf).
	if commit != nil {
		commit()
	}
	if s.oauth != nil {
		s.oauth.SetClients(cfg)
	}
	for _, name := range slices.Sorted(maps.Keys(old.cfg.Servers)) {
		switch _, ok := cfg.Servers[name]; {
		case !ok:
			stopped = append(stopped, name)
		case !sandbox.SameServer(old.cfg, cfg, name):
			restarted = append(restarted, name)
		}
	}
	return restarted, stopped, nil
}

// reloadHandler answers POST /reload: 200 and what was restarted, or 409
// and why the reload was refused (the operator's words: they may name the
// configuration's file).
func (s *Server) reloadHandler(w http.ResponseWriter, _ *http.Request) {
	restarted, stopped, err := s.Reload()
	if err != nil {
		http.Error(w, "reload refused, the configuration before it keeps serving: "+err.Error(), http.StatusConflict)
		return
	}
	fmt.Fprintln(w, ReloadSummary(restarted, stopped))
}

// ReloadSummary says what a reload did, in a line.
func ReloadSummary(restarted, stopped []string) string {
	out := "reloaded"
	if len(restarted) > 0 {
		out += "; tool servers restarted: " + strings.Join(restarted, ", ")
	}
	if len(stopped) > 0 {
		out += "; tool servers stopped: " + strings.Join(stopped, ", ")
	}
	return out
}

// warmUpWait bounds how long a reload waits for its pools' first jails.
const warmUpWait = 30 * time.Second

// warmUp waits until each of g's pools has a jail ready (or cannot make
// one), for warmUpWait at most: meanwhile the configuration before serves,
// and the first execution under g's finds a warm jail, as every other.
func (s *Server) warmUp(g *generation) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	deadline := time.After(warmUpWait)
	for _, p := range g.pools() {
		for p.Stats().Ready == 0 && p.Failure() == nil {
			select {
			case <-t.C:
			case <-deadline:
				return
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// restartOnly names the first setting that differs between a and b and
// that only a restart can change ("" if none): what serve set up once at
// its start (its listener's checks, its tokens' issuer, its replicas, its
// workspaces, its gate, its audit file, its warm pools' size, its skills).
// The rest of serve (its anonymous tokens, max_result_output, typecheck)
// and every other section are read again.
func restartOnly(a, b *config.Config) string {
	if !reflect.DeepEqual(a.Audit, b.Audit) {
		return "audit"
	}
	if a.Sandbox.TmpSize != b.Sandbox.TmpSize {
		return "sandbox.tmp_size" // every workspace's size
	}
	reread := map[string]bool{"token": true, "tokens": true, "max_result_output": true, "typecheck": true}
	va, vb := reflect.ValueOf(a.Serve), reflect.ValueOf(b.Serve)
	t := va.Type()
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if !reread[key] && !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return "serve." + key
		}
	}
	return ""
}

// faceKey is what an MCP server of execute and search_tools offers: the
// instructions, whether execute takes check, and the skills it lists
// (a profile may have its own).
type faceKey struct {
	instructions string
	check        bool
	skills       string
	writable     bool
}

// faceKeyOf is the face of cfg, a view's.
func faceKeyOf(cfg *config.Config) faceKey {
	return faceKey{instructions: instructionsOf(cfg), check: sandbox.CanTypeCheck(cfg, lang.TypeScript) == nil,
		skills: cfg.Serve.Skills, writable: cfg.Serve.SkillsWritable}
}

// faces are the MCP servers made, by face; each keeps its sessions.
type faces struct {
	mu  sync.Mutex
	all map[faceKey]*face
}

// face is the pair of MCP servers of one faceKey: sessionful serves stdio
// and 2025-11-25 HTTP sessions (a session's executions share its
// workspace), stateless serves 2026-07-28 requests (each execution
// without a handle gets a fresh workspace).
type face struct{ sessionful, stateless *mcp.Server }

// faceFor is the face of cfg: one made before with the same key, else a
// new one, kept.
func (s *Server) faceFor(cfg *config.Config) (*face, error) {
	k := faceKeyOf(cfg)
	s.faces.mu.Lock()
	defer s.faces.mu.Unlock()
	if f := s.faces.all[k]; f != nil {
		return f, nil
	}
	f, err := s.newFace(cfg, k)
	if err != nil {
		return nil, err
	}
	if s.faces.all == nil {
		s.faces.all = map[faceKey]*face{}
	}
	s.faces.all[k] = f
	return f, nil
}

// faceOf is the face that a new session of client gets: its view's in
// the current configuration (the whole one's for a client it does not
// know, whose calls are refused).
func (s *Server) faceOf(client string) *face {
	g := s.gens.current()
	if v := g.viewOf(client); v != nil {
		return v.face
	}
	return g.views[""].face
}

// newFace makes the MCP servers of face k, of cfg.
func (s *Server) newFace(cfg *config.Config, k faceKey) (*face, error) {
	sf, err := s.newMCP(cfg, k, false)
	if err != nil {
		return nil, err
	}
	sl, err := s.newMCP(cfg, k, true)
	if err != nil {
		return nil, err
	}
	return &face{sessionful: sf, stateless: sl}, nil
}

// sessionful are the sessionful MCP servers of every face.
func (s *Server) sessionful() []*mcp.Server {
	s.faces.mu.Lock()
	defer s.faces.mu.Unlock()
	var out []*mcp.Server
	for _, f := range s.faces.all {
		out = append(out, f.sessionful)
	}
	return out
}

// reloads count the reloads by result, for crucible_config_reloads_total.
type reloads struct {
	mu         sync.Mutex // held through a reload: one at a time
	ok, failed atomic.Int64
}

func (r *reloads) count(result string) {
	if result == "ok" {
		r.ok.Add(1)
	} else {
		r.failed.Add(1)
	}
}

// metrics registers the counter in m.
func (r *reloads) metrics(m *metrics) {
	m.counterBy("crucible_config_reloads_total", "Reloads of the configuration (SIGHUP, POST /reload), by result: ok, or error (refused whole: the old configuration kept serving).", "result", func() map[string]float64 {
		return map[string]float64{"ok": float64(r.ok.Load()), "error": float64(r.failed.Load())}
	})
}
