package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Tools carries the program's tools.* calls out of the engine, to the
// execution's tools channel (the worker's client of it).
type Tools interface {
	// Do sends one request of the tools protocol, a JSON object without
	// its id ({"method":"call",...}), and returns its result's JSON. An
	// error answer is a *ToolError; any other error's text is shown to
	// the program.
	Do(ctx context.Context, req []byte) ([]byte, error)
}

// ToolError is an error answer of the tools channel: its kind ("tool",
// "limit" or "error") and message, which the program's Error carries.
type ToolError struct {
	Kind, Message string
}

func (e *ToolError) Error() string { return e.Message }

// noTools is the error of a tools.* call in an execution without tools.
const noTools = "no tools are configured: the configuration of this execution has no servers"

// toolRequest is the part of a request the engine reads: a call by a
// tool's JavaScript name (tools.<server>.<name>(args)) is turned into one by
// its own name first.
type toolRequest struct {
	Method string          `json:"method"`
	Server string          `json:"server,omitempty"`
	Tool   string          `json:"tool,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	URI    string          `json:"uri,omitempty"`
}

// toolNames maps each server's tools from the names the program calls them
// by (js_name in the bridge's list, as the declarations have them) to their
// own; listed once, on the first call by such a name.
type toolNames struct {
	mu     sync.Mutex
	byName map[string]map[string]string // server -> JS name -> tool
}

func (n *toolNames) resolve(ctx context.Context, t Tools, server, js string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byName == nil {
		b, err := t.Do(ctx, []byte(`{"method":"list"}`))
		if err != nil {
			return "", err
		}
		var list []struct {
			Server, Name string
			JSName       string `json:"js_name"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			return "", fmt.Errorf("listing the tools: %w", err)
		}
		n.byName = map[string]map[string]string{}
		for _, tool := range list {
			if n.byName[tool.Server] == nil {
				n.byName[tool.Server] = map[string]string{}
			}
			n.byName[tool.Server][tool.JSName] = tool.Name
		}
	}
	if tool, ok := n.byName[server][js]; ok {
		return tool, nil
	}
	return js, nil // the bridge says what is wrong with it
}

// startTool starts a tools.* request and returns its id; the prelude's
// dispatcher hears of it as ("tool", id, true, result JSON) or ("tool", id,
// false, {kind, message} JSON). tool(request, byJSName).
func (r *Runtime) startTool(a []any) (any, error) {
	req := []byte(argString(a, 0))
	tools := r.o.Tools
	if tools == nil {
		// Without a channel there are no tools, and no APIs to list.
		var q toolRequest
		if json.Unmarshal(req, &q) != nil || q.Method != "apis" {
			return nil, errors.New(noTools)
		}
		tools = noAPIs{}
	}
	if r.busy >= maxFetches {
		return nil, fmt.Errorf("more than %d tool calls and fetches in flight", maxFetches)
	}
	byJS := argBool(a, 1)
	r.toolSeq++
	id := r.toolSeq
	r.busy++
	go func() {
		out, err := r.doTool(tools, req, byJS)
		r.post(func() {
			r.busy--
			if err != nil {
				te := &ToolError{Kind: "error", Message: err.Error()}
				errors.As(err, &te)
				b, _ := json.Marshal(map[string]string{"kind": te.Kind, "message": te.Message})
				_ = r.call("tool", id, false, string(b))
				return
			}
			_ = r.call("tool", id, true, string(out))
		})
	}()
	return id, nil
}

func (r *Runtime) doTool(tools Tools, req []byte, byJS bool) ([]byte, error) {
	ctx := r.life
	if byJS {
		var q toolRequest
		if err := json.Unmarshal(req, &q); err != nil {
			return nil, err
		}
		tool, err := r.names.resolve(ctx, tools, q.Server, q.Tool)
		if err != nil {
			return nil, err
		}
		q.Tool = tool
		if req, err = json.Marshal(q); err != nil {
			return nil, err
		}
	}
	return tools.Do(ctx, req)
}

// noAPIs answers tools.apis() in an execution without a tools channel.
type noAPIs struct{}

func (noAPIs) Do(context.Context, []byte) ([]byte, error) { return []byte("[]"), nil }
