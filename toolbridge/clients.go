package toolbridge

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Clients are kept apart downstream: each client of Crucible (Caller.Client)
// gets its own instance of a server, its own process of a stdio server and
// its own MCP session with an HTTP one, so that what one client's calls
// leave in a stateful server (a memory, a scratch file) is not there for
// another's. A server the operator marks Shared keeps one instance for
// all. Instances start on first use, at most MaxClients of them per server
// (past it, the least recently used idle one is closed; if none is idle,
// the call is refused as a limit), and an instance idle for IdleTimeout is
// closed.
//
// The tools are listed through one instance, the lister, for everyone:
// the first client to call gets it as its own, so that one client (stdio,
// run, exec) costs one process, as before.
//
// A server that keeps its state on disk keeps it apart only if its
// instances write to different places: "{client}" in a server's args, env
// values, working directory, URL and header values stands for the client
// (ClientKey), so that MEMORY_FILE_PATH: /var/lib/mem/{client}.jsonl gives
// each client its own file. The lister of such a server is an instance of
// its own ({client} is "catalog" there), never handed to a client.

// Defaults of Server's MaxClients and IdleTimeout.
const (
	DefaultMaxClients  = 16
	DefaultIdleTimeout = 10 * time.Minute
)

// endpoint is one configured server and its instances.
type endpoint struct {
	name  string
	cfg   Server
	rules *rules                      // cfg.Policy compiled, the instances' too
	make  func(client string) *server // a new instance for client, not started
	// apart: the settings name {client}, or the server takes a login, so
	// an instance is one client's alone, the lister included.
	apart bool

	mu     sync.Mutex
	lister *server            // lists the tools; nil until needed
	owner  map[*server]string // each instance's client; "" for the lister before a client takes it
	of     map[string]*server // by client
	used   map[*server]time.Time
	busy   map[*server]int // calls in flight
	closed bool
	gone   sync.WaitGroup // dropped instances closing
}

func newEndpoint(name string, cfg Server, r *rules, make func(client string) *server) *endpoint {
	// A server with a login is apart too: each client's instance carries
	// the client's own token (and the lister the operator's).
	apart := (namesClient(cfg) || cfg.Login != nil) && !cfg.Shared
	return &endpoint{name: name, cfg: cfg, rules: r, make: make, apart: apart,
		owner: map[*server]string{}, of: map[string]*server{}, used: map[*server]time.Time{}, busy: map[*server]int{}}
}

// listing returns the instance that lists the tools, made if need be.
func (e *endpoint) listing() *server {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lister == nil {
		e.lister = e.make(catalog)
		e.owner[e.lister] = ""
		e.used[e.lister] = time.Now()
		if e.closed {
			e.lister.close()
		}
	}
	return e.lister
}

// acquire returns client's instance, made if need be, counted busy until
// release; nil and false when the server serves its most clients at once,
// none of them idle.
func (e *endpoint) acquire(client string) (*server, bool) {
	if e.cfg.Shared {
		client = ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.of[client]
	if s == nil {
		if e.lister != nil && e.owner[e.lister] == "" && !e.apart {
			s = e.lister // the first client takes the lister as its own
		} else {
			if len(e.owner) >= e.cfg.MaxClients && !e.evict() {
				return nil, false
			}
			s = e.make(client)
			if e.closed {
				s.close()
			}
		}
		e.of[client], e.owner[s] = s, client
	}
	e.used[s] = time.Now()
	e.busy[s]++
	return s, true
}

// release ends a call that acquire began.
func (e *endpoint) release(s *server) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.busy[s]--
	e.used[s] = time.Now()
}

// evict closes the least recently used idle instance, and says whether
// there was one. e.mu is held.
func (e *endpoint) evict() bool {
	var lru *server
	for s := range e.owner {
		if e.busy[s] == 0 && (lru == nil || e.used[s].Before(e.used[lru])) {
			lru = s
		}
	}
	if lru == nil {
		return false
	}
	e.drop(lru)
	return true
}

// drop forgets s and closes it (in the background: a stdio server has a
// moment to exit). e.mu is held.
func (e *endpoint) drop(s *server) {
	if c, ok := e.owner[s]; ok && e.of[c] == s {
		delete(e.of, c)
	}
	delete(e.owner, s)
	delete(e.used, s)
	delete(e.busy, s)
	if e.lister == s {
		e.lister = nil
	}
	e.gone.Go(s.close)
}

// sweep closes the instances idle since before, and returns how many are
// left.
func (e *endpoint) sweep(before time.Time) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for s, t := range e.used {
		if e.busy[s] == 0 && t.Before(before) {
			e.drop(s)
		}
	}
	return len(e.owner)
}

// instances are the endpoint's instances, for a look at their state.
func (e *endpoint) instances() []*server {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*server, 0, len(e.owner))
	for s := range e.owner {
		out = append(out, s)
	}
	return out
}

// close closes every instance and any made later, and waits for them.
func (e *endpoint) close() {
	e.mu.Lock()
	e.closed = true
	all := make([]*server, 0, len(e.owner))
	for s := range e.owner {
		all = append(all, s)
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(s.close)
	}
	wg.Wait()
	e.gone.Wait()
}

// clientToken stands for the client in a server's settings.
const clientToken = "{client}"

// catalog is what {client} stands for in the lister of a server whose
// instances are kept apart.
const catalog = "catalog"

// ClientKey is a client's name as it may name a file, a URL's path or a
// header's value: what {client} writes in a server's settings, and the
// name of the client's directory of saved skills. No two clients share a
// key, whatever their names (OAuth subjects are anyone's choosing): each
// form has a prefix of its own, and a name that could not stand in it as
// it is is hashed whole.
//
//	""                 local (crucible run, exec)
//	stdio, catalog     themselves (config reserves them, and local)
//	token:HEX          token-HEX (an anonymous token)
//	NAME               client-NAME, if plain
//	anything else      id- and the hex of its SHA-256
//
// Saved skills are kept under these names: a change moves every client's.
func ClientKey(client string) string {
	switch hex, isToken := strings.CutPrefix(client, "token:"); {
	case client == "":
		return "local"
	case client == "stdio" || client == catalog:
		return client
	case isToken && plain(hex):
		return "token-" + hex
	case plain(client):
		return "client-" + client
	}
	return fmt.Sprintf("id-%x", sha256.Sum256([]byte(client)))
}

// plain says whether name may stand in a key as it is: 1 to 64 letters,
// digits, '_', '.' and '-', the first neither '.' nor '-' (no "..", no
// option).
func plain(name string) bool {
	if name == "" || len(name) > 64 || name[0] == '.' || name[0] == '-' {
		return false
	}
	for i := range len(name) {
		if !keyByte(name[i]) {
			return false
		}
	}
	return true
}

// keyByte says whether c may stand in a key.
func keyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// namesClient says whether cfg's settings name {client}.
func namesClient(cfg Server) bool {
	found := false
	forClient(&cfg, func(s string) string {
		found = found || strings.Contains(s, clientToken)
		return s
	})
	return found
}

// perClient is cfg with {client} written as key (a copy: its maps and
// slices are new).
func perClient(cfg Server, key string) Server {
	forClient(&cfg, func(s string) string { return strings.ReplaceAll(s, clientToken, key) })
	return cfg
}

// forClient applies f to each setting that may name {client}, in place of
// a copy of its maps and slices.
func forClient(cfg *Server, f func(string) string) {
	cfg.Args = slices.Clone(cfg.Args)
	for i, a := range cfg.Args {
		cfg.Args[i] = f(a)
	}
	cfg.Env = maps.Clone(cfg.Env)
	for k, v := range cfg.Env {
		cfg.Env[k] = f(v)
	}
	cfg.Headers = maps.Clone(cfg.Headers)
	for k, v := range cfg.Headers {
		cfg.Headers[k] = f(v)
	}
	cfg.Dir, cfg.URL = f(cfg.Dir), f(cfg.URL)
}
