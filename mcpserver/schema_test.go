package mcpserver

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/cruciblehq/crucible/config"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from what was generated (go test -update rewrites it):\n%s", path, got)
	}
}

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
			golden(t, name, string(b)+"\n")
		}
		return
	}
	t.Fatal("tools/list has no execute")
}
