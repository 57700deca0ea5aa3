package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/toolbridge"
)

func TestToolOptions(t *testing.T) {
	cfg, err := config.Parse([]byte(`
servers:
  gh:
    command: /opt/gh
    args: [stdio]
    env: {TOKEN: t0ken-value}
    cwd: /srv/gh
    tools: {allow: ["get_*"], deny: [get_secret]}
    group: private
    timeout: 5s
  docs:
    url: https://mcp.example.com/mcp
    headers: {Authorization: Bearer x}
tools: {max_calls: 7, max_arg_size: 2KiB}
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := toolOptions(cfg, nil)
	want := toolbridge.Options{
		Servers: map[string]toolbridge.Server{
			"gh": {Command: "/opt/gh", Args: []string{"stdio"}, Env: map[string]string{"TOKEN": "t0ken-value"}, Dir: "/srv/gh",
				Policy: toolbridge.Policy{Allow: []string{"get_*"}, Deny: []string{"get_secret"}, Group: "private", Timeout: 5 * time.Second}},
			"docs": {URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
		},
		Limits: toolbridge.Limits{Calls: 7, ArgBytes: 2 << 10, ResultBytes: 1 << 20},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("toolOptions =\n%+v\nwant\n%+v", got, want)
	}
}

func TestCheckConfigServerNames(t *testing.T) {
	for name, want := range map[string]string{
		"class": `c.yaml:3: servers["class"]: the name is a reserved word in JavaScript or Python`,
		"list":  `c.yaml:3: servers["list"]: the name is the name of a function of tools (call, list, resource, apis)`,
		"apis":  `c.yaml:3: servers["apis"]: the name is the name of a function of tools (call, list, resource, apis)`,
		"gh":    "",
	} {
		cfg, err := config.Parse([]byte("servers:\n\n  "+name+":\n    command: x\n"), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		err = CheckConfig(cfg)
		if (err == nil && want != "") || (err != nil && err.Error() != want) {
			t.Errorf("%s: CheckConfig = %v; want %q", name, err, want)
		}
	}
}

// ListTools against the real server-memory from npm.
func TestListTools(t *testing.T) {
	node := testenv.NeedTool(t, "node")
	main, _ := filepath.Abs("../node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	if _, err := os.Stat(main); err != nil {
		testenv.Missing(t, "needs @modelcontextprotocol/server-memory (npm install at the repository's root)")
	}
	yaml := "servers:\n  memory:\n    command: " + node + "\n    args: [" + main + "]\n" +
		"    env: {MEMORY_FILE_PATH: " + filepath.Join(t.TempDir(), "m.jsonl") + "}\n" +
		"    tools: {deny: [delete_*]}\n"
	cfg, err := config.Parse([]byte(yaml), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tools, err := ListTools(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "create_entities") || strings.Contains(strings.Join(names, ","), "delete_") {
		t.Errorf("tools = %v; want create_entities and no delete_*", names)
	}
	if d := ToolDeclarations(tools); !strings.Contains(d, "namespace memory {") || !strings.Contains(d, "function create_entities(args: {") {
		t.Errorf("declarations:\n%s", d)
	}
}
