package toolbridge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cruciblehq/crucible/tracing"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cruciblehq/crucible/secrets"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// startTimeout bounds one attempt to start a server and initialize its
	// session, whoever waits for it.
	startTimeout = 60 * time.Second
	// maxBackoff is the longest a failing server is left alone.
	maxBackoff = 30 * time.Second
	// stopGrace is how long a stdio server has to exit once its stdin is
	// closed, before it is signalled.
	stopGrace = 2 * time.Second
)

// firstBackoff is the wait after the second failure in a row; a variable
// so that a test can make it long enough to observe without a race
// against the clock. Each server reads it once, when it is made.
var firstBackoff = 500 * time.Millisecond

// backoff is how long to wait before the next start after n failures in a
// row: none after the first (a crash restarts at once), then doubling from
// first, up to maxBackoff.
func backoff(n int, first time.Duration) time.Duration {
	if n <= 1 {
		return 0
	}
	return min(first<<min(n-2, 10), maxBackoff)
}

// server is one downstream server and its current session, if any.
type server struct {
	name  string
	cfg   Server
	rules *rules // cfg.Policy, compiled
	// maxMessage bounds each message of a stdio server (messageBound).
	maxMessage int
	log        *slog.Logger
	redact     *redaction
	// authz is the instance's OAuth handler, made on first use; nil
	// without cfg.Login.
	authz  func() (Authorizer, error)
	client *mcp.Client
	// life ends when the bridge closes: it stops a start in progress.
	life context.Context
	end  context.CancelFunc

	mu       sync.Mutex
	sess     *mcp.ClientSession
	listed   []Tool        // of sess, once listed
	starting chan struct{} // closed when the current start ends; nil when none
	failures int           // in a row
	retryAt  time.Time
	backoff  time.Duration // the first; see firstBackoff
	lastErr  error         // of the last failure, redacted
	closed   bool
	askers   []*asking // the calls in flight whose human may be asked
}

func newServer(name, key string, cfg Server, r *rules, maxMessage int, home string, log *slog.Logger) *server {
	s := &server{name: name, cfg: cfg, rules: r, maxMessage: maxMessage, log: log, backoff: firstBackoff}
	s.life, s.end = context.WithCancel(context.Background())
	s.redact = redactor(cfg, home)
	if cfg.Login != nil {
		s.authz = sync.OnceValues(func() (Authorizer, error) { return cfg.Login(key) })
		s.redact.tokens = func() []string {
			if a, err := s.authz(); err == nil {
				return a.Secrets()
			}
			return nil
		}
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "crucible", Version: "1"},
		&mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
				Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: s.elicit,
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				s.mu.Lock()
				s.listed = nil
				s.mu.Unlock()
			}})
	return s
}

// elicitorKey carries a call's Elicitor in its context.
type elicitorKey struct{}

// elicit puts a server's elicitation to the human of the call it came
// with: the call's own where the SDK gives its context (an input request
// of a 2026-07-28 server), else the latest call's in flight on this
// instance, whose client is the same. With no one to ask, it is cancelled.
func (s *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	ask, _ := ctx.Value(elicitorKey{}).(Elicitor)
	if ask == nil {
		s.mu.Lock()
		if n := len(s.askers); n > 0 {
			ask = s.askers[n-1].ask
		}
		s.mu.Unlock()
	}
	if ask == nil || req.Params == nil {
		return &mcp.ElicitResult{Action: Cancel}, nil
	}
	p := *req.Params
	p.Message = fmt.Sprintf("Tool server %s asks: %s", s.name, s.redact.Replace(p.Message))
	return ask(ctx, s.name, &p)
}

// asking is a call in flight whose human may be asked.
type asking struct{ ask Elicitor }

// withAsker registers ask, the human of a call, while the call lasts.
func (s *server) withAsker(ctx context.Context, ask Elicitor) (context.Context, func()) {
	if ask == nil {
		return ctx, func() {}
	}
	a := &asking{ask}
	s.mu.Lock()
	s.askers = append(s.askers, a)
	s.mu.Unlock()
	return context.WithValue(ctx, elicitorKey{}, ask), func() {
		s.mu.Lock()
		s.askers = slices.DeleteFunc(s.askers, func(x *asking) bool { return x == a })
		s.mu.Unlock()
	}
}

// redactor is what must not reach the code: the server's credentials (its
// environment's and headers' values, what its URL holds of a key), its
// command's path, its working directory and the host's home directory.
func redactor(cfg Server, home string) *redaction {
	r := &redaction{verbatim: replacer(secretPairs(cfg)), paths: replacer(pathPairs(cfg, home))}
	// Every other form of a credential (percent, hex, base64 at any
	// alignment, JSON escapes) becomes a random token in that form:
	// secrets' matchers know them, as the egress proxy's reverse swap does.
	values := map[string][]byte{}
	for i, v := range credentials(cfg) {
		if len(v) >= secrets.MinLen && len(v) <= secrets.MaxLen {
			values[strconv.Itoa(i)] = []byte(v)
		}
	}
	if len(values) > 0 {
		// Only a clash of placeholders, drawn at random, could fail it:
		// then the verbatim pass alone stands.
		r.forms, _ = secrets.New(values)
	}
	return r
}

// redaction redacts a server's messages: for the code, its credentials and
// the host's paths; for the operator's log, its credentials alone.
type redaction struct {
	verbatim *strings.Replacer // credentials as written, and a URL with a key
	forms    *secrets.Set      // credentials in every other form; nil for none
	paths    *strings.Replacer
	// tokens, if not nil, are credentials that change (an OAuth login's
	// tokens): redacted as the others, their forms made anew as they do.
	tokens func() []string
	mu     sync.Mutex
	seen   string       // the tokens of tokenForms, joined
	tforms *secrets.Set // their forms
}

// Replace redacts s for the code.
func (r *redaction) Replace(s string) string { return r.paths.Replace(r.credentials(s)) }

// ForLog redacts s for the operator's log, which may name the host's paths.
func (r *redaction) ForLog(s string) string { return r.credentials(s) }

func (r *redaction) credentials(s string) string {
	s = r.verbatim.Replace(s) // first: "[redacted]" reads better than a token
	if r.forms != nil {
		s = r.forms.RedactString(s)
	}
	if r.tokens != nil {
		s = r.tokenForms(s)
	}
	return s
}

// tokenForms redacts the current tokens from s.
func (r *redaction) tokenForms(s string) string {
	var vs []string
	for _, v := range r.tokens() {
		if len(v) >= minRedacted && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	// The longest first, so that one holding another goes whole; then in
	// order, so that the forms' key does not change with the order given.
	slices.SortFunc(vs, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	for _, v := range vs {
		s = strings.ReplaceAll(s, v, "[redacted]")
		s = strings.ReplaceAll(s, url.QueryEscape(v), "[redacted]")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if key := strings.Join(vs, "\x00"); key != r.seen {
		values := map[string][]byte{}
		for i, v := range vs {
			if len(v) >= secrets.MinLen && len(v) <= secrets.MaxLen {
				values[strconv.Itoa(i)] = []byte(v)
			}
		}
		r.seen, r.tforms = key, nil
		if len(values) > 0 {
			r.tforms, _ = secrets.New(values)
		}
	}
	if r.tforms != nil {
		s = r.tforms.RedactString(s)
	}
	return s
}

type pair struct{ old, new string }

// replacer replaces each pair's old by its new, the longest first (a path
// inside the home is replaced whole).
func replacer(ps []pair) *strings.Replacer {
	sort.SliceStable(ps, func(i, j int) bool { return len(ps[i].old) > len(ps[j].old) })
	var args []string
	for _, p := range ps {
		args = append(args, p.old, p.new)
	}
	return strings.NewReplacer(args...)
}

// minRedacted is the shortest value redacted: a shorter one would mangle
// more than it hides.
const minRedacted = 6

// credentials are the server's credentials: its env and headers' values,
// and its URL's password and query values.
func credentials(cfg Server) []string {
	var vs []string
	for _, v := range cfg.Env {
		vs = append(vs, v)
	}
	for _, v := range cfg.Headers {
		vs = append(vs, v)
	}
	if u, err := url.Parse(cfg.URL); err == nil {
		if p, ok := u.User.Password(); ok {
			vs = append(vs, p)
		}
		for _, q := range u.Query() {
			vs = append(vs, q...)
		}
	}
	slices.Sort(vs) // maps' order is random; the placeholders' names need not be
	return slices.DeleteFunc(slices.Compact(vs), func(v string) bool { return len(v) < minRedacted })
}

// secretPairs replace the server's credentials as written; the URL as
// written (which errors quote) becomes its origin and path when it holds
// a key.
func secretPairs(cfg Server) []pair {
	var ps []pair
	for _, v := range credentials(cfg) {
		ps = append(ps, pair{v, "[redacted]"}, pair{url.QueryEscape(v), "[redacted]"})
	}
	if u, err := url.Parse(cfg.URL); err == nil && (u.RawQuery != "" || u.User != nil) {
		ps = append(ps, pair{cfg.URL, u.Scheme + "://" + u.Host + u.Path})
	}
	return ps
}

// pathPairs are the host's paths that the server's messages may name.
func pathPairs(cfg Server, home string) []pair {
	var ps []pair
	if cfg.Command != "" {
		base := cfg.Command[strings.LastIndexByte(cfg.Command, '/')+1:]
		if strings.Contains(cfg.Command, "/") {
			ps = append(ps, pair{cfg.Command, base})
		}
		if p, err := exec.LookPath(cfg.Command); err == nil && p != base {
			ps = append(ps, pair{p, base})
		}
	}
	for _, p := range cfg.Paths {
		// As with env values, a short one would mangle more than it hides.
		if p = path.Clean(p); len(p) >= 6 {
			ps = append(ps, pair{p, path.Base(p)})
		}
	}
	if cfg.Dir != "" && cfg.Dir != "/" {
		ps = append(ps, pair{cfg.Dir, "."})
	}
	if home != "" && home != "/" {
		ps = append(ps, pair{home, "~"})
	}
	return ps
}

// session returns the server's live session, starting the server if it
// has none. Concurrent callers share one start; a server that failed
// recently is not tried again before its back-off ends, and the caller gets
// the last failure at once instead of waiting.
func (s *server) session(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("tool server %s: the bridge is closed", s.name)
		}
		if s.sess != nil {
			sess := s.sess
			s.mu.Unlock()
			return sess, nil
		}
		if s.starting == nil {
			if wait := time.Until(s.retryAt); s.failures > 0 && wait > 0 {
				err := fmt.Errorf("tool server %s is not available: %w (failed %d times in a row; next attempt in %v)",
					s.name, s.lastErr, s.failures, wait.Round(time.Second/10))
				s.mu.Unlock()
				return nil, err
			}
			s.starting = make(chan struct{})
			go s.start(s.starting)
		}
		starting := s.starting
		s.mu.Unlock()
		select {
		case <-starting:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, refusef(KindLimit, s.name, "", "tool server %s did not start within the call's time (%v); it is still starting", s.name, s.cfg.Policy.Timeout)
			}
			return nil, fmt.Errorf("tool server %s: still starting: %w", s.name, ctx.Err())
		}
		s.mu.Lock()
		failed := s.sess == nil && s.lastErr != nil
		err := s.lastErr
		s.mu.Unlock()
		if failed {
			return nil, fmt.Errorf("tool server %s is not available: %w", s.name, err)
		}
	}
}

// start makes one attempt to start the server, then closes done. It runs
// on its own context: a caller that gives up does not fail the start for
// the others.
func (s *server) start(done chan struct{}) {
	ctx, cancel := context.WithTimeout(s.life, startTimeout)
	defer cancel()
	var stderr *tail
	var t mcp.Transport
	var proc *process
	if s.cfg.Start != nil || s.cfg.Command != "" {
		start := s.startCommand
		if s.cfg.Start != nil {
			start = func(ctx context.Context, stderr io.Writer) (*Process, error) { return s.cfg.Start(ctx, s.cfg, stderr) }
		}
		stderr = &tail{}
		var err error
		if proc, err = startProcess(s.life, start, stderr); err != nil {
			s.startFailed(done, err)
			return
		}
		// Each message is bounded as it is read, near the result's own
		// bound, rather than decoded whole (up to the SDK's 16 MiB) and
		// refused after.
		t = &mcp.IOTransport{Reader: proc.Stdout, Writer: proc, MaxLineLength: s.maxMessage}
	} else {
		st := &mcp.StreamableClientTransport{
			Endpoint:             s.cfg.URL,
			HTTPClient:           &http.Client{Transport: headers{s.cfg.Headers, origin(s.cfg.URL), http.DefaultTransport}},
			MaxRetries:           -1, // we restart the session ourselves
			DisableStandaloneSSE: true,
		}
		if s.authz != nil {
			a, err := s.authz()
			if err != nil {
				s.startFailed(done, err)
				return
			}
			st.OAuthHandler = a
		}
		t = st
	}
	sess, err := s.client.Connect(ctx, t, nil)
	if err != nil && proc != nil {
		// The process's own account (a jail that could not be set up)
		// says more than the closed pipe the client saw.
		_ = proc.Close()
		if perr := proc.err; perr != nil {
			err = perr
		}
	}
	s.mu.Lock()
	defer func() {
		close(done)
		s.starting = nil
		s.mu.Unlock()
	}()
	if err == nil && s.closed {
		go func() { _ = sess.Close() }()
		err = errors.New("the bridge is closed")
	}
	if err != nil {
		if line := stderr.last(); line != "" {
			err = fmt.Errorf("%w; its last words: %s", err, line)
		}
		s.fail(err)
		return
	}
	s.log.Info("tool server started")
	s.sess, s.listed, s.failures, s.lastErr = sess, nil, 0, nil
	go func() {
		// A server that exits or drops its connection is dropped, so that
		// the next call starts it again.
		why := errors.New("it stopped")
		if err := sess.Wait(); err != nil {
			why = fmt.Errorf("it stopped: %w", err)
		}
		s.drop(sess, why)
	}()
}

// startFailed ends a start that failed before it could connect.
func (s *server) startFailed(done chan struct{}, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail(err)
	close(done)
	s.starting = nil
}

// fail records a failure; s.mu is held. The code gets err redacted (see
// redactor); the operator's log gets all of it but the server's
// credentials, with what was run, so that whoever can fix the server
// learns why it failed.
func (s *server) fail(err error) {
	s.failures++
	s.lastErr = errors.New(s.redact.Replace(err.Error()))
	s.retryAt = time.Now().Add(backoff(s.failures, s.backoff))
	if login, ok := errors.AsType[loginNeeded](err); ok {
		// Its own words, and no back-off: a login may come any time, and
		// the next attempt costs one request.
		s.lastErr, s.retryAt = loginErr(s.redact.Replace(login.Error())), time.Now()
	}
	what := []any{"command", s.cfg.Command}
	if s.cfg.Command == "" {
		what = []any{"url", origin(s.cfg.URL)} // its query may hold a key
	}
	s.log.Warn("tool server failed", append(what, "failures", s.failures, "err", s.redact.ForLog(err.Error()))...)
}

// loginErr is a loginNeeded in words safe for the code.
type loginErr string

func (e loginErr) Error() string     { return string(e) }
func (e loginErr) LoginNeeded() bool { return true }

// drop forgets sess if it is still the current session, and closes it.
func (s *server) drop(sess *mcp.ClientSession, why error) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess, s.listed = nil, nil
		s.fail(why)
	}
	s.mu.Unlock()
	go func() { _ = sess.Close() }()
}

func (s *server) close() {
	s.end()
	s.mu.Lock()
	s.closed = true
	sess := s.sess
	s.sess = nil
	s.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
}

// process is a server that a Server's Start started, as the writing half
// of its MCP connection: closing it stops the process as the SDK stops a
// command (stdin closed, a grace period, then the end of its context).
type process struct {
	*Process
	kill context.CancelFunc
	done chan struct{} // closed when Wait has returned
	err  error         // Wait's, once done is closed
	once sync.Once
}

func startProcess(life context.Context, start func(context.Context, io.Writer) (*Process, error), stderr io.Writer) (*process, error) {
	ctx, kill := context.WithCancel(life)
	p, err := start(ctx, stderr)
	if err != nil {
		kill()
		return nil, err
	}
	proc := &process{Process: p, kill: kill, done: make(chan struct{})}
	go func() {
		proc.err = p.Wait()
		close(proc.done)
	}()
	return proc, nil
}

func (p *process) Write(b []byte) (int, error) { return p.Stdin.Write(b) }

// Close stops the process and waits until it has ended.
func (p *process) Close() error {
	p.once.Do(func() {
		_ = p.Stdin.Close()
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
		}
		p.kill()
		<-p.done
	})
	return nil
}

// tools lists the server's tools that its policy allows.
func (s *server) tools(ctx context.Context) ([]Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Policy.Timeout)
	defer cancel()
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cached := s.listed
	s.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	var list []Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, s.failed(sess, "", err)
		}
		if s.rules.refuses(t.Name) != "" {
			continue
		}
		// The schemas too: descriptions and defaults are where a server
		// names its allowed directories and the like.
		list = append(list, Tool{Server: s.name, Name: t.Name,
			Description:  s.redact.Replace(t.Description),
			InputSchema:  s.redactValue(t.InputSchema),
			OutputSchema: s.redactValue(t.OutputSchema)})
	}
	slices.SortFunc(list, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	list = Named(list) // once, over the whole list: the names depend on each other
	if list == nil {
		list = []Tool{}
	}
	s.mu.Lock()
	if s.sess == sess {
		s.listed = list
	}
	s.mu.Unlock()
	return list, nil
}

// call calls tool; the per-call timeout covers the server's start too, so
// that a server that never answers costs a call its timeout, not more.
// lists says whether the server lists tool, by that name exactly, among
// the tools its policy allows (listing them first if need be).
func (s *server) lists(ctx context.Context, tool string) (bool, error) {
	list, err := s.tools(ctx)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list, func(t Tool) bool { return t.Name == tool }), nil
}

func (s *server) call(ctx context.Context, tool string, args []byte, ask Elicitor) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Policy.Timeout)
	defer cancel()
	ctx, done := s.withAsker(ctx, ask)
	defer done()
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	// The trace goes on: the server's span may be the call's child.
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args), Meta: tracing.Meta(ctx)})
	if err != nil {
		return nil, s.failed(sess, tool, err)
	}
	if res.IsError {
		return nil, &ToolError{Server: s.name, Tool: tool, Message: s.redact.Replace(errorText(res))}
	}
	out, err := value(res)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", s.name, tool, err)
	}
	return out, nil
}

func (s *server) resource(ctx context.Context, uri string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Policy.Timeout)
	defer cancel()
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	res, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, s.failed(sess, "", err)
	}
	out, err := contents(res.Contents)
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", s.name, uri, err)
	}
	return out, nil
}

// failed turns an error of a request on sess into one safe for the code,
// and drops the session when the error says it is gone.
func (s *server) failed(sess *mcp.ClientSession, tool string, err error) error {
	what := s.name
	if tool != "" {
		what += "." + tool
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return refusef(KindLimit, s.name, tool, "%s did not answer within %v, the per-call timeout", what, s.cfg.Policy.Timeout)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: the call was cancelled", what)
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		// The server's own answer: it is alive.
		return fmt.Errorf("%s: %s", what, s.redact.Replace(rpc.Message))
	}
	if login, ok := errors.AsType[loginNeeded](err); ok {
		// The session is well; its login is not.
		return fmt.Errorf("%s: %w", what, loginErr(s.redact.Replace(login.Error())))
	}
	// Anything else is the connection's: a server that exited, a broken
	// pipe, an HTTP failure, a message past its bound (the stream is cut
	// mid-message). Start afresh for the next call.
	if strings.Contains(err.Error(), "exceeded the configured maximum line length") {
		s.drop(sess, errors.New("it sent a message larger than its bound"))
		return refusef(KindLimit, s.name, tool, "%s answered with more than %d bytes, cut short as it was read: ask the tool for less (a filter, a page, a smaller range)", what, s.maxMessage)
	}
	cause := s.redact.Replace(err.Error())
	s.drop(sess, errors.New("it stopped during a call: "+cause))
	return fmt.Errorf("tool server %s failed during the call of %s (%s); it is restarted for the next call", s.name, what, cause)
}

// redactValue is v, a JSON value, with redactJSON's replacements; nil if
// it cannot be encoded (a schema that is not JSON is no schema).
func (s *server) redactValue(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if b, err = s.redactJSON(b); err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// redactJSON redacts the server's credentials and paths from the strings
// (keys included) of a JSON value; numbers and the rest are left as they
// are, so that the value stays valid JSON whatever the secrets look like.
func (s *server) redactJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return s.redact.Replace(v)
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			m := make(map[string]any, len(v))
			for k, x := range v {
				m[s.redact.Replace(k)] = walk(x)
			}
			return m
		}
		return v
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(walk(v)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// maxHTTPBody bounds a JSON response of an HTTP server, which the SDK
// reads whole (it bounds each event of a stream itself, at 16 MiB).
const maxHTTPBody = 32 << 20

// messageBound is the most bytes a stdio server's message may hold for a
// result of at most resultBytes of JSON: the value may come twice (as
// structured content and as its text), inside an envelope; and a list of
// tools, with their schemas, needs room too.
func messageBound(resultBytes int64) int {
	return int(min(2*resultBytes+1<<20, 1<<30))
}

// startCommand starts a stdio server's command: its environment is its
// own settings and nothing else (a nil Env would hand it Crucible's). Its
// pipes are plain pipes, not exec's, which Wait would close under a
// reader.
func (s *server) startCommand(ctx context.Context, stderr io.Writer) (*Process, error) {
	cmd := exec.CommandContext(ctx, s.cfg.Command, s.cfg.Args...)
	cmd.Env = make([]string, 0, len(s.cfg.Env))
	for k, v := range s.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = s.cfg.Dir
	cmd.Stderr = stderr
	// Once its stdin is closed and stopGrace has passed (process.Close),
	// SIGTERM, and SIGKILL stopGrace later.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	return &Process{Stdin: inW, Stdout: outR, Wait: cmd.Wait}, nil
}

// headers adds a server's configured headers to its requests: only to
// those for the configured URL's origin, so that a redirect elsewhere does
// not carry its credentials along. It also bounds the responses.
type headers struct {
	h      map[string]string
	origin string
	next   http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 && origin(r.URL.String()) == h.origin {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	resp, err := h.next.RoundTrip(r)
	if err == nil && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &capped{ReadCloser: resp.Body, left: maxHTTPBody}
	}
	return resp, err
}

// capped fails a read past its limit instead of buffering without end.
type capped struct {
	io.ReadCloser
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("the response is larger than %d bytes", maxHTTPBody)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

// origin is the scheme and host of a URL, "" when it does not parse.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(p.Scheme + "://" + p.Host)
}

// tail keeps the end of a server's stderr, for the error of a failed start.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4096

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = slices.Clone(t.buf[len(t.buf)-tailSize:])
	}
	return len(p), nil
}

// last returns the last non-empty line written, at most 200 bytes of it.
func (t *tail) last() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200] + "..."
	}
	return l
}
