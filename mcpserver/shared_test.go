package mcpserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// pidServer is a stdio MCP server whose one tool, pid, says which process
// serves the call.
const pidServer = `let buf = "";
process.stdin.on("data", (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const m = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1);
    if (m.id === undefined) continue;
    let result = {content: [{type: "text", text: String(process.pid)}]};
    if (m.method === "initialize") {
      result = {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: "pid", version: "1"}};
    } else if (m.method === "tools/list") {
      result = {tools: [{name: "pid", inputSchema: {type: "object"}}]};
    }
    process.stdout.write(JSON.stringify({jsonrpc: "2.0", id: m.id, result}) + "\n");
  }
});
`

// shared: true is one process for the clients of a profile, not for every
// client: two profiles are two tenants, each with its own, and the clients
// without a profile have one of their own too.
func TestSharedIsPerProfile(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	node := testenv.NeedTool(t, "node")
	script := filepath.Join(t.TempDir(), "pid.js")
	if err := os.WriteFile(script, []byte(pidServer), 0o644); err != nil {
		t.Fatal(err)
	}
	const a1, a2, b1 = "alpha-one-0123456789abcd", "alpha-two-0123456789abcd", "bravo-one-0123456789abcd"
	s := newServer(t, func(c *config.Config) {
		c.Serve.Pool, c.Serve.Rate = 0, 0
		c.Servers = map[string]config.Server{"pid": {Command: node, Args: []string{script}, Shared: true}}
		c.Profiles = map[string]config.Profile{"pa": {Servers: []string{"pid"}}, "pb": {Servers: []string{"pid"}}}
		c.Clients = map[string]config.Client{
			"a1": {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "pa"},
			"a2": {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "pa"},
			"b1": {Token: config.SecretSource{From: "env:UNUSED"}, Profile: "pb"},
		}
	})
	url := serveHTTPClients(t, s, map[string]string{"a1": a1, "a2": a2, "b1": b1})
	pid := map[string]string{}
	for who, token := range map[string]string{"a1": a1, "a2": a2, "b1": b1, "anonymous": tokenA} {
		_, out := execute(t, connectHTTP(t, url, token, ""), map[string]any{"code": `return await tools.pid.pid({})`})
		if out == nil || out.ExitCode != 0 {
			t.Fatalf("%s: %+v", who, out)
		}
		pid[who] = string(out.Result)
	}
	if pid["a1"] != pid["a2"] || pid["a1"] == pid["b1"] || pid["anonymous"] == pid["a1"] || pid["anonymous"] == pid["b1"] {
		t.Errorf("the shared server's processes by client: %v; want one for a1 and a2, and others for b1 and the anonymous token", pid)
	}
}
