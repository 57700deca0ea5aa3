package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/netutil"

	"github.com/cruciblehq/crucible/internal/randomid"
	"github.com/cruciblehq/crucible/mcpserver/auth"
	"github.com/cruciblehq/crucible/replica"
)

// Two eras of MCP over HTTP live at one endpoint. A 2025-11-25 client (or
// older) starts with initialize and holds a session (Mcp-Session-Id); the
// SDK serves it statefully, a session's executions sharing its workspace.
// A 2026-07-28 client is stateless: every request says its version in the
// MCP-Protocol-Version header and carries no session id; the SDK serves
// that version only in stateless mode, so such requests go to a stateless
// handler of their own, where the workspace handle is the only state.
const statelessVersion = "2026-07-28"

// requestHeader carries, from our middleware to the tool handler, the id
// of the HTTP request that carries a call, so that a call whose request is
// gone (the client hung up) stops its execution. Whatever a client sends
// in it is overwritten.
const requestHeader = "X-Crucible-Request"

// originHeader carries, likewise, serve's own origin as the client reaches
// it (its Host checked): where a client's browser logs in to a remote
// server (/oauth/start).
const originHeader = "X-Crucible-Origin"

// Handler is the HTTP face of the server: MCP at /mcp (one of tokens, or
// an access token of serve.oauth's issuer, required; Origin checked), and
// /healthz, /readyz and /metrics.
func (s *Server) Handler(tokens *auth.Tokens) http.Handler {
	maxBody := int64(s.config().Serve.MaxBody)
	// Each call takes the caller's view of the configuration current then.
	sessionful := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return s.faceOf(requestClient(r)).sessionful }, &mcp.StreamableHTTPOptions{
		Logger:              s.log,
		SessionTimeout:      time.Duration(s.config().Serve.WorkspaceTTL),
		MaxRequestBodyBytes: maxBody,
	})
	stateless := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return s.faceOf(requestClient(r)).stateless }, &mcp.StreamableHTTPOptions{
		Logger:                       s.log,
		Stateless:                    true,
		MaxRequestBodyBytes:          maxBody,
		PropagateRequestCancellation: true,
	})
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		if s.replicas != nil && r.Header.Get(replica.Hop) == "" && s.forwarded(w, r) {
			return
		}
		id, forget := s.requests.add(r.Context())
		defer forget()
		r.Header.Set(requestHeader, id)
		r.Header.Set(originHeader, s.origin(r))
		sid := r.Header.Get("Mcp-Session-Id")
		if ti := sdkauth.TokenInfoFromContext(r.Context()); r.Method == http.MethodDelete && sid != "" && ti != nil {
			// The SDK's Close of the session waits for its calls: stop
			// their executions first (only the session's own client may).
			s.sessions.end(sid, ti.UserID)
		}
		if sid == "" && r.Header.Get("MCP-Protocol-Version") >= statelessVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		if sid == "" && r.Method == http.MethodPost {
			// An initialize: a new session, which the client's rate and
			// its bound on sessions must allow.
			s.openSession(w, r, sessionful)
			return
		}
		if sid != "" && r.Method == http.MethodPost {
			// Busy while served, so that it is not the session ended
			// for a new one; one being ended gets the 404 it will.
			done, ok := s.sessions.use(requestClient(r), sid)
			if !ok {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			defer done()
		}
		sessionful.ServeHTTP(w, r)
	})
	requireToken := s.requireBearer(tokens)
	mcpHandler := s.checkOrigin(requireToken(route))
	mux := s.ops(requireToken)
	mux.Handle("/mcp", mcpHandler)
	console := s.consoleHandler(tokens)
	mux.Handle("/console", console)
	mux.Handle("/console/events", console)
	if s.web != nil {
		// A browser's, with no token: the login's id, and then its state,
		// are what let it in (serverlogin.Web).
		mux.HandleFunc("GET /oauth/start", s.web.Start)
		mux.HandleFunc("GET /oauth/callback", s.web.Callback)
	}
	if s.config().Serve.OAuth.Enabled() {
		// RFC 9728: at the root, and in the path form for the resource.
		mux.Handle("/.well-known/oauth-protected-resource", s.resourceMetadata())
		if u := metadataURL(s.config().Serve.OAuth.Audience); u != "" {
			if p, err := url.Parse(u); err == nil && p.Path != "/.well-known/oauth-protected-resource" {
				mux.Handle(p.Path, s.resourceMetadata())
			}
		}
	}
	return s.checkHost(mux)
}

// requireBearer is the middleware that lets through only a request with one of
// known, or with an access token of serve.oauth's issuer that holds its
// scopes and is a client's; its client in the request's TokenInfo (the SDK's).
func (s *Server) requireBearer(known *auth.Tokens) func(http.Handler) http.Handler {
	verify := func(ctx context.Context, token string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		if id, ok := known.Client(token); ok {
			return &sdkauth.TokenInfo{UserID: id}, nil
		}
		if s.oauth == nil {
			return nil, sdkauth.ErrInvalidToken
		}
		id, exp, err := s.oauth.Verify(ctx, token)
		if errors.Is(err, auth.ErrInvalidToken) {
			return nil, err // the SDK's 401
		}
		// A holder who may not go on is answered after the SDK's check of
		// the expiry: forbidden's 403.
		return &sdkauth.TokenInfo{UserID: id, Expiration: exp, Extra: map[string]any{"forbidden": err}}, nil
	}
	require := sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: auth.Skew})
	return func(next http.Handler) http.Handler {
		authed := require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if why, code := forbidden(sdkauth.TokenInfoFromContext(r.Context())); why != "" {
				w.Header().Set("WWW-Authenticate", s.challenge(r, code))
				http.Error(w, "Forbidden: "+why, http.StatusForbidden)
				return
			}
			w.Header().Del("WWW-Authenticate") // let through: no challenge
			next.ServeHTTP(w, r)
		}))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The SDK's middleware challenges only once OAuth metadata
			// is configured: set ours now, for its 401 and our 403; a
			// request let through loses it.
			w.Header().Set("WWW-Authenticate", s.challenge(r, ""))
			authed.ServeHTTP(w, r)
		})
	}
}

// forbidden says why a holder of a valid access token may not go on, and
// the challenge's error code, or "": a token that lacks serve.oauth's
// scopes (insufficient_scope), or whose claims are no client's.
func forbidden(ti *sdkauth.TokenInfo) (why, code string) {
	if ti == nil {
		return "", ""
	}
	err, _ := ti.Extra["forbidden"].(error)
	switch {
	case errors.Is(err, auth.ErrInsufficientScope):
		return err.Error(), "insufficient_scope"
	case err != nil:
		return err.Error(), ""
	}
	return "", ""
}

// ServeHTTP serves h (Handler or OpsHandler) on l until shutdown, with
// the bounds of serveLimits: a peer that need not even know a token cannot
// hold connections, and so file descriptors, which jails need too.
func ServeHTTP(l net.Listener, h http.Handler) (shutdown func(context.Context) error) {
	return serveBounded(l, h, serveLimits)
}

// httpLimits bound the connections of an HTTP server.
type httpLimits struct {
	conns  int           // open at once; more wait in the listen backlog
	header time.Duration // to read a request's head
	read   time.Duration // to read a request, head and body
	idle   time.Duration // a keep-alive connection between requests
}

// serveLimits: a whole request must arrive within read (so a body of the
// largest serve.max_body, 256MiB, needs ~4.5 MB/s; the default 4MiB, 70
// KB/s); 256 connections serve a hundred clients, each with a POST and a
// GET stream.
var serveLimits = httpLimits{conns: 256, header: 10 * time.Second, read: time.Minute, idle: time.Minute}

// serveBounded serves h on l with lim. ReadTimeout bounds a request's head
// and body only: net/http clears the read deadline once the body is read
// (to notice a client that hangs up). There is no WriteTimeout: in
// Streamable HTTP an answer is an SSE stream that lasts as long as its
// execution (up to sandbox.timeout), and a session's GET stream as long as
// the session; a WriteTimeout would cut both off. A client that stops
// reading holds its connection, within the cap.
func serveBounded(l net.Listener, h http.Handler, lim httpLimits) (shutdown func(context.Context) error) {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.header,
		ReadTimeout:       lim.read,
		IdleTimeout:       lim.idle,
		MaxHeaderBytes:    64 << 10,
	}
	go func() { _ = hs.Serve(netutil.LimitListener(l, lim.conns)) }()
	return hs.Shutdown
}

// challenge is the WWW-Authenticate header of a 401 or 403 from /mcp
// (RFC 6750 §3): code is a 403's error code ("" for none), a 401's is
// invalid_token when a token was presented. With OAuth, resource_metadata
// (RFC 9728 §5.1) joins the params, and the scopes needed.
func (s *Server) challenge(r *http.Request, code string) string {
	params := []string{`realm="crucible"`}
	o := s.config().Serve.OAuth
	if o.Enabled() {
		params = append(params, fmt.Sprintf("resource_metadata=%q", metadataURL(o.Audience)))
	}
	// A bearer token presented (split as the SDK splits it) and not taken
	// is invalid; a request without one gets no error code (RFC 6750
	// §3.1).
	if f := strings.Fields(r.Header.Get("Authorization")); code == "" && len(f) == 2 && strings.EqualFold(f[0], "Bearer") {
		code = "invalid_token"
	}
	if code != "" {
		params = append(params, fmt.Sprintf("error=%q", code))
		if o.Enabled() && len(o.Scopes) > 0 {
			params = append(params, fmt.Sprintf("scope=%q", strings.Join(o.Scopes, " ")))
		}
	}
	return "Bearer " + strings.Join(params, ", ")
}

// OpsHandler serves /healthz, /readyz and /metrics only (beside stdio):
// the last two to a client with one of tokens, unless serve.ops_public.
func (s *Server) OpsHandler(tokens *auth.Tokens) http.Handler {
	return s.checkHost(s.ops(s.requireBearer(tokens)))
}

// ops serves /healthz to anyone, /readyz and /metrics through
// requireToken unless serve.ops_public: they tell what the server runs
// and how busy it is.
func (s *Server) ops(requireToken func(http.Handler) http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	guard := func(h http.Handler) http.Handler {
		if s.config().Serve.OpsPublic {
			return h
		}
		return requireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Del("WWW-Authenticate")
			h.ServeHTTP(w, r)
		}))
	}
	mux.Handle("GET /readyz", guard(http.HandlerFunc(s.ready)))
	mux.Handle("GET /metrics", guard(s.stats.handler()))
	// Always behind a token, even with ops_public: it makes the server
	// do work. (A browser cannot send one unasked.)
	mux.Handle("POST /reload", requireToken(http.HandlerFunc(s.reloadHandler)))
	return mux
}

// checkHost refuses a request whose Host the server is not reached by:
// one of serve.allowed_hosts when they are set; on a loopback listener, a
// loopback name (a page on a name that resolves to 127.0.0.1, DNS
// rebinding, must not reach a local server).
func (s *Server) checkHost(next http.Handler) http.Handler {
	allowed := s.config().Serve.AllowedHosts
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := true
		if len(allowed) > 0 {
			ok = hostAllowed(r.Host, allowed)
		} else if a, isAddr := r.Context().Value(http.LocalAddrContextKey).(net.Addr); isAddr && a != nil && Loopback(a.String()) {
			ok = Loopback(withPort(r.Host))
		}
		if !ok {
			http.Error(w, "Forbidden: the server is not reached by this Host (serve.allowed_hosts)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether host (a Host header) is one of allowed,
// where one without a port allows every port.
func hostAllowed(host string, allowed []string) bool {
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		name = host
	}
	for _, a := range allowed {
		if strings.EqualFold(a, host) || strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// withPort is a Host header as host:port, for Loopback.
func withPort(host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "0")
}

// ready answers 200 when the warm pools have jails ready (or have served
// executions) and no MCP server's last start failed.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		http.Error(w, "not ready: draining (shutting down once the executions running end)", http.StatusServiceUnavailable)
		return
	}
	g := s.gens.current()
	for _, p := range g.pools() {
		if st := p.Stats(); st.Ready > 0 || st.Warm+st.Cold > 0 {
			continue
		}
		if se := p.Failure(); se != nil {
			// Operators only: a host path may be in the detail.
			http.Error(w, "not ready: the sandbox cannot be set up: "+se.Error(), http.StatusServiceUnavailable)
			return
		}
		if g.seq == 1 {
			// At the start the pools fill first; a reload waited for
			// them (Server.warmUp), or gave up waiting.
			http.Error(w, "not ready: the warm pool of "+strings.Join(p.Languages(), " and ")+" programs is filling", http.StatusServiceUnavailable)
			return
		}
	}
	// What the bridge knows, starting nothing: a probe must not start
	// servers (for whom? at whose cost?).
	for _, v := range g.views {
		if failing := v.tools.Failing(); len(failing) > 0 {
			http.Error(w, "not ready: servers failing to start: "+strings.Join(failing, ", "), http.StatusServiceUnavailable)
			return
		}
	}
	fmt.Fprintln(w, "ready")
}

// checkOrigin refuses a request from a browser page of another origin: the
// SDK's own guard checks only Host (DNS rebinding), and a page may post to
// a local server.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	allowed := s.config().Serve.AllowedOrigins
	if len(allowed) == 0 {
		allowed = []string{"http://localhost", "http://127.0.0.1", "http://[::1]"}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, allowed) {
			http.Error(w, "Forbidden: this origin may not use the server (serve.allowed_origins)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed reports whether origin is one of allowed, where an allowed
// origin without a port allows every port of its host.
func originAllowed(origin string, allowed []string) bool {
	o, err := url.Parse(origin)
	if err != nil || o.Host == "" || o.Path != "" || o.User != nil {
		return false
	}
	for _, a := range allowed {
		u, err := url.Parse(a)
		if err != nil || !strings.EqualFold(u.Scheme, o.Scheme) {
			continue
		}
		if strings.EqualFold(u.Host, o.Host) || (u.Port() == "" && strings.EqualFold(u.Hostname(), o.Hostname())) {
			return true
		}
	}
	return false
}

// Loopback reports whether addr (host:port) listens on loopback only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// requests maps the ids our middleware gives HTTP requests to their
// contexts, done when the request is.
type requests struct {
	mu sync.Mutex
	m  map[string]context.Context
}

func (q *requests) add(ctx context.Context) (id string, forget func()) {
	id = randomid.New("", 12)
	q.mu.Lock()
	if q.m == nil {
		q.m = map[string]context.Context{}
	}
	q.m[id] = ctx
	q.mu.Unlock()
	return id, func() {
		q.mu.Lock()
		delete(q.m, id)
		q.mu.Unlock()
	}
}

func (q *requests) context(id string) context.Context {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.m[id]
}

// openSession serves an initialize (a sessionful POST without a session
// id) if client may open one more session, whose state s.sessions holds
// until it ends. Past serve.max_sessions_per_client it first ends the
// client's least recently used idle session: a client that exits without
// DELETE (or crashes) leaves its sessions behind, which would otherwise
// lock it out until they idle out.
func (s *Server) openSession(w http.ResponseWriter, r *http.Request, h http.Handler) {
	client := requestClient(r)
	if err := s.rate.allow(client); err != nil {
		http.Error(w, "Too Many Requests: "+err.Error(), http.StatusTooManyRequests)
		return
	}
	most := s.config().Serve.MaxSessionsPerClient
	idle, ok := s.sessions.admit(client, most)
	if !ok {
		http.Error(w, fmt.Sprintf("Too Many Requests: this client holds %d sessions, the most it may (serve.max_sessions_per_client), and each has a request in flight: retry once one is answered, or end one (DELETE /mcp)", most), http.StatusTooManyRequests)
		return
	}
	if idle != nil {
		// Ended as a DELETE ends it: its executions stopped, then the
		// SDK's Close (its next request gets 404), whose end the
		// session's entry sees, as it sees an idle timeout.
		s.log.Info("ended a client's least recently used idle session to open another (serve.max_sessions_per_client)", "client", client, "session", idle.id)
		idle.cancel()
		_ = idle.ss.Close()
	}
	// The session is recorded as the answer's head is written, before
	// the client learns its id: no request of it, nor the initialize of
	// the client's next session, can come before the registry knows it
	// (the least recently used order would flip otherwise).
	var once sync.Once
	record := func() {
		once.Do(func() {
			var made *session
			if id := w.Header().Get("Mcp-Session-Id"); id != "" {
				made = s.trackID(id, client)
			}
			s.sessions.opened(client, made)
		})
	}
	h.ServeHTTP(&headWriter{ResponseWriter: w, head: record}, r)
	record() // an answer with no head of its own
}

// headWriter calls head before the first byte of the answer is written.
type headWriter struct {
	http.ResponseWriter
	head func()
}

func (w *headWriter) WriteHeader(code int) {
	w.head()
	w.ResponseWriter.WriteHeader(code)
}

func (w *headWriter) Write(b []byte) (int, error) {
	w.head()
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer beneath, to flush.
func (w *headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestClient is the client of an HTTP request that passed the bearer
// check: its token's; "" before it.
func requestClient(r *http.Request) string {
	if ti := sdkauth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// origin is serve's origin as r reached it: serve.oauth.audience's where
// it has one (serve's public URL), else r's scheme and Host (which
// checkHost allowed).
func (s *Server) origin(r *http.Request) string {
	if u, err := url.Parse(s.config().Serve.OAuth.Audience); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
