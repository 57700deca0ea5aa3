package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/violation"
)

// approvalServer serves the real server-everything as ev, whose echo a
// rule says a human must approve.
func approvalServer(t *testing.T, timeout time.Duration) (*Server, string) {
	t.Helper()
	testenv.NeedRoot(t, "builds real jails")
	ev := everything(t)
	ev.ApprovalTimeout = config.Duration(timeout)
	ev.Rules = []config.CallRule{{Tools: []string{"echo"}, Approve: true, Reason: "echoes need a human"}}
	s := newServer(t, func(c *config.Config) { c.Servers = map[string]config.Server{"ev": ev} })
	return s, serveHTTP(t, s)
}

// answering is a client of url with token, speaking version, whose human
// gives answers in turn (the last one from then on); "hang" answers only
// once release is closed, and then accepts. It records what it was shown.
type answering struct {
	mu      sync.Mutex
	answers []string
	shown   []string
	release chan struct{}
}

func (a *answering) connect(t *testing.T, url, version string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: tokenA, rt: http.DefaultTransport}}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.mu.Lock()
			a.shown = append(a.shown, req.Params.Message)
			answer := a.answers[0]
			if len(a.answers) > 1 {
				a.answers = a.answers[1:]
			}
			a.mu.Unlock()
			if answer == "hang" {
				select {
				case <-a.release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				answer = "accept"
			}
			return &mcp.ElicitResult{Action: answer}, nil
		}})
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// echoes calls ev.echo once per answer, and returns what each call gave.
const echoes = `const out = [];
for (const m of ["one", "two", "three"]) {
  try { out.push(await tools.ev.echo({ message: m + "\u202e" })); } catch (e) { out.push("refused: " + e.message); }
}
return out;`

// Both eras of MCP ask a human the same way: a 2025-11-25 session gets an
// elicitation request during the call, a 2026-07-28 client an input
// request in the call's result, whose retry carries the answer. Accept
// lets the call out; decline and cancel refuse it, as violations of kind
// approval. The human sees the server, the tool and the arguments, every
// character past ASCII escaped.
func TestApprovalEras(t *testing.T) {
	_, url := approvalServer(t, time.Minute)
	for _, version := range []string{"2025-11-25", ""} {
		a := &answering{answers: []string{"accept", "decline", "cancel"}}
		cs := a.connect(t, url, version)
		res, out := execute(t, cs, map[string]any{"code": echoes})
		if out == nil || out.ExitCode != 0 {
			t.Fatalf("%q: %s", version, text(res))
		}
		for i, want := range []string{`Echo: one`, `refused: tool echo needs a human's approval (rule 0 of this server: echoes need a human), and was refused: the human declined it`, `dismissed the request without approving it`} {
			if !strings.Contains(string(out.Result), want) {
				t.Errorf("%q: call %d: want %q in %s", version, i, want, out.Result)
			}
		}
		var approvals int
		for _, v := range out.Violations {
			if v.Kind == violation.Approval {
				approvals += v.Count
			}
		}
		if approvals != 2 {
			t.Errorf("%q: %d approval violations, want 2: %+v", version, approvals, out.Violations)
		}
		if len(a.shown) != 3 || !strings.Contains(a.shown[1], "the tool echo of the server ev") ||
			!strings.Contains(a.shown[1], `message: "two\u202e"`) || !strings.Contains(a.shown[1], "echoes need a human") {
			t.Errorf("%q: the human was shown %q", version, a.shown)
		}
	}
}

// A client that declares no elicitation is not asked: the call is refused,
// saying why.
func TestApprovalNoElicitation(t *testing.T) {
	_, url := approvalServer(t, time.Minute)
	for _, version := range []string{"2025-11-25", ""} {
		cs := connectHTTP(t, url, tokenA, version)
		_, out := execute(t, cs, map[string]any{"code": `return await tools.ev.echo({ message: "x" })`})
		if out == nil || out.Error == nil || !strings.Contains(out.Error.Message, "no one could be asked: the MCP client did not declare form elicitation") {
			t.Errorf("%q: %+v", version, out)
		}
	}
}

// A 2026-07-28 client that answers too late finds its execution gone; one
// that sends a request state it was never given is told so.
func TestApprovalRetryStale(t *testing.T) {
	s, url := approvalServer(t, 2*time.Second)
	a := &answering{answers: []string{"hang"}, release: make(chan struct{})}
	cs := a.connect(t, url, "")
	// Released once the server has given up on the answer.
	go func() {
		defer close(a.release)
		for i := 0; i < 600; i++ {
			time.Sleep(100 * time.Millisecond)
			s.approvals.mu.Lock()
			n := len(s.approvals.waiting)
			s.approvals.mu.Unlock()
			a.mu.Lock()
			asked := len(a.shown) > 0
			a.mu.Unlock()
			if n == 0 && asked {
				return
			}
		}
	}()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": `return await tools.ev.echo({ message: "late" })`}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "not answered in time") {
		t.Errorf("a late answer: %v %s", err, text(res))
	}

	// A request state never given.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": `return 1`}, RequestState: "0123456789abcdef0123456789abcdef"})
	if err != nil || !res.IsError || !strings.Contains(text(res), "unknown or was not answered in time") {
		t.Errorf("a made-up request state: %v %s", err, text(res))
	}
}

// The request state that names a waiting execution answers only for the
// client that was asked: another client's retry with it is told nothing of
// it and leaves it waiting, and the asker's answer still goes through.
func TestApprovalStateOwnClient(t *testing.T) {
	_, url := approvalServer(t, time.Minute)
	asker := func(token string) *mcp.ClientSession {
		tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token: token, rt: http.DefaultTransport}}}
		c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // the test answers itself
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("not called: multi round-trip is the test's")
			}})
		cs, err := c.Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	a, b := asker(tokenA), asker(tokenB)
	args := map[string]any{"code": `return await tools.ev.echo({ message: "mine" })`}
	res, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: args})
	if err != nil || !res.NeedsInput() || res.RequestState == "" || res.InputRequests[approvalInput] == nil {
		t.Fatalf("no input request: %v %+v", err, res)
	}
	accept := mcp.InputResponseMap{approvalInput: &mcp.ElicitResult{Action: "accept"}}
	stolen, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: args, RequestState: res.RequestState, InputResponses: accept})
	if err != nil || !stolen.IsError || !strings.Contains(text(stolen), "unknown or was not answered in time") {
		t.Errorf("another client's retry: %v %s", err, text(stolen))
	}
	done, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: args, RequestState: res.RequestState, InputResponses: accept})
	if err != nil || done.IsError || !strings.Contains(text(done), "Echo: mine") {
		t.Errorf("the asker's retry: %v %s", err, text(done))
	}
}

// A rule's condition sees the client: over HTTP, "token:" and the first 16
// hex digits of its token's SHA-256. Token A's executions may echo, token
// B's may not.
func TestRuleSeesClient(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	sum := sha256.Sum256([]byte(tokenA))
	ev := everything(t)
	ev.Rules = []config.CallRule{{Tools: []string{"echo"}, AllowIf: `client.name == "token:` + hex.EncodeToString(sum[:8]) + `" && execution.language == "ts"`}}
	s := newServer(t, func(c *config.Config) { c.Servers = map[string]config.Server{"ev": ev} })
	url := serveHTTP(t, s)
	for token, want := range map[string]string{tokenA: `"Echo: x"`, tokenB: "refused"} {
		_, out := execute(t, connectHTTP(t, url, token, ""), map[string]any{
			"code": `try { return await tools.ev.echo({ message: "x" }) } catch (e) { return "refused: " + e.message }`})
		if out == nil || !strings.Contains(string(out.Result), want) {
			t.Errorf("token %.6s: %+v, want %q", token, out, want)
		}
	}
}
