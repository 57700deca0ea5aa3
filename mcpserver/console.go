package mcpserver

import (
	"cmp"
	"crypto/rand"
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/mcpserver/auth"
	"github.com/cruciblehq/crucible/toolbridge"
)

// The console (/console on serve --http): the executions running and the
// last consoleRows that ended, updating live over server-sent events, the
// pools, and the downstream servers. It takes the tokens /metrics takes
// (none with serve.ops_public): as Authorization: Bearer, or typed into
// its form, which sets a cookie of a console session (never the token)
// scoped to /console. One page from the binary, no CDN; no secret value
// in it: secrets by name, violations with their reasons, as the model
// gets them.

//go:embed console/index.html console/login.html
var consolePages embed.FS

const (
	consoleRows     = 200             // the executions kept, running or ended
	consoleSessions = 64              // console logins at once
	consoleTTL      = 12 * time.Hour  // a console login's life
	consoleStatus   = 2 * time.Second // how often the pools' state is sent
	consoleCookie   = "crucible_console"
)

// consoleRow is one execution as the console shows it.
type consoleRow struct {
	ID         int64              `json:"id"`
	Started    time.Time          `json:"started"`
	Client     string             `json:"client"`
	Profile    string             `json:"profile,omitempty"`
	Language   string             `json:"language"`
	Jail       string             `json:"jail,omitempty"` // warm, cold (a pool's, still starting), new (made for it)
	Outcome    string             `json:"outcome"`        // running, ok, failed, refused
	Error      string             `json:"error,omitempty"`
	ExitCode   int                `json:"exit_code"`
	DurationMS int64              `json:"duration_ms,omitempty"`
	LimitsHit  []string           `json:"limits_hit,omitempty"`
	Violations []consoleViolation `json:"violations,omitempty"`
	ToolCalls  int                `json:"tool_calls"`
	Secrets    []string           `json:"secrets,omitempty"` // by name
}

type consoleViolation struct {
	Kind   string `json:"kind"`
	Host   string `json:"host,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// console keeps the rows and the streams that watch them.
type console struct {
	mu       sync.Mutex
	seq      int64
	rows     []*consoleRow // the newest last
	subs     map[chan []byte]struct{}
	sessions map[string]time.Time // console logins, by cookie, until when
}

func newConsole() *console {
	return &console{subs: map[chan []byte]struct{}{}, sessions: map[string]time.Time{}}
}

// begin shows an execution starting, and returns its row.
func (c *console) begin(client, profile, language string) *consoleRow {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	r := &consoleRow{ID: c.seq, Started: time.Now(), Client: client, Profile: profile, Language: language, Outcome: "running"}
	c.rows = append(c.rows, r)
	if len(c.rows) > consoleRows {
		c.rows = slices.Delete(c.rows, 0, len(c.rows)-consoleRows)
	}
	c.publish(r)
	return r
}

// end shows what the execution of row came to.
func (c *console) end(row *consoleRow, out *executeOut, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	row.DurationMS = time.Since(row.Started).Milliseconds()
	switch {
	case err != nil:
		row.Outcome, row.Error = "refused", truncate(err.Error(), 300)
	default:
		row.Outcome, row.ExitCode, row.DurationMS, row.LimitsHit, row.ToolCalls = "ok", out.ExitCode, out.DurationMS, out.LimitsHit, len(out.ToolCalls)
		row.Jail = cmp.Or(out.jail, "new")
		if out.ExitCode != 0 || out.Error != nil {
			row.Outcome = "failed"
		}
		for _, v := range out.Violations {
			row.Violations = append(row.Violations, consoleViolation{Kind: v.Kind, Host: v.Host, Reason: truncate(v.Reason, 200)})
		}
		for _, s := range out.Secrets {
			if !slices.Contains(row.Secrets, s.Name) {
				row.Secrets = append(row.Secrets, s.Name)
			}
		}
	}
	c.publish(row)
}

// publish sends row to every stream; c.mu is held. A stream that cannot
// keep up is closed (its page reconnects, and gets the rows anew).
func (c *console) publish(row *consoleRow) {
	if len(c.subs) == 0 {
		return // nobody watches: no event to make
	}
	ev := sse("execution", row)
	for ch := range c.subs {
		select {
		case ch <- ev:
		default:
			delete(c.subs, ch)
			close(ch)
		}
	}
}

// watch is a new stream: the rows so far, and a channel of those to come.
func (c *console) watch() (past [][]byte, next chan []byte, stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.rows {
		past = append(past, sse("execution", r))
	}
	next = make(chan []byte, 256)
	c.subs[next] = struct{}{}
	return past, next, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.subs[next]; ok {
			delete(c.subs, next)
			close(next)
		}
	}
}

// login makes a console session, and returns its cookie's value; "" when
// there are as many as may be.
func (c *console) login() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for id, until := range c.sessions {
		if now.After(until) {
			delete(c.sessions, id)
		}
	}
	if len(c.sessions) >= consoleSessions {
		return ""
	}
	id := rand.Text()
	c.sessions[id] = now.Add(consoleTTL)
	return id
}

func (c *console) loggedIn(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.sessions[id]
	return ok && time.Now().Before(until)
}

// sse is one server-sent event.
func sse(event string, v any) []byte {
	b, _ := json.Marshal(v)
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", event, b)
}

// consoleStatusOf is the pools' and the downstream servers' state, the
// configuration's generation and reloads, and the replicas forwarded to.
func (s *Server) consoleStatusOf() map[string]any {
	type pool struct {
		Languages []string `json:"languages"`
		Profile   string   `json:"profile,omitempty"`
		Ready     int      `json:"ready"`
		InFlight  int      `json:"in_flight"`
		Warm      int64    `json:"warm"`
		Cold      int64    `json:"cold"`
		Failed    int64    `json:"failed"`
	}
	var pools []pool
	var servers []toolbridge.ServerStatus
	g := s.gens.current()
	for _, name := range append([]string{""}, g.cfg.ProfileNames()...) {
		v := g.views[name]
		if v == nil {
			continue
		}
		for _, p := range v.pools {
			st := p.Stats()
			pools = append(pools, pool{Languages: p.Languages(), Profile: name, Ready: st.Ready, InFlight: st.InFlight, Warm: st.Warm, Cold: st.Cold, Failed: st.Failed})
		}
		if name == "" {
			servers = v.tools.Status()
		}
	}
	out := map[string]any{"pools": pools, "servers": servers,
		"config": map[string]int64{"generation": int64(g.seq), "reloads_ok": s.reloads.ok.Load(), "reloads_refused": s.reloads.failed.Load()}}
	if s.replicas != nil {
		out["replica"], out["replicas"] = s.replicas.Self(), s.forwardsTo.list()
	}
	return out
}

// consoleHandler serves /console and /console/events.
func (s *Server) consoleHandler(tokens *auth.Tokens) http.Handler {
	allowed := func(r *http.Request) bool {
		if s.config().Serve.OpsPublic {
			return true
		}
		if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			if _, known := tokens.Client(t); known {
				return true
			}
		}
		c, err := r.Cookie(consoleCookie)
		return err == nil && s.console.loggedIn(c.Value)
	}
	page := func(w http.ResponseWriter, name string, code int) {
		b, _ := consolePages.ReadFile("console/" + name)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'")
		w.WriteHeader(code)
		_, _ = w.Write(b)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		if !allowed(r) {
			page(w, "login.html", http.StatusUnauthorized)
			return
		}
		page(w, "index.html", http.StatusOK)
	})
	mux.HandleFunc("POST /console", func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if _, known := tokens.Client(r.PostFormValue("token")); !known {
			page(w, "login.html", http.StatusUnauthorized)
			return
		}
		id := s.console.login()
		if id == "" {
			http.Error(w, "too many console logins at once; try again later", http.StatusTooManyRequests)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: id, Path: "/console", MaxAge: int(consoleTTL.Seconds()),
			HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/console", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /console/events", func(w http.ResponseWriter, r *http.Request) {
		if !allowed(r) {
			http.Error(w, "Unauthorized: the console takes an operator's token", http.StatusUnauthorized)
			return
		}
		s.consoleEvents(w, r)
	})
	return mux
}

// consoleEvents streams the rows and, every consoleStatus, the pools'
// and servers' state, until the page goes or the server closes.
func (s *Server) consoleEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	past, next, stop := s.console.watch()
	defer stop()
	write := func(b []byte) bool {
		_, err := w.Write(b)
		return err == nil
	}
	for _, ev := range past {
		if !write(ev) {
			return
		}
	}
	if !write(sse("status", s.consoleStatusOf())) {
		return
	}
	flusher.Flush()
	tick := time.NewTicker(consoleStatus)
	defer tick.Stop()
	for {
		select {
		case ev, open := <-next:
			if !open || !write(ev) {
				return
			}
		case <-tick.C:
			if !write(sse("status", s.consoleStatusOf())) {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
		flusher.Flush()
	}
}
