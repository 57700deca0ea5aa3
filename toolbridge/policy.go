package toolbridge

import (
	"fmt"

	"github.com/cruciblehq/crucible/policy/callrule"
	"github.com/cruciblehq/crucible/policy/glob"

	"github.com/cruciblehq/crucible/violation"
)

// Kinds of refusal, as violations name them.
const (
	KindTool  = violation.Tool  // the policy: a denied tool, another group
	KindLimit = violation.Limit // the limits: calls, sizes, the per-call timeout
)

// Refusal is a call the bridge did not make, or stopped. Its text is the
// reason, written for the model to act on.
type Refusal struct {
	Kind   string // KindTool or KindLimit
	Server string
	Tool   string // "" for a resource read
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

func refusef(kind, server, tool, format string, args ...any) error {
	return &Refusal{Kind: kind, Server: server, Tool: tool, Reason: fmt.Sprintf(format, args...)}
}

// ToolError is a tool's own report of failure (isError), with the server's
// message, redacted.
type ToolError struct {
	Server, Tool string
	Message      string
}

func (e *ToolError) Error() string { return e.Server + "." + e.Tool + ": " + e.Message }

// rules is a Policy compiled: its globs, and what it says of resources.
type rules struct {
	allow, deny       glob.Set // tools
	resAllow, resDeny glob.Set // resource URIs
	noResources       bool     // no resource may be read
	rulesOnly         bool     // the server has rules: only resources.allow opens a resource
	calls             []*callrule.Compiled
}

func compileRules(p Policy) (*rules, error) {
	var r rules
	var err error
	if r.calls, err = callrule.Compile(p.Rules); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		set  *glob.Set
		list []string
	}{{&r.allow, p.Allow}, {&r.deny, p.Deny}} {
		if *c.set, err = glob.CompileAll(c.list); err != nil {
			return nil, fmt.Errorf("tool %w", err)
		}
	}
	// A server whose tools are listed one by one, or whose calls are
	// judged by rules, has its resources closed too unless they are
	// listed: a denied read_file must not come back as a read of
	// file:///..., and no rule judges a resource read.
	r.rulesOnly = len(p.Rules) > 0
	if p.Resources == nil {
		r.noResources = len(p.Allow) > 0 || r.rulesOnly
		return &r, nil
	}
	for _, c := range []struct {
		set  *glob.Set
		list []string
	}{{&r.resAllow, p.Resources.Allow}, {&r.resDeny, p.Resources.Deny}} {
		if *c.set, err = glob.CompileAll(c.list); err != nil {
			return nil, fmt.Errorf("resource %w", err)
		}
	}
	return &r, nil
}

// refuses returns why the rules refuse tool, or "".
func (r *rules) refuses(tool string) string {
	if (len(r.allow) > 0 || len(r.deny) > 0 || len(r.calls) > 0) && !glob.Clean(tool) {
		return fmt.Sprintf("tool %q has a name that this server's policy cannot match cleanly (only printable ASCII, no space)", tool)
	}
	if g := r.deny.Match(tool); g != nil {
		return fmt.Sprintf("tool %s is denied by this server's policy (rule %q)", tool, g)
	}
	if len(r.allow) == 0 || r.allow.Match(tool) != nil {
		return ""
	}
	return fmt.Sprintf("tool %s is not in this server's allow list; tools.list() shows the tools allowed", tool)
}

// closedByRules is why a server with rules reads no resource that
// resources.allow does not name.
const closedByRules = "this server's resources are not open to the code: its calls are judged by rules, which cannot judge a resource read, and resources.allow does not list its resources"

// refusesResource returns why the rules refuse reading uri, or "".
func (r *rules) refusesResource(uri string) string {
	switch {
	case r.noResources && r.rulesOnly:
		return closedByRules
	case r.noResources:
		return "this server's resources are not open to the code: its tools are listed one by one (tools.allow), and its resources are not (resources.allow)"
	case (len(r.resAllow) > 0 || len(r.resDeny) > 0) && !glob.Clean(uri):
		return fmt.Sprintf("resource %q has a URI that this server's policy cannot match cleanly (only printable ASCII, no space)", uri)
	}
	if g := r.resDeny.Match(uri); g != nil {
		return fmt.Sprintf("resource %s is denied by this server's policy (rule %q)", uri, g)
	}
	switch {
	case r.resAllow.Match(uri) != nil:
		return ""
	case len(r.resAllow) == 0 && r.rulesOnly:
		return closedByRules
	case len(r.resAllow) == 0:
		return ""
	}
	return fmt.Sprintf("resource %s is not in this server's resources.allow list", uri)
}
