package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// Attack: tenant A stores a secret in a stateful MCP server (the real
// server-memory), and tenant B's program reads the server's whole graph.
// Each client has its own process of the server, and {client} gives each
// its own file: B finds nothing of A's; A finds its own again.
func TestAttackTenantMemory(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	node := testenv.NeedTool(t, "node")
	main, _ := filepath.Abs("../node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	if _, err := os.Stat(main); err != nil {
		testenv.Missing(t, "needs @modelcontextprotocol/server-memory (npm install at the repository's root)")
	}
	dir := t.TempDir()
	s := newServer(t, func(c *config.Config) {
		c.Servers = map[string]config.Server{"memory": {Command: node, Args: []string{main},
			Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "{client}.jsonl")}}}
	})
	url := serveHTTP(t, s)
	write := `await tools.memory.create_entities({ entities: [{ name: "launch-codes", entityType: "secret", observations: ["0000"] }] }); return "stored";`
	read := `return JSON.stringify(await tools.memory.read_graph({}));`
	if _, out := execute(t, connectHTTP(t, url, tokenA, ""), map[string]any{"code": write}); out == nil || string(out.Result) != `"stored"` {
		t.Fatalf("A's write: %+v", out)
	}
	_, out := execute(t, connectHTTP(t, url, tokenB, ""), map[string]any{"code": read})
	if out == nil || out.ExitCode != 0 || strings.Contains(string(out.Result), "launch-codes") {
		t.Errorf("B read A's memory: %+v", out)
	}
	_, out = execute(t, connectHTTP(t, url, tokenA, "2025-11-25"), map[string]any{"code": read})
	if out == nil || !strings.Contains(string(out.Result), "launch-codes") {
		t.Errorf("A lost its own memory: %+v", out)
	}
	// A's file, named by its key, holds it; no other does.
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), "token-") {
		t.Errorf("state files %q, want A's alone", files)
	}
}
