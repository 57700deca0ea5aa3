package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TypeScript in one jail calls server-everything running in a jail of its
// own: the answer comes back, and neither the host's environment nor the
// server's own env reaches the code.
func TestRunJailedServer(t *testing.T) {
	requireRoot(t)
	const hostCanary = "host-canary-a41f07"
	t.Setenv("CRUCIBLE_HOST_CANARY", hostCanary)
	nm, _ := filepath.Abs("../node_modules")
	cfg, _ := everythingConfig(t, "    jail: true\n    ro: ["+nm+"]\n")
	r := runJSON(t, `const echo = await tools.ev.echo({message: "from a jail"});
const env = await tools.call("ev", "get-env", {});
export default {echo, names: Object.keys(env).sort()};
`, "--lang", "ts", "--config", cfg, "-")
	var got struct {
		Echo  string
		Names []string
	}
	if err := json.Unmarshal(r.Result, &got); err != nil || r.Error != nil {
		t.Fatalf("%v: %s %+v", err, r.Result, r.Error)
	}
	if got.Echo != "Echo: from a jail" || strings.Join(got.Names, ",") != "API_TOKEN" {
		t.Errorf("got %+v; want the echo, and the server's environment its env only", got)
	}
	if out, _ := json.Marshal(r); strings.Contains(string(out), hostCanary) || strings.Contains(string(out), toolCanary) {
		t.Errorf("a canary reached the code: %s", out)
	}
	if len(r.ToolCalls) != 2 || !r.ToolCalls[0].OK || !r.ToolCalls[1].OK {
		t.Errorf("tool_calls: %+v", r.ToolCalls)
	}
}

// Rootless, a jailed server runs the same (its jail degraded where the
// operator allows: here, no cgroup), a jailed server with a network too.
func TestRootlessJailedServer(t *testing.T) {
	bin := publicCrucible(t)
	u := newTestUser(t, loneUID, false)
	u.withTun(t)
	nm := publicNodeModules(t)
	main := filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js")
	cfg, dir := everythingConfigIn(t, nm, "    jail: true\n    ro: ["+nm+"]\n"+
		"  netted:\n    command: /usr/bin/node\n    args: ["+main+"]\n    jail: true\n    ro: ["+nm+"]\n    network: {allow: [example.com]}\n")
	prog := program(t, dir, "p.ts", `
export default { echo: await tools.ev.echo({ message: "rootless" }), netted: await tools.netted.echo({ message: "netted" }) };
`)
	code, out, errs := u.run(t, bin, nil, nil, "run", "--json", "--allow-degraded", "cgroup", "--config", cfg, prog)
	var r struct{ Result json.RawMessage }
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	var got struct{ Echo, Netted string }
	if err := json.Unmarshal(r.Result, &got); err != nil {
		t.Fatalf("%v: %s", err, r.Result)
	}
	if got.Echo != "Echo: rootless" || got.Netted != "Echo: netted" {
		t.Errorf("%+v", got)
	}
}
