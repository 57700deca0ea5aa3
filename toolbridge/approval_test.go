package toolbridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/policy/callrule"
	"github.com/cruciblehq/crucible/toolargs"
)

// approvalBridge is the test server with one rule: deletions need a human,
// echo is allowed only for "hi" and then needs one too.
func approvalBridge(t *testing.T, calls int, timeout time.Duration) *Bridge {
	srv := goServer(t)
	srv.Policy = Policy{ApprovalTimeout: timeout, Rules: []callrule.Rule{
		{Tools: []string{"*/delete_*", "delete_*"}, Approve: true, Reason: "deletions need a human"},
		{Tools: []string{"echo"}, AllowIf: `args.text == "hi"`, Approve: true},
	}}
	return newBridge(t, Options{Servers: map[string]Server{"go": srv}, Limits: Limits{Calls: calls}})
}

// Each answer a human may give, and no human at all: only accept lets the
// call out; the others are refusals of kind approval that say why.
func TestApprovalAnswers(t *testing.T) {
	b := approvalBridge(t, 50, time.Minute)
	for _, c := range []struct {
		answer Answer
		want   string // "" for the call's result
	}{
		{Answer{Action: Accept}, ""},
		{Answer{Action: Decline}, "the human declined it"},
		{Answer{Action: Cancel}, "dismissed the request"},
		{Answer{Action: Unasked, Why: "the client cannot be asked"}, "no one could be asked: the client cannot be asked"},
		{Answer{Action: "maybe"}, `the answer was "maybe"`},
	} {
		s := b.NewSession()
		var asked []Approval
		s.SetCaller(Caller{Client: "alice", Approve: func(_ context.Context, a Approval) Answer {
			asked = append(asked, a)
			return c.answer
		}})
		out, err := call(t, s, "go", "echo", ` {"text": "hi"}`)
		if c.want == "" {
			if err != nil || out != `"hi"` {
				t.Fatalf("%s: %q, %v", c.answer.Action, out, err)
			}
		} else {
			wantRefusal(t, err, KindApproval, c.want)
			wantRefusal(t, err, KindApproval, "tool echo needs a human's approval (rule 1 of this server), and was refused: ")
		}
		want := Approval{Server: "go", Tool: "echo", Args: `text: "hi"`, ArgsHash: ArgsHash([]byte(`{"text": "hi"}`)), Rule: 1, Timeout: time.Minute}
		if len(asked) != 1 || asked[0] != want {
			t.Errorf("%s: asked %+v, want once %+v", c.answer.Action, asked, want)
		}
	}

	// A condition that refuses asks no one.
	s := b.NewSession()
	s.SetCaller(Caller{Approve: func(context.Context, Approval) Answer {
		t.Error("asked about a call the condition refuses")
		return Answer{Action: Accept}
	}})
	_, err := call(t, s, "go", "echo", `{"text": "bye"}`)
	wantRefusal(t, err, KindTool, "rule 1 of this server")

	// Without an approver, nothing goes out.
	_, err = call(t, b.NewSession(), "go", "delete_/x", `{}`)
	wantRefusal(t, err, KindApproval, "tool delete_/x needs a human's approval (rule 0 of this server: deletions need a human), and was refused: no one could be asked: nothing here can ask a human")
}

// A human who does not answer in time: the call is refused as a timeout
// (whatever the approver returns once its time is up).
func TestApprovalTimeout(t *testing.T) {
	b := approvalBridge(t, 50, 100*time.Millisecond)
	s := b.NewSession()
	s.SetCaller(Caller{Approve: func(ctx context.Context, _ Approval) Answer {
		<-ctx.Done()
		return Answer{Action: Cancel}
	}})
	_, err := call(t, s, "go", "echo", `{"text": "hi"}`)
	wantRefusal(t, err, KindApproval, "no answer came within 100ms (servers.go.approval_timeout)")
}

// A program that asks in a loop, many calls at once: one question at a
// time reaches the human, and the calls past max_calls are refused as a
// limit without asking anyone.
func TestApprovalBounded(t *testing.T) {
	const limit = 5
	b := approvalBridge(t, limit, time.Minute)
	s := b.NewSession()
	var asking, most, asked atomic.Int32
	s.SetCaller(Caller{Approve: func(context.Context, Approval) Answer {
		n := asking.Add(1)
		defer asking.Add(-1)
		if n > most.Load() {
			most.Store(n)
		}
		asked.Add(1)
		time.Sleep(10 * time.Millisecond)
		return Answer{Action: Decline}
	}})
	var wg sync.WaitGroup
	var limited atomic.Int32
	for range 4 * limit {
		wg.Go(func() {
			_, err := s.Call(testCtx(t), "go", "delete_/x", []byte(`{}`))
			if r := (*Refusal)(nil); errors.As(err, &r) && r.Kind == KindLimit {
				limited.Add(1)
			}
		})
	}
	wg.Wait()
	if asked.Load() != limit || most.Load() != 1 || limited.Load() != 3*limit {
		t.Errorf("asked %d (at most %d at once), %d refused as a limit; want %d, 1, %d", asked.Load(), most.Load(), limited.Load(), limit, 3*limit)
	}
}

// What a human is shown of the arguments cannot pass for something else:
// a line for each value, every character past ASCII escaped (look-alikes,
// text turned around, line separators), and a long value cut on its own.
func TestApprovalShownArgs(t *testing.T) {
	b := approvalBridge(t, 50, time.Minute)
	srv := b.servers["go"].listing()
	for _, c := range []struct{ args, want string }{
		{`{}`, `(none)`},
		{`{"n": 1234567890123456, "f": 1e2, "z": null, "b": false}`, "n: 1234567890123456\nf: 100.0\nz: null\nb: false"},
		{`{"repo": "аcme"}`, `repo: "\u0430cme"`},                    // a Cyrillic a
		{`{"repo": "x\u202eevil"}`, `repo: "x\u202eevil"`},           // right-to-left override
		{`{"t": "a\u2028Approve: yes"}`, `t: "a\u2028Approve: yes"`}, // a line separator
		{`{"t": "a\nApprove: yes"}`, `t: "a\nApprove: yes"`},         // a line break
		{`{"t": "` + "\U0001F600" + `"}`, `t: "\ud83d\ude00"`},       // outside the BMP
		{`{"t": "<b>` + canary + `</b>"}`, `t: "<b>[redacted]</b>"`}, // the server's own credential
		{`{"o": {"a b": [1, {"c": []}], "": {}}}`, "o[\"a b\"][0]: 1\no[\"a b\"][1].c: []\no[\"\"]: {}"},
		{`{"k\nx: \"fake\"": 1}`, `["k\nx: \"fake\""]: 1`}, // a key cannot pass for a line of its own
	} {
		a, err := toolargs.Parse([]byte(c.args))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := srv.shownArgs(a); got != c.want || err != nil {
			t.Errorf("shownArgs(%s) = %s, %v; want %s", c.args, got, err, c.want)
		}
	}
}

// The attack on the approval view: padding in one value that pushes the
// value that matters out of sight. Each value is cut on its own, so the
// path the server will read is always shown; arguments with too many
// values to show are refused, not shown in part; and the human is never
// asked about them.
func TestApprovalPadding(t *testing.T) {
	b := approvalBridge(t, 50, time.Minute)
	srv := b.servers["go"].listing()
	pad := strings.Repeat("A", 3000)
	a, err := toolargs.Parse([]byte(`{"!": "` + pad + `", "path": "/etc/shadow", "tail": "` + pad + `/etc/passwd"}`))
	if err != nil {
		t.Fatal(err)
	}
	shown, err := srv.shownArgs(a)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(shown, "\n")
	if len(lines) != 3 || lines[1] != `path: "/etc/shadow"` || !strings.HasSuffix(lines[2], `AAA/etc/passwd"`) ||
		!strings.Contains(lines[0], "bytes not shown") || len(shown) > 1024 {
		t.Errorf("the padded arguments are shown as %d bytes:\n%s", len(shown), shown)
	}

	many := `{"path": "/etc/shadow"`
	for i := range maxShownValues {
		many += fmt.Sprintf(`, "k%d": %d`, i, i)
	}
	s := b.NewSession()
	s.SetCaller(Caller{Approve: func(context.Context, Approval) Answer {
		t.Error("a human was asked about arguments that cannot be shown in full")
		return Answer{Action: Accept}
	}})
	_, err = call(t, s, "go", "delete_/x", many+"}")
	wantRefusal(t, err, KindApproval, "more than a human can be shown one by one")
}
