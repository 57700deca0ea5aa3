package toolbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/callrule"
	"github.com/cruciblehq/crucible/violation"
)

// KindApproval is a call that a rule says a human must approve, and that
// no human did.
const KindApproval = violation.Approval

// DefaultApprovalTimeout is how long a call waits for a human's answer
// when its server's Policy.ApprovalTimeout is zero.
const DefaultApprovalTimeout = 2 * time.Minute

// maxApprovalArgs bounds the arguments an approval shows: a human reads
// them, and the program chose them.
const maxApprovalArgs = 2 << 10

// Caller is who an execution runs for: what the rules' conditions see of
// it, and who approves its calls.
type Caller struct {
	Client   string // the client's name; "" where there is none
	Profile  string // the client's profile; "" where there are none
	Language string // the program's language; "" for a command
	// Approve asks a human about a call that a rule says must be
	// approved; nil: there is no one to ask, and such calls are refused.
	Approve Approver
}

// Approver asks a human whether a call may go out. It returns the answer,
// or when ctx is done (the approval's time is up, or the execution ended)
// whatever it has: the session then counts no answer as a timeout.
type Approver func(ctx context.Context, a Approval) Answer

// Approval is a call for a human to approve.
type Approval struct {
	Server, Tool string
	// Args are the call's arguments for a human to read: JSON whose every
	// character past ASCII is escaped (no look-alike letters, no text
	// turned around), the server's own credentials and paths redacted, cut
	// to 2 KiB.
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
// them (empty or null is {}), which the audit trail records instead of
// the arguments themselves.
func ArgsHash(args []byte) string {
	if a, err := objectArgs(args); err == nil {
		args = a
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
func (s *Session) approve(ctx context.Context, srv *server, tool string, args []byte, d callrule.Decision) error {
	s.mu.Lock()
	ask := s.caller.Approve
	s.mu.Unlock()
	a := Approval{
		Server: srv.name, Tool: tool, Args: srv.shownArgs(args), ArgsHash: ArgsHash(args),
		Rule: d.Rule, Reason: d.Reason, Timeout: srv.cfg.Policy.ApprovalTimeout,
	}
	ans := Answer{Action: Unasked, Why: "nothing here can ask a human"}
	if ask != nil {
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

// shownArgs is args as an Approval shows them.
func (s *server) shownArgs(args []byte) string {
	b, err := s.redactJSON(args)
	if err != nil {
		return "(arguments that are not JSON)"
	}
	var out strings.Builder
	for _, r := range string(b) {
		if out.Len() >= maxApprovalArgs {
			return out.String() + fmt.Sprintf("... (cut: %d bytes of JSON in all)", len(b))
		}
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
