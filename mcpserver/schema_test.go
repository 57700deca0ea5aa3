package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// The schemas of execute that a client reads in tools/list: what the
// model is told of its arguments and of its structured result.
func TestExecuteSchemas(t *testing.T) {
	cs := connect(t, newServer(t, func(c *config.Config) { c.Serve.Pool = 0 }))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "execute" {
			continue
		}
		for name, s := range map[string]any{"execute_input_schema.json": tool.InputSchema, "execute_output_schema.json": tool.OutputSchema} {
			b, err := json.MarshalIndent(s, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			testenv.Golden(t, name, string(b)+"\n")
		}
		return
	}
	t.Fatal("tools/list has no execute")
}
