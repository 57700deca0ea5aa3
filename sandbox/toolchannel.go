package sandbox

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/apis"
	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/toolbridge"
	"github.com/cruciblehq/crucible/violation"

	"golang.org/x/sys/unix"
)

// ToolsFD is the descriptor on which the command of an execution with tools
// finds its tools channel; the environment variable CRUCIBLE_TOOLS_FD says
// so to the runners.
const ToolsFD = 4

// Tools is the tool bridge of one Crucible process: the downstream servers
// of a configuration, each started on its first use and shared by every
// execution that is given it in [Options], and the catalog of its HTTP
// APIs, which the code lists with tools.apis(). The caller closes it, which
// stops the servers, once no execution uses it any more.
type Tools struct {
	bridge   *toolbridge.Bridge
	apis     *apis.Catalog // nil without APIs
	apisOnly bool          // the configuration has APIs and no servers
	maxLine  int           // the longest request line a channel reads
	records  int           // the most calls an execution lists
}

// NewTools returns the tool bridge of cfg's servers and the catalog of its
// APIs (whose docs it reads now), or nil when cfg has neither. It starts
// nothing. The network decisions of its jailed servers go to w, their
// starts and failures, in full, to log (nil: nowhere).
func NewTools(cfg *config.Config, w *audit.Writer, log *slog.Logger) (*Tools, error) {
	if len(cfg.Servers) == 0 && len(cfg.APIs) == 0 {
		return nil, nil
	}
	if err := checkServers(cfg); err != nil {
		return nil, err
	}
	catalog, err := apis.Load(cfg)
	if err != nil {
		return nil, err
	}
	o := toolOptions(cfg, w)
	o.Logger = log
	b, err := toolbridge.New(o)
	if err != nil {
		return nil, err
	}
	// A request carries its arguments and a little JSON around them.
	args := cmp.Or(o.Limits.ArgBytes, toolbridge.DefaultArgBytes)
	calls := cmp.Or(o.Limits.Calls, toolbridge.DefaultCalls)
	t := &Tools{bridge: b, apis: catalog, apisOnly: len(cfg.Servers) == 0, maxLine: int(args) + 64<<10}
	if !t.apisOnly {
		t.records = calls + moreToolRecords // without servers, no call is made to list
	}
	return t, nil
}

// APIs is the catalog of the configuration's HTTP APIs; nil (an empty
// catalog) without any.
func (t *Tools) APIs() *apis.Catalog {
	if t == nil {
		return nil
	}
	return t.apis
}

// Close stops the servers the bridge started.
func (t *Tools) Close() {
	if t != nil {
		t.bridge.Close()
	}
}

// ToolCall is one tool call (or resource read) of an execution, as its
// result lists them, in the order the code made them.
type ToolCall struct {
	Server     string `json:"server"`
	Tool       string `json:"tool"` // for a resource read, "resource"
	DurationMS int64  `json:"duration_ms"`
	OK         bool   `json:"ok"`
}

// moreToolRecords is how many calls past its call limit one execution lists
// in its result and writes to the audit trail: refused calls do not count
// against the limit, and the code may make them in a loop. Past that, calls
// are still answered (refused, and counted in the violations), not listed.
const moreToolRecords = 1000

// maxInFlight bounds the requests of one channel being served at once;
// past it the channel reads no more until one is answered.
const maxInFlight = 64

// toolChannel serves one execution's tools channel: the supervisor's end of
// a socketpair whose other end is the command's fd 4. A socketpair has no
// name, so no other execution and no host process can reach it.
type toolChannel struct {
	conn     net.Conn
	peer     *os.File // the jail's end, ours to close once the jail has it
	sess     *toolbridge.Session
	apis     *apis.Catalog
	apisOnly bool
	audit    *audit.Writer
	maxLine  int
	records  int
	redact   func([]byte) []byte // set before serve, with the execution's secrets

	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
	slots  chan struct{}

	wmu sync.Mutex // one response line at a time

	mu      sync.Mutex
	stopped bool
	exec    string
	client  string // whom the execution runs for
	calls   []ToolCall
	refused violations
}

// newToolChannel makes the channel of one execution and gives its jail the
// command's end.
func newToolChannel(t *Tools, spec *jail.Spec, w *audit.Writer) (*toolChannel, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("tools channel: socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "tools")
	// FileConn dups our end, non-blocking, onto the poller, so that closing
	// it ends a pending read; the command's end stays blocking.
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, fmt.Errorf("tools channel: %w", err)
	}
	c := &toolChannel{
		conn: conn, peer: os.NewFile(uintptr(fds[1]), "tools-jail"),
		sess: t.bridge.NewSession(), apis: t.apis, apisOnly: t.apisOnly,
		audit: w, maxLine: t.maxLine, records: t.records,
		slots: make(chan struct{}, maxInFlight),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	spec.Tools = c.peer
	spec.Env = append(spec.Env, fmt.Sprintf("CRUCIBLE_TOOLS_FD=%d", ToolsFD))
	return c, nil
}

// serve answers the channel's requests until the command closes it or stop
// is called; the calls are the execution exec's, run for caller.
func (c *toolChannel) serve(exec string, caller toolbridge.Caller) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return // a warm jail that died before its work came
	}
	c.exec, c.client = exec, caller.Client
	c.sess.SetCaller(c.audited(exec, caller))
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		c.read()
	}()
}

// stop ends the channel: calls still running are cancelled and answered
// (to no one), and once it returns the calls and violations are final. It
// may be called more than once, and at once.
func (c *toolChannel) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.cancel()
	c.conn.Close()
	c.peer.Close()
	c.done.Wait()
}

// noTools answers a call, list or resource request when the configuration
// has APIs but no servers (without either, there is no channel, and the
// runners say the same).
const noTools = "no tools are configured: the configuration of this execution has no servers"

// request is one line the code sends.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	URI    string          `json:"uri"`
	Query  string          `json:"query"`
}

// response is one line the code gets.
type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *responseError  `json:"error,omitempty"`
}

// responseError is a failed request: Kind "tool" for the policy's refusal or
// the tool's own error, "limit" for a limit, "error" for anything else (a
// server that cannot be reached, a malformed request).
type responseError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (c *toolChannel) read() {
	r := bufio.NewScanner(c.conn)
	r.Buffer(make([]byte, 0, 64<<10), c.maxLine)
	for r.Scan() {
		var req request
		if err := json.Unmarshal(r.Bytes(), &req); err != nil {
			c.answer(response{ID: req.ID, Error: &responseError{Kind: "error", Message: "the request is not a JSON object of the tools protocol: " + err.Error()}})
			continue
		}
		select {
		case c.slots <- struct{}{}:
		case <-c.ctx.Done():
			return
		}
		// The call's place in the result is the order the code asked in,
		// whatever order the calls end in.
		slot := -1
		if (req.Method == "call" || req.Method == "resource") && len(c.calls) < c.records {
			tool := req.Tool
			if req.Method == "resource" {
				tool = "resource"
			}
			c.mu.Lock()
			slot = len(c.calls)
			c.calls = append(c.calls, ToolCall{Server: req.Server, Tool: tool})
			c.mu.Unlock()
		}
		c.done.Add(1)
		go func() {
			defer func() { <-c.slots; c.done.Done() }()
			c.answer(c.handle(req, slot))
		}()
	}
	if errors.Is(r.Err(), bufio.ErrTooLong) {
		c.violate(violation.Violation{Kind: violation.Limit, Reason: fmt.Sprintf("a request on the tools channel was longer than %d bytes; the channel was closed", c.maxLine)})
		c.conn.Close() // the command reads EOF: nothing more is answered
	}
}

func (c *toolChannel) answer(res response) {
	if res.ID == nil {
		res.ID = json.RawMessage("null")
	}
	b, err := json.Marshal(res)
	if err != nil {
		return // the bridge's results are valid JSON
	}
	if c.redact != nil {
		// A server may know a secret's value: the code gets its
		// placeholder, as from the network. (The JSON stays valid: a
		// placeholder is letters and digits, of the value's length.)
		b = c.redact(b)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = c.conn.Write(append(b, '\n'))
}

// handle answers one request; slot is the call's place in c.calls.
func (c *toolChannel) handle(req request, slot int) response {
	res := response{ID: req.ID}
	var (
		out  []byte
		err  error
		hash string // of the arguments, or of the URI read
	)
	start := time.Now()
	switch req.Method {
	case "apis":
		// Without a query, every API; with one, those it matches, each
		// with the operations or sections it found (a query past the
		// search's bounds is a limit the code hit).
		var list []apis.Info
		if req.Query != "" {
			// A search is the host's work: it counts as a call.
			if cerr := c.sess.Count("tools.apis"); cerr != nil {
				return c.limited(res, cerr)
			}
			list, err = c.apis.Find(c.ctx, req.Query)
		} else {
			list = c.apis.List()
		}
		if err != nil {
			res.Error = &responseError{Kind: "error", Message: err.Error()}
			if errors.Is(err, apis.ErrQueryTooLong) {
				res.Error.Kind = violation.Limit
				c.violate(violation.Violation{Kind: violation.Limit, Reason: "tools.apis: " + err.Error()})
			}
			return res
		}
		res.Result, _ = json.Marshal(list)
		return res
	case "list", "call", "resource":
		if c.apisOnly {
			res.Error = &responseError{Kind: "error", Message: noTools}
			return res
		}
	}
	switch req.Method {
	case "list":
		// The tools' list is the host's work too: the first is free.
		if cerr := c.sess.CountList(); cerr != nil {
			return c.limited(res, cerr)
		}
		tools, lerr := c.sess.Tools(c.ctx)
		if lerr != nil && len(tools) == 0 {
			err = lerr
		} else {
			out, err = json.Marshal(toolbridge.Named(tools)) // each with the name the code calls it by (js_name)
		}
		if err != nil {
			res.Error = &responseError{Kind: "error", Message: err.Error()}
		}
		res.Result = out
		return res
	case "call":
		hash = toolbridge.ArgsHash(req.Args)
		out, err = c.sess.Call(c.ctx, req.Server, req.Tool, req.Args)
	case "resource":
		sum := sha256.Sum256([]byte(req.URI))
		hash = hex.EncodeToString(sum[:])
		out, err = c.sess.Resource(c.ctx, req.Server, req.URI)
	default:
		res.Error = &responseError{Kind: "error", Message: fmt.Sprintf("unknown method %q: the methods are call, list, resource and apis", req.Method)}
		return res
	}
	d := time.Since(start)
	ev := audit.ToolCall{Server: req.Server, Tool: req.Tool, Resource: req.Method == "resource",
		ArgsHash: hash, DurationMS: d.Milliseconds(), Outcome: "ok"}
	var refusal *toolbridge.Refusal
	var toolErr *toolbridge.ToolError
	switch {
	case err == nil:
		res.Result = out
	case errors.As(err, &refusal):
		ev.Outcome, ev.Reason = "refused", refusal.Reason
		res.Error = &responseError{Kind: refusal.Kind, Message: refusal.Reason}
		c.violate(violation.Violation{Kind: refusal.Kind, Reason: refusal.Reason})
	case errors.As(err, &toolErr):
		ev.Outcome = "error"
		res.Error = &responseError{Kind: "tool", Message: toolErr.Message}
	default:
		ev.Outcome = "error"
		res.Error = &responseError{Kind: "error", Message: err.Error()}
	}
	if slot < 0 {
		return res
	}
	c.mu.Lock()
	ev.Exec, ev.Client = c.exec, c.client
	c.calls[slot].DurationMS, c.calls[slot].OK = ev.DurationMS, err == nil
	c.mu.Unlock()
	_ = c.audit.Log(ev)
	return res
}

// audited is caller, each of its approvals written to the audit trail
// with its answer, whoever answered (or did not).
func (c *toolChannel) audited(exec string, caller toolbridge.Caller) toolbridge.Caller {
	ask := caller.Approve
	caller.Approve = func(ctx context.Context, a toolbridge.Approval) toolbridge.Answer {
		began := time.Now()
		ans := toolbridge.Answer{Action: toolbridge.Unasked, Why: noApprover}
		if ask != nil {
			ans = ask(ctx, a)
		}
		if ans.Action != toolbridge.Accept && ctx.Err() == context.DeadlineExceeded {
			ans = toolbridge.Answer{Action: toolbridge.Timeout}
		}
		_ = c.audit.Log(audit.Approval{Exec: exec, Client: caller.Client, Server: a.Server, Tool: a.Tool,
			ArgsHash: a.ArgsHash, Rule: a.Rule, Answer: ans.Action, Why: ans.Why, WaitMS: time.Since(began).Milliseconds()})
		return ans
	}
	return caller
}

// noApprover is why a call that needs approval was refused when the
// execution's caller gave no way to ask.
const noApprover = "this execution has no one to ask (crucible serve asks its MCP client; crucible run and exec approve only with --approve-all)"

// limited answers res with err, a limit the execution reached (a
// *toolbridge.Refusal), and counts it.
func (c *toolChannel) limited(res response, err error) response {
	msg := err.Error()
	res.Error = &responseError{Kind: violation.Limit, Message: msg}
	c.violate(violation.Violation{Kind: violation.Limit, Reason: msg})
	return res
}

// violate counts a refusal, one entry per kind and reason (the reasons name
// what the code asked for: past maxNetViolations of them, one entry per
// kind counts the rest).
func (c *toolChannel) violate(v violation.Violation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused.add(v)
}
