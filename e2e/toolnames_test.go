package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/cli"
)

// crucible tools shows each tool by the name the code calls it by
// (server-everything's get-sum is get_sum), its own name beside it where
// they differ, which is the one the policies' globs match.
func TestToolsCommandNames(t *testing.T) {
	cfg, _ := everythingConfig(t, "")
	code, out, errs := run(t, "", "tools", "--config", cfg)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "ev" {
			rows[f[1]] = f[2]
		}
	}
	if rows["get_sum"] != "(get-sum)" || rows["echo"] == "(echo)" || rows["get-sum"] != "" {
		t.Errorf("the table:\n%s", out)
	}

	code, out, errs = run(t, "", "tools", "--config", cfg, "--json")
	var tools []struct {
		Name   string
		JSName string `json:"js_name"`
	}
	if err := json.Unmarshal([]byte(out), &tools); code != cli.ExitOK || err != nil {
		t.Fatalf("--json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	names := map[string]string{}
	for _, tool := range tools {
		names[tool.Name] = tool.JSName
	}
	if names["get-sum"] != "get_sum" || names["echo"] != "echo" {
		t.Errorf("--json: the names the code calls: %q", names)
	}
}
