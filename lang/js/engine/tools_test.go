package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
)

// toolsFunc is a Tools of the test's own: the engine's side of the
// protocol, without a channel (the real one is tested through crucible run).
type toolsFunc func(req map[string]any) ([]byte, error)

func (f toolsFunc) Do(_ context.Context, req []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(req, &m); err != nil {
		return nil, err
	}
	return f(m)
}

// The tools global: a call by the declarations' name goes out under the
// tool's own (mapped as jsname.Tools maps it), calls run in parallel,
// an error answer is an Error with its kind, and nothing but a call makes
// a request (await, JSON and console look at properties too).
func TestTools(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	tools := toolsFunc(func(req map[string]any) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		tool, _ := req["tool"].(string)
		asked = append(asked, req["method"].(string)+" "+tool)
		switch {
		case req["method"] == "list":
			return []byte(`[{"server":"ev","name":"get-sum","js_name":"get_sum"},{"server":"ev","name":"echo","js_name":"echo"}]`), nil
		case req["tool"] == "echo":
			return json.Marshal(req["args"])
		}
		return nil, &ToolError{Kind: "limit", Message: "no more calls"}
	})
	out, stdout := run(t, `
await tools.ev; JSON.stringify(tools); JSON.stringify(tools.ev); String(tools.ev.then);
const [e, s] = await Promise.all([tools.ev.echo({ n: 1 }), tools.ev.get_sum({ a: 1 }).catch((e) => [e instanceof Error, e.kind, e.message])]);
return [e, s];
`, false, Options{Tools: tools})
	if out.Error != nil || !sameJSON(out.Result, []byte(`[{"n":1},[true,"limit","no more calls"]]`)) {
		t.Fatalf("%+v %s %s", out.Error, out.Result, stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	calls := map[string]int{}
	for _, a := range asked {
		calls[a]++
	}
	if len(asked) != 3 || calls["list "] != 1 || calls["call echo"] != 1 || calls["call get-sum"] != 1 {
		t.Errorf("requests: %q", asked)
	}

	// Without tools, a call says so; there are no APIs to list.
	result(t, `return await tools.call("ev", "echo", {}).catch((e) => e.message)`, false, `"`+noTools+`"`)
	result(t, `return await tools.apis()`, false, `[]`)
}

// tools.apis() asks the channel for the APIs, with its query if it has one.
func TestToolsAPIs(t *testing.T) {
	tools := toolsFunc(func(req map[string]any) ([]byte, error) {
		return json.Marshal(req)
	})
	out, stdout := run(t, `return [await tools.apis(), await tools.apis("create issue")]`, false, Options{Tools: tools})
	if out.Error != nil || !sameJSON(out.Result, []byte(`[{"method":"apis"},{"method":"apis","query":"create issue"}]`)) {
		t.Fatalf("%+v %s %s", out.Error, out.Result, stdout)
	}
}
