package toolbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cruciblehq/crucible/policy/callrule"
	"github.com/cruciblehq/crucible/toolargs"
	"github.com/cruciblehq/crucible/violation"
)

// KindApproval is a call that a rule says a human must approve, and that
// no human did.
const KindApproval = violation.Approval

// DefaultApprovalTimeout is how long a call waits for a human's answer
// when its server's Policy.ApprovalTimeout is zero.
const DefaultApprovalTimeout = 2 * time.Minute

// Caller is who an execution runs for: what the rules' conditions see of
// it, and who approves its calls.
type Caller struct {
	Client   string // the client's name; "" where there is none
	Profile  string // the client's profile; "" where there are none
	Language string // the program's language; "" for a command
	// Approve asks a human about a call that a rule says must be
	// approved; nil: there is no one to ask, and such calls are refused.
	Approve Approver
	// Login asks the client to log in to a server that needs a login of
	// the client's own, and says how it was asked, which the call's error
	// gets; nil, or "": nobody was asked.
	Login func(ctx context.Context, server string) string
	// Trace is the execution's span, the parent of its calls' spans (and
	// of the trace context a server gets); invalid: none.
	Trace trace.SpanContext
	// Elicit puts to the client's human what a server asks during a call
	// of the execution (an elicitation: a form, or a URL to open), and
	// returns the answer; nil: there is no one to ask, and the server is
	// told the request was cancelled.
	Elicit Elicitor
}

// Elicitor asks a human on a server's behalf; its params' message already
// names the server.
type Elicitor func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)

// Approver asks a human whether a call may go out. It returns the answer,
// or when ctx is done (the approval's time is up, or the execution ended)
// whatever it has: the session then counts no answer as a timeout.
type Approver func(ctx context.Context, a Approval) Answer

// Approval is a call for a human to approve.
type Approval struct {
	Server, Tool string
	// Args are the call's arguments for a human to read, as the server
	// gets them: a line for each value, its path and its JSON, every
	// character past ASCII escaped (no look-alike letters, no text turned
	// around), the server's own credentials and paths redacted, each
	// value cut on its own.
	Args     string
	ArgsHash string // ArgsHash of the arguments the server would get
	Rule     int    // the rule of the server's rules that asks
	Reason   string // the rule's reason; "" if it gives none
	Timeout  time.Duration
}

// Answers a human (or no human) gives.
const (
	Accept  = "accept"  // the call goes out
	Decline = "decline" // refused by the human
	Cancel  = "cancel"  // dismissed without a choice
	Timeout = "timeout" // no answer in time
	Unasked = "unasked" // there was no one to ask
)

// Answer is the outcome of an Approval: Action is one of the answers
// above; Why, for Unasked, says why no one could be asked, and what would
// ask them (the refusal says it), and for an answer no human gave, what
// gave it (the audit trail says it).
type Answer struct {
	Action string
	Why    string
}

// ArgsHash is the hex SHA-256 of a call's arguments as the server gets
// them (package toolargs re-encodes them; arguments it refuses are hashed
// as they came), which the audit trail records instead of
// the arguments themselves.
func ArgsHash(args []byte) string {
	if a, err := toolargs.Parse(args); err == nil {
		args = a.JSON()
	}
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}

// SetCaller says whom the session's execution runs for, before its first
// call.
func (s *Session) SetCaller(c Caller) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caller = c
}

// approve asks the caller's human about a call that rule d says must be
// approved, one question of the execution at a time, and returns nil if
// they accept, else the refusal.
func (s *Session) approve(ctx context.Context, srv *server, tool string, args *toolargs.Args, d callrule.Decision) error {
	s.mu.Lock()
	ask := s.caller.Approve
	s.mu.Unlock()
	shown, err := srv.shownArgs(args)
	sum := sha256.Sum256(args.JSON())
	a := Approval{
		Server: srv.name, Tool: tool, Args: shown, ArgsHash: hex.EncodeToString(sum[:]),
		Rule: d.Rule, Reason: d.Reason, Timeout: srv.cfg.Policy.ApprovalTimeout,
	}
	ans := Answer{Action: Unasked, Why: "nothing here can ask a human"}
	switch {
	case err != nil:
		ans.Why = err.Error()
	case ask != nil:
		// One question at a time: a program that asks in a loop waits
		// its turn (each call counted already), and nothing queues at
		// the human.
		select {
		case s.asking <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("%s.%s: the execution ended while the call waited to be approved", srv.name, tool)
		}
		actx, cancel := context.WithTimeout(ctx, a.Timeout)
		ans = ask(actx, a)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		<-s.asking
		if ans.Action != Accept && timedOut && ctx.Err() == nil {
			ans = Answer{Action: Timeout}
		}
	}
	if ans.Action == Accept {
		return nil
	}
	rule := fmt.Sprintf("rule %d of this server", d.Rule)
	if d.Reason != "" {
		rule += ": " + d.Reason
	}
	var why string
	switch ans.Action {
	case Decline:
		why = "the human declined it"
	case Cancel:
		why = "the human dismissed the request without approving it"
	case Timeout:
		why = fmt.Sprintf("no answer came within %v (servers.%s.approval_timeout)", a.Timeout, srv.name)
	case Unasked:
		why = "no one could be asked: " + ans.Why
	default:
		why = fmt.Sprintf("the answer was %q, not an approval", ans.Action)
	}
	return refusef(KindApproval, srv.name, tool, "tool %s needs a human's approval (%s), and was refused: %s", tool, rule, why)
}

// What an approval shows of the arguments: a line for each value, every
// key's and every element's, each cut on its own, so that no value, however
// long, pushes another out of sight.
const (
	maxShownValues = 100 // past it, the arguments are not shown: refused
	maxShownPath   = 120 // bytes of a value's path shown
	shownHead      = 160 // bytes shown of the start of a long value
	shownTail      = 80  // and of its end
)

// shownArgs is args as an Approval shows them: a line for each value,
// named by its path (owner, opts.path, items[0], ["a key"]) and written
// as the server gets it, but for the server's own credentials and paths
// (redacted); every character past ASCII escaped (no look-alike
// letters, no text turned around, no line breaks). Arguments with more
// values than a human can read one by one are an error: what cannot be
// shown in full is not put to a human.
func (s *server) shownArgs(args *toolargs.Args) (string, error) {
	var lines []string
	add := func(path, value string) error {
		if len(lines) == maxShownValues {
			return fmt.Errorf("the arguments hold more than %d values, more than a human can be shown one by one", maxShownValues)
		}
		lines = append(lines, ascii(cut(path, maxShownPath, 0))+": "+ascii(cut(value, shownHead, shownTail)))
		return nil
	}
	var walk func(path string, v any) error
	walk = func(path string, v any) error {
		switch v := v.(type) {
		case toolargs.Object:
			if len(v) == 0 {
				return add(path, "{}")
			}
			for _, m := range v {
				if err := walk(pathTo(path, s.redact.Replace(m.Key)), m.Value); err != nil {
					return err
				}
			}
			return nil
		case []any:
			if len(v) == 0 {
				return add(path, "[]")
			}
			for i, x := range v {
				if err := walk(fmt.Sprintf("%s[%d]", path, i), x); err != nil {
					return err
				}
			}
			return nil
		case string:
			return add(path, string(toolargs.AppendString(nil, s.redact.Replace(v))))
		}
		return add(path, string(toolargs.Append(nil, v)))
	}
	if len(args.Members()) == 0 {
		return "(none)", nil
	}
	if err := walk("", args.Members()); err != nil {
		return "", err
	}
	return strings.Join(lines, "\n"), nil
}

// pathTo is the path of key in the object at path: .key for a plain
// name, else ["key"].
func pathTo(path, key string) string {
	plain := key != ""
	for i, r := range key {
		plain = plain && (r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9')
	}
	switch {
	case !plain:
		return path + "[" + string(toolargs.AppendString(nil, key)) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// cut is s with its middle left out past head+tail bytes (with tail 0,
// its end), saying how much.
func cut(s string, head, tail int) string {
	if len(s) <= head+tail+32 {
		return s
	}
	h, t := head, len(s)-tail
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return fmt.Sprintf("%s ...(%d bytes not shown)... %s", s[:h], t-h, s[t:])
}

// ascii escapes every character of s past printable ASCII, as JSON does.
func ascii(s string) string {
	var out strings.Builder
	for _, r := range s {
		switch {
		case r >= 0x20 && r < 0x7f:
			out.WriteRune(r)
		case r > 0xffff:
			// JSON spells it as a surrogate pair.
			r -= 0x10000
			fmt.Fprintf(&out, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return out.String()
}
