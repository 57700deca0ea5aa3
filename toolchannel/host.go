package toolchannel

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/violation"

	"golang.org/x/sys/unix"
)

// Session is what the channel asks of the execution's session of the tool
// bridge. Call and Resource return the value's JSON; an error that is a
// [*Refusal] is answered with its kind and reason and recorded as a
// violation, an [*Error] (a tool's own error) is answered as it is, and
// any other error is answered with kind "error" and its text.
type Session interface {
	Call(ctx context.Context, server, tool string, args []byte) ([]byte, error)
	Resource(ctx context.Context, server, uri string) ([]byte, error)
	// List returns the tools the code may call, a value the channel
	// answers as JSON; an error only when none could be listed.
	List(ctx context.Context) (any, error)
	// Count counts a request that costs the host work (what names it),
	// and CountList a listing of the tools, against the execution's
	// limit: an error is the limit reached.
	Count(what string) error
	CountList() error
}

// APIs is the catalog of HTTP APIs that tools.apis() lists (without a
// query) or searches; both return a value the channel answers as JSON. A
// search's [*Refusal] is a limit the code hit.
type APIs interface {
	List() any
	Find(ctx context.Context, query string) (any, error)
}

// Refusal is a Session's or an APIs' error that refuses the code's
// request: a violation of kind Kind, for the reason the code is told.
type Refusal struct{ Kind, Reason string }

func (r *Refusal) Error() string { return r.Reason }

// Call is one tool call (or resource read) of an execution, as its result
// lists them, in the order the code made them.
type Call struct {
	Server     string `json:"server"`
	Tool       string `json:"tool"` // for a resource read, "resource"
	DurationMS int64  `json:"duration_ms"`
	OK         bool   `json:"ok"`
}

// Options are what a channel needs of its execution.
type Options struct {
	Session Session // required
	APIs    APIs    // required
	// NoServers says the configuration has APIs and no servers: each
	// call, list and resource request is answered that there are no
	// tools (searches of the APIs still count against Session's limit).
	NoServers bool
	// Audit gets an audit.ToolCall for each listed call; nil: nowhere.
	Audit interface{ Log(audit.Event) error }
	// Violate records a refusal. The channel calls it one at a time,
	// and not after Stop has returned.
	Violate func(violation.Violation)
	// ArgsHash is the hash of a call's arguments the audit trail
	// records instead of them; nil: the hex SHA-256 of their bytes.
	ArgsHash func(args []byte) string
	MaxLine  int // the longest request line the channel reads (64 KiB at least)
	Records  int // the most calls it lists and audits; past them, calls are only answered
	// Pipes makes the channel two pipes instead of a socketpair: the
	// command reads the answers from Peer and writes its requests to
	// PeerOut.
	Pipes bool
}

// maxInFlight bounds the requests of one channel being served at once;
// past it the channel reads no more until one is answered.
const maxInFlight = 64

// Channel serves one execution's tools channel: the supervisor's end of a
// socketpair whose other end ([Channel.Peer]) the command inherits, or of
// two pipes (Options.Pipes). Neither has a name, so no other execution and
// no host process can reach it.
type Channel struct {
	o       Options
	conn    io.ReadWriteCloser
	peer    *os.File // the jail's end, ours to close once the jail has it
	peerOut *os.File // with Pipes, the jail's end of the requests' pipe
	ctx     context.Context
	cancel  context.CancelFunc
	done    sync.WaitGroup
	slots   chan struct{}

	wmu sync.Mutex // one response line at a time

	mu      sync.Mutex
	redact  func([]byte) []byte
	stopped bool
	exec    string
	client  string // whom the execution runs for
	calls   []Call
}

// New makes the channel of one execution; its command's end is Peer (and
// PeerOut, with Options.Pipes).
func New(o Options) (*Channel, error) {
	if o.Pipes {
		return newPipes(o)
	}
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
	c := &Channel{o: o, conn: conn, peer: os.NewFile(uintptr(fds[1]), "tools-jail"), slots: make(chan struct{}, maxInFlight)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// newPipes makes a channel of two pipes: the answers' and the requests'.
// Our ends are on the poller (non-blocking), so that closing one ends a
// pending read or write; the command's stay blocking.
func newPipes(o Options) (*Channel, error) {
	var answers, requests [2]int
	if err := unix.Pipe2(answers[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("tools channel: pipe: %w", err)
	}
	if err := unix.Pipe2(requests[:], unix.O_CLOEXEC); err != nil {
		unix.Close(answers[0])
		unix.Close(answers[1])
		return nil, fmt.Errorf("tools channel: pipe: %w", err)
	}
	for _, fd := range []int{requests[0], answers[1]} {
		_ = unix.SetNonblock(fd, true) // a pipe's never fails
	}
	conn := &pipes{r: os.NewFile(uintptr(requests[0]), "tools-requests"), w: os.NewFile(uintptr(answers[1]), "tools-answers")}
	c := &Channel{o: o, conn: conn, slots: make(chan struct{}, maxInFlight),
		peer: os.NewFile(uintptr(answers[0]), "tools-jail"), peerOut: os.NewFile(uintptr(requests[1]), "tools-jail-out")}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// pipes are our ends of a channel of two pipes, as one connection.
type pipes struct{ r, w *os.File }

func (p *pipes) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipes) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipes) Close() error {
	p.r.Close()
	return p.w.Close()
}

// Peer is the command's end of the channel, for its jail to inherit; Stop
// closes it.
func (c *Channel) Peer() *os.File { return c.peer }

// PeerOut is, with Options.Pipes, the command's end of the requests' pipe
// (Peer is the answers'); nil otherwise. Stop closes it.
func (c *Channel) PeerOut() *os.File { return c.peerOut }

// SetRedact sets what every answer goes through before the code gets it:
// a server may know a secret's value, and the code gets its placeholder,
// as from the network.
func (c *Channel) SetRedact(redact func([]byte) []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.redact = redact
}

// Serve answers the channel's requests until the command closes it or Stop
// is called; the calls are the execution exec's, run for client.
func (c *Channel) Serve(exec, client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return // a warm jail that died before its work came
	}
	c.exec, c.client = exec, client
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		c.read()
	}()
}

// Stop ends the channel: calls still running are cancelled and answered
// (to no one), and once it returns the calls and violations are final. It
// may be called more than once, and at once.
func (c *Channel) Stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.cancel()
	_ = c.conn.Close()
	c.peer.Close()
	if c.peerOut != nil {
		c.peerOut.Close()
	}
	c.done.Wait()
}

// Calls are the execution's calls, listed up to Options.Records; final
// once Stop has returned.
func (c *Channel) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *Channel) read() {
	r := bufio.NewScanner(c.conn)
	r.Buffer(make([]byte, 0, 64<<10), c.o.MaxLine)
	for r.Scan() {
		var req Request
		if err := json.Unmarshal(r.Bytes(), &req); err != nil {
			c.answer(Response{ID: req.ID, Error: &Error{Kind: "error", Message: "the request is not a JSON object of the tools protocol: " + err.Error()}})
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
		if (req.Method == "call" || req.Method == "resource") && len(c.calls) < c.o.Records {
			tool := req.Tool
			if req.Method == "resource" {
				tool = "resource"
			}
			c.mu.Lock()
			slot = len(c.calls)
			c.calls = append(c.calls, Call{Server: req.Server, Tool: tool})
			c.mu.Unlock()
		}
		c.done.Add(1)
		go func() {
			defer func() { <-c.slots; c.done.Done() }()
			c.answer(c.handle(&req, slot))
		}()
	}
	if errors.Is(r.Err(), bufio.ErrTooLong) {
		c.violate(violation.Violation{Kind: violation.Limit, Reason: fmt.Sprintf("a request on the tools channel was longer than %d bytes; the channel was closed", c.o.MaxLine)})
		_ = c.conn.Close() // the command reads EOF: nothing more is answered
	}
}

func (c *Channel) answer(res Response) {
	if res.ID == nil {
		res.ID = json.RawMessage("null")
	}
	b, err := json.Marshal(res)
	if err != nil {
		return // the bridge's results are valid JSON
	}
	c.mu.Lock()
	redact := c.redact
	c.mu.Unlock()
	if redact != nil {
		// (The JSON stays valid: a placeholder is letters and digits,
		// of the value's length.)
		b = redact(b)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = c.conn.Write(append(b, '\n'))
}

// methods are the protocol's methods, each answering one request; slot is
// a call's place in c.calls, -1 if it is not listed.
var methods = map[string]func(c *Channel, req *Request, slot int) Response{
	"call":     (*Channel).call,
	"resource": (*Channel).resource,
	"list":     (*Channel).list,
	"apis":     (*Channel).apis,
}

func (c *Channel) handle(req *Request, slot int) Response {
	m := methods[req.Method]
	if m == nil {
		return Response{ID: req.ID, Error: &Error{Kind: "error", Message: fmt.Sprintf("unknown method %q: the methods are call, list, resource and apis", req.Method)}}
	}
	return m(c, req, slot)
}

// noTools answers a call, list or resource request when the configuration
// has APIs but no servers (without either, there is no channel, and the
// runners say the same).
const noTools = "no tools are configured: the configuration of this execution has no servers"

func (c *Channel) call(req *Request, slot int) Response {
	if c.o.NoServers {
		return Response{ID: req.ID, Error: &Error{Kind: "error", Message: noTools}}
	}
	start := time.Now()
	hash := sum(req.Args)
	if c.o.ArgsHash != nil {
		hash = c.o.ArgsHash(req.Args)
	}
	out, err := c.o.Session.Call(c.ctx, req.Server, req.Tool, req.Args)
	return c.called(req, slot, hash, start, out, err)
}

func (c *Channel) resource(req *Request, slot int) Response {
	if c.o.NoServers {
		return Response{ID: req.ID, Error: &Error{Kind: "error", Message: noTools}}
	}
	start := time.Now()
	hash := sum([]byte(req.URI)) // the audit trail's hash of the URI read
	out, err := c.o.Session.Resource(c.ctx, req.Server, req.URI)
	return c.called(req, slot, hash, start, out, err)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// called answers a call or resource read that began at start, and lists
// and audits it in its slot (hash: of the arguments, or of the URI read).
func (c *Channel) called(req *Request, slot int, hash string, start time.Time, out []byte, err error) Response {
	res := Response{ID: req.ID}
	ev := audit.ToolCall{Server: req.Server, Tool: req.Tool, Resource: req.Method == "resource",
		ArgsHash: hash, DurationMS: time.Since(start).Milliseconds(), Outcome: "ok"}
	var refusal *Refusal
	var answer *Error
	switch {
	case err == nil:
		res.Result = out
	case errors.As(err, &refusal):
		ev.Outcome, ev.Reason = "refused", refusal.Reason
		res.Error = &Error{Kind: refusal.Kind, Message: refusal.Reason}
		c.violate(violation.Violation{Kind: refusal.Kind, Reason: refusal.Reason})
	case errors.As(err, &answer):
		ev.Outcome = "error"
		res.Error = answer
	default:
		ev.Outcome = "error"
		res.Error = &Error{Kind: "error", Message: err.Error()}
	}
	if slot < 0 {
		return res
	}
	c.mu.Lock()
	ev.Exec, ev.Client = c.exec, c.client
	c.calls[slot].DurationMS, c.calls[slot].OK = ev.DurationMS, err == nil
	c.mu.Unlock()
	if c.o.Audit != nil {
		_ = c.o.Audit.Log(ev)
	}
	return res
}

func (c *Channel) list(req *Request, _ int) Response {
	res := Response{ID: req.ID}
	if c.o.NoServers {
		res.Error = &Error{Kind: "error", Message: noTools}
		return res
	}
	// The tools' list is the host's work too: the first is free.
	if err := c.o.Session.CountList(); err != nil {
		return c.limited(res, err)
	}
	tools, err := c.o.Session.List(c.ctx)
	if err == nil {
		res.Result, err = json.Marshal(tools)
	}
	if err != nil {
		res.Error = &Error{Kind: "error", Message: err.Error()}
	}
	return res
}

// apis answers tools.apis(): without a query, every API; with one, those
// it matches, each with the operations or sections it found (a query past
// the search's bounds is a limit the code hit).
func (c *Channel) apis(req *Request, _ int) Response {
	res := Response{ID: req.ID}
	var (
		list any
		err  error
	)
	if req.Query != "" {
		// A search is the host's work: it counts as a call.
		if cerr := c.o.Session.Count("tools.apis"); cerr != nil {
			return c.limited(res, cerr)
		}
		list, err = c.o.APIs.Find(c.ctx, req.Query)
	} else {
		list = c.o.APIs.List()
	}
	var refusal *Refusal
	switch {
	case errors.As(err, &refusal):
		res.Error = &Error{Kind: refusal.Kind, Message: refusal.Reason}
		c.violate(violation.Violation{Kind: refusal.Kind, Reason: "tools.apis: " + refusal.Reason})
		return res
	case err != nil:
		res.Error = &Error{Kind: "error", Message: err.Error()}
		return res
	}
	res.Result, _ = json.Marshal(list)
	return res
}

// limited answers res with err, a limit the execution reached, and counts
// it.
func (c *Channel) limited(res Response, err error) Response {
	msg := err.Error()
	res.Error = &Error{Kind: violation.Limit, Message: msg}
	c.violate(violation.Violation{Kind: violation.Limit, Reason: msg})
	return res
}

// violate records a refusal, one at a time.
func (c *Channel) violate(v violation.Violation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.o.Violate != nil {
		c.o.Violate(v)
	}
}
