package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/policy/glob"
	"github.com/cruciblehq/crucible/toolbridge"
)

// A call that a rule says a human must approve is put to the MCP client
// as an elicitation (form mode) that shows the server, the tool and the
// arguments. A 2025-11-25 client is sent the request while the execute
// call is open. A 2026-07-28 client cannot be (the SDK refuses
// server-initiated requests then): execute answers with the elicitation as
// an input request (multi round-trip requests, SEP-2322), the execution
// waiting, and the client's retry of the call carries the answer and the
// request state that names the waiting execution.

// approvalInput is the key of the one input request an answer carries.
const approvalInput = "approval"

// run is one execution, in a goroutine of its own: its execute call may
// return (to ask the client) and the client's retry take it up again.
type run struct {
	questions chan *question // a question for the client, 2026-07-28 only
	done      chan struct{}  // closed once out and err are set
	cancel    context.CancelFunc
	out       *executeOut
	err       error

	mu     sync.Mutex
	logins []*mcp.ElicitParams // the logins the client is to be asked for as execute ends
}

func (r *run) pendingLogins() []*mcp.ElicitParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logins
}

// question is one thing the execution waits for a human's answer to: an
// approval, or what a tool server asks (an elicitation either way).
type question struct {
	params  *mcp.ElicitParams
	timeout time.Duration          // how long it may wait
	answer  chan *mcp.ElicitResult // buffered: whoever answers never waits
}

// approvals are the runs of 2026-07-28 clients waiting, between two
// requests, for a human's answer; by request state.
type approvals struct {
	mu      sync.Mutex
	waiting map[string]*paused
}

type paused struct {
	client string // only the client that was asked may answer
	run    *run
	q      *question
	timer  *time.Timer
}

// park keeps r, which waits for q, for the client's retry (whose request
// state is state, an unguessable id), for as long as
// the question may wait; past it, nobody will read r's result and it is
// stopped. It returns the result that asks the client.
func (ap *approvals) park(r *run, q *question, client, state string) *mcp.CallToolResult {
	p := &paused{client: client, run: r, q: q}
	ap.mu.Lock()
	if ap.waiting == nil {
		ap.waiting = map[string]*paused{}
	}
	ap.waiting[state] = p
	p.timer = time.AfterFunc(q.timeout, func() {
		if ap.take(state, client) != nil {
			r.cancel()
		}
	})
	ap.mu.Unlock()
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInput: q.params},
		RequestState:  state,
	}
}

func (ap *approvals) take(state, client string) *paused {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	p := ap.waiting[state]
	if p == nil || p.client != client {
		return nil
	}
	delete(ap.waiting, state)
	return p
}

// drop forgets every waiting run: the server is closing, and its runs end
// with it.
func (ap *approvals) drop() {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	for state, p := range ap.waiting {
		p.timer.Stop()
		delete(ap.waiting, state)
	}
}

// errStale answers a retry whose request state names no waiting execution.
var errStale = errors.New("this retry answers an approval that is unknown or was not answered in time (servers.NAME.approval_timeout); the execution was stopped: run the program again")

// resume gives the answer in responses to the run that state names, and
// returns the run.
func (ap *approvals) resume(state, client string, responses mcp.InputResponseMap) (*run, error) {
	p := ap.take(state, client)
	if p == nil {
		return nil, errStale
	}
	p.timer.Stop()
	res, ok := responses[approvalInput].(*mcp.ElicitResult)
	if !ok || res == nil {
		res = &mcp.ElicitResult{Action: toolbridge.Cancel}
	}
	p.q.answer <- res
	return p.run, nil
}

// approver asks the client of req about the calls of the run r (whose
// context is rctx) that need a human's approval.
func (s *Server) approver(rctx context.Context, req *mcp.CallToolRequest, r *run) toolbridge.Approver {
	if why := cannotElicit(req); why != "" {
		return func(context.Context, toolbridge.Approval) toolbridge.Answer {
			return toolbridge.Answer{Action: toolbridge.Unasked, Why: why}
		}
	}
	if rounds(req) {
		return func(ctx context.Context, a toolbridge.Approval) toolbridge.Answer {
			res, ok := r.ask(ctx, elicitation(a), a.Timeout)
			if !ok {
				return noAnswer(ctx)
			}
			return toolbridge.Answer{Action: res.Action}
		}
	}
	return func(ctx context.Context, a toolbridge.Approval) toolbridge.Answer {
		// Sent in the context of the execute call, so that over HTTP it
		// goes on that call's stream.
		ectx, stop := joinContext(rctx, ctx)
		defer stop()
		res, err := req.Session.Elicit(ectx, elicitation(a))
		if err != nil {
			if ctx.Err() != nil {
				return noAnswer(ctx)
			}
			s.log.Warn("a client could not be asked to approve a call", "server", a.Server, "tool", a.Tool, "error", err)
			return toolbridge.Answer{Action: toolbridge.Unasked, Why: "the MCP client's elicitation failed"}
		}
		return toolbridge.Answer{Action: res.Action}
	}
}

// ask puts p to a 2026-07-28 client through execute's answer, and waits
// for the client's retry to bring the answer; false when ctx ends first.
func (r *run) ask(ctx context.Context, p *mcp.ElicitParams, timeout time.Duration) (*mcp.ElicitResult, bool) {
	q := &question{params: p, timeout: timeout, answer: make(chan *mcp.ElicitResult, 1)}
	select {
	case r.questions <- q:
	case <-ctx.Done():
		return nil, false
	}
	select {
	case res := <-q.answer:
		return res, true
	case <-ctx.Done():
		return nil, false
	}
}

// elicitor puts to req's client what a tool server asks during a call of
// the execution r (whose context is rctx), as approvals are put: in the
// execute call's stream, or, to a 2026-07-28 client, in execute's answer.
// A client that did not declare the mode (form, url) is not asked: the
// server is told the request was cancelled.
func (s *Server) elicitor(rctx context.Context, req *mcp.CallToolRequest, r *run) toolbridge.Elicitor {
	return func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		cancelled := &mcp.ElicitResult{Action: toolbridge.Cancel}
		if !declares(req, p.Mode) {
			return cancelled, nil
		}
		if rounds(req) {
			deadline, _ := ctx.Deadline()
			if res, ok := r.ask(ctx, p, time.Until(deadline)); ok {
				return res, nil
			}
			return cancelled, nil
		}
		ectx, stop := joinContext(rctx, ctx)
		defer stop()
		res, err := req.Session.Elicit(ectx, p)
		if err != nil {
			s.log.Warn("a client could not be asked what a tool server asks", "server", server, "error", err)
			return cancelled, nil
		}
		return res, nil
	}
}

// declares says whether req's client declared elicitation of mode ("" is
// form).
func declares(req *mcp.CallToolRequest, mode string) bool {
	if req.Session == nil {
		return false
	}
	c := req.ClientCapabilities()
	if c == nil || c.Elicitation == nil {
		return false
	}
	if mode == "url" {
		return c.Elicitation.URL != nil
	}
	return c.Elicitation.Form != nil || c.Elicitation.URL == nil // a bare {} is form
}

// noAnswer is the answer of a question whose context ended first.
func noAnswer(ctx context.Context) toolbridge.Answer {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return toolbridge.Answer{Action: toolbridge.Timeout}
	}
	return toolbridge.Answer{Action: toolbridge.Cancel}
}

// rounds says whether req's client takes input requests in results (the
// 2026-07-28 protocol) rather than requests of its own.
func rounds(req *mcp.CallToolRequest) bool {
	if req.Session == nil {
		return false
	}
	p := req.Session.InitializeParams()
	return p != nil && p.ProtocolVersion >= statelessVersion
}

// cannotElicit says why req's client cannot be asked, or "".
func cannotElicit(req *mcp.CallToolRequest) string {
	if req.Session == nil {
		return "there is no MCP session to ask through"
	}
	c := req.ClientCapabilities()
	if c == nil || c.Elicitation == nil || (c.Elicitation.Form == nil && c.Elicitation.URL != nil) {
		return "the MCP client did not declare form elicitation, so it cannot show a human the call"
	}
	return ""
}

// elicitation is the form that asks a human about a.
func elicitation(a toolbridge.Approval) *mcp.ElicitParams {
	tool := a.Tool
	if !glob.Clean(tool) {
		tool = strconv.QuoteToASCII(tool)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "A program in Crucible's sandbox asks to call the tool %s of the server %s.\n", tool, a.Server)
	if a.Reason != "" {
		fmt.Fprintf(&b, "The operator's rule: %s\n", a.Reason)
	}
	fmt.Fprintf(&b, "Its arguments, as the server will get them, one value a line:\n%s\n", a.Args)
	b.WriteString("Accept to let this one call go out; decline to refuse it.")
	return &mcp.ElicitParams{Mode: "form", Message: b.String(), RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}
}
