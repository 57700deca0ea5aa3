package toolbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"

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

// refuses returns why p refuses tool, or "".
func (p *Policy) refuses(tool string) string {
	for _, g := range p.Deny {
		if ok, _ := path.Match(g, tool); ok {
			return fmt.Sprintf("tool %s is denied by this server's policy (rule %q)", tool, g)
		}
	}
	if len(p.Allow) == 0 {
		return ""
	}
	for _, g := range p.Allow {
		if ok, _ := path.Match(g, tool); ok {
			return ""
		}
	}
	return fmt.Sprintf("tool %s is not in this server's allow list; tools.list() shows the tools allowed", tool)
}

func checkGlobs(p Policy) error {
	for _, g := range append(append([]string{}, p.Allow...), p.Deny...) {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("tool pattern %q is malformed", g)
		}
	}
	return nil
}

// objectArgs returns args as the JSON object a call sends: empty or null
// is {}; anything but an object is an error.
func objectArgs(args []byte) ([]byte, error) {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || string(t) == "null" {
		return []byte("{}"), nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errors.New("the arguments must be a JSON object")
	}
	return t, nil
}
