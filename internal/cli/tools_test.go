package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// memoryServer writes a crucible.yaml whose servers are the real
// server-memory from npm, plus extra lines, and returns its path.
func memoryServer(t *testing.T, extra string) string {
	t.Helper()
	node := testenv.NeedTool(t, "node")
	main, _ := filepath.Abs("../../node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	if _, err := os.Stat(main); err != nil {
		testenv.Missing(t, "needs @modelcontextprotocol/server-memory (npm install at the repository's root)")
	}
	dir := t.TempDir()
	yaml := "servers:\n  memory:\n    command: " + node + "\n    args: [" + main + "]\n" +
		"    env: {MEMORY_FILE_PATH: " + filepath.Join(dir, "m.jsonl") + "}\n" +
		"    tools: {deny: [delete_*]}\n" + extra
	path := filepath.Join(dir, "crucible.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestToolsCommand(t *testing.T) {
	cfg := memoryServer(t, "")
	code, out, errs := run(t, "", "tools", "--config", cfg)
	if code != ExitOK || !strings.HasPrefix(out, "SERVER  TOOL") || !strings.Contains(out, "memory  create_entities") || strings.Contains(out, "delete_") {
		t.Errorf("crucible tools: exit %d\n%s\n%s", code, out, errs)
	}

	code, out, errs = run(t, "", "tools", "--config", cfg, "--json")
	var tools []struct {
		Server, Name, Description string
		InputSchema               map[string]any `json:"input_schema"`
	}
	if err := json.Unmarshal([]byte(out), &tools); code != ExitOK || err != nil || len(tools) == 0 {
		t.Fatalf("--json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if tools[0].Server != "memory" || tools[0].InputSchema["type"] != "object" {
		t.Errorf("--json: %+v", tools[0])
	}

	code, out, _ = run(t, "", "tools", "--ts", "--config", cfg)
	if code != ExitOK || !strings.Contains(out, "declare namespace tools {") || !strings.Contains(out, "namespace memory {") {
		t.Errorf("--ts: exit %d\n%s", code, out)
	}
}

func TestToolsCommandErrors(t *testing.T) {
	cfg := memoryServer(t, "  broken:\n    command: /bin/false\n")
	code, out, errs := run(t, "", "tools", "--config", cfg)
	if code != ExitFail || !strings.Contains(out, "memory  create_entities") || !strings.Contains(errs, "tool server broken is not available") {
		t.Errorf("a broken server: exit %d\n%s\n%s", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("servers:\n  class:\n    command: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--json", "--ts"}, {"extra"}, {"--config", bad}} {
		code, _, errs := run(t, "", append([]string{"tools"}, args...)...)
		if code != ExitUsage || errs == "" {
			t.Errorf("tools %q: exit %d, %s", args, code, errs)
		}
	}
	if _, _, errs := run(t, "", "tools", "--config", bad); !strings.Contains(errs, `bad.yaml:2: servers["class"]: the name is a reserved word`) {
		t.Errorf("a reserved name: %s", errs)
	}
	if code, _, errs := run(t, "", "tools"); code != ExitOK || !strings.Contains(errs, "no servers are configured") {
		t.Errorf("no servers: exit %d, %s", code, errs)
	}
}
