// Package callrule is the policy on what a tool call does, not only which
// tool it calls: a server's rules, in order, each naming tools by glob and
// allowing a call only if a CEL condition over its arguments holds
// (cel.dev/cel-go), and, if the rule says so, only once a human approves
// it. The first rule whose tools match the call decides; a call no rule
// matches goes on to the server's tool lists.
//
// Conditions are type-checked, and their cost estimated, when the
// configuration loads; at a call, an evaluation that errs (a field that is
// missing, a number sent as a string, a comparison of two types) or runs
// past the cost limit refuses the call: fail closed, naming the rule.
package callrule

import (
	"errors"
	"fmt"
	"time"

	"cel.dev/cel-go/cel"
	"github.com/cruciblehq/crucible/policy/cond"
	"github.com/cruciblehq/crucible/policy/glob"
	"github.com/cruciblehq/crucible/toolargs"
)

// Rule is one rule as the configuration writes it.
type Rule struct {
	Tools   []string // globs of tool names (package glob)
	AllowIf string   // a CEL condition; the call is refused when it is false
	// Approve: a call the condition allows (or every call, without one)
	// goes out only once a human approves it.
	Approve bool
	Reason  string // said to the code when the rule refuses a call
}

// The variables a condition sees. args is the call's arguments as JSON
// values, exactly as the server gets them (package toolargs: an integer
// is an int, a number with a fraction a double); tool its server and name; client the name and profile of the
// client whose execution calls ("" where there is none: crucible run);
// execution.calls the tool calls the execution has made before this one,
// execution.language its language ("" for a command); now the time of the
// call.
var env = cond.NewEnv(
	cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("tool", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("client", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("execution", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("now", cel.TimestampType),
)

// Compiled is a rule ready to decide calls.
type Compiled struct {
	index   int
	tools   glob.Set
	reason  string
	approve bool
	cond    *cond.Cond // nil: no condition
}

// Error is a rule that does not load: its index, and, for its condition,
// the column (1-based, 0 when unknown) and what CEL says.
type Error struct {
	Rule   int
	Field  string // "tools" or "allow_if"
	Column int
	Msg    string
}

func (e *Error) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("rules[%d].%s, column %d: %s", e.Rule, e.Field, e.Column, e.Msg)
	}
	return fmt.Sprintf("rules[%d].%s: %s", e.Rule, e.Field, e.Msg)
}

// Compile loads rules; the error, an *Error, names the first that does not.
func Compile(rules []Rule) ([]*Compiled, error) {
	var out []*Compiled
	for i, r := range rules {
		if len(r.Tools) == 0 {
			return nil, &Error{Rule: i, Field: "tools", Msg: "names no tool (give globs of tool names)"}
		}
		tools, err := glob.CompileAll(r.Tools)
		if err != nil {
			return nil, &Error{Rule: i, Field: "tools", Msg: err.Error()}
		}
		c := &Compiled{index: i, tools: tools, reason: r.Reason, approve: r.Approve}
		if r.AllowIf == "" {
			if r.Approve {
				out = append(out, c) // a human decides every call it names
				continue
			}
			return nil, &Error{Rule: i, Field: "allow_if", Msg: "is empty (give a condition, e.g. args.owner == \"acme\", or approve: true)"}
		}
		if c.cond, err = env.Compile(r.AllowIf); err != nil {
			e := &Error{Rule: i, Field: "allow_if", Msg: err.Error()}
			if ce := (*cond.Error)(nil); errors.As(err, &ce) {
				e.Column, e.Msg = ce.Column, ce.Msg
			}
			return nil, e
		}
		out = append(out, c)
	}
	return out, nil
}

// Call is what a condition is evaluated over.
type Call struct {
	Server, Tool string
	Args         *toolargs.Args // as the server gets them; nil is {}
	Client       string         // who asked: a client's name, "" for none
	Profile      string         // the client's profile, "" for none
	Language     string         // the execution's language, "" for a command
	Calls        int            // the execution's calls before this one
	Now          time.Time
}

// Decision is what the rules say of a call: Refused (why), or, when it is
// "", the call may go out, after a human's approval if Approve.
type Decision struct {
	Refused string
	Approve bool
	Rule    int    // the rule that decided, -1 for none
	Reason  string // the rule's reason, if it gave one
}

// Decide applies the rules to c: the first whose tools match it decides.
func Decide(rules []*Compiled, c Call) Decision {
	for _, r := range rules {
		if r.tools.Match(c.Tool) == nil {
			continue
		}
		d := Decision{Rule: r.index, Reason: r.reason}
		if r.cond == nil {
			d.Approve = true
			return d
		}
		ok, err := r.allows(c)
		switch {
		case err != nil:
			d.Refused = fmt.Sprintf("tool %s is refused: the condition of rule %d of this server (%s) could not be evaluated for these arguments: %v", c.Tool, r.index, r.cond.Expr, err)
		case !ok:
			why := r.reason
			if why == "" {
				why = "its condition " + r.cond.Expr + " is false for these arguments"
			}
			d.Refused = fmt.Sprintf("tool %s is refused by rule %d of this server: %s", c.Tool, r.index, why)
		default:
			d.Approve = r.approve
		}
		return d
	}
	return Decision{Rule: -1}
}

func (r *Compiled) allows(c Call) (bool, error) {
	args := map[string]any{}
	if c.Args != nil {
		args = c.Args.Map()
	}
	return r.cond.Holds(map[string]any{
		"args":      args,
		"tool":      map[string]string{"server": c.Server, "name": c.Tool},
		"client":    map[string]string{"name": c.Client, "profile": c.Profile},
		"execution": map[string]any{"calls": int64(c.Calls), "language": c.Language},
		"now":       c.Now,
	})
}
