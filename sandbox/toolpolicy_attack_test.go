package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// aggregator is a stdio MCP server as aggregating servers are: tool names
// with '/', tools it serves under any case, and resources. Every call and
// read it serves is appended to the file named by its first argument, so
// that a test sees what got through.
const aggregator = `
const fs = require("fs");
const log = process.argv[2];
const tools = ["admin/delete_repo", "delete_/x", "read_file", "get_issue", "transfer"];
function handle(m) {
  if (m.method === "initialize") {
    return {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}, resources: {}}, serverInfo: {name: "agg", version: "1"}};
  } else if (m.method === "tools/list") {
    return {tools: tools.map((name) => ({name, inputSchema: {type: "object"}}))};
  } else if (m.method === "tools/call") {
    const args = m.params.name === "transfer" ? " " + JSON.stringify(m.params.arguments) : "";
    fs.appendFileSync(log, "call " + m.params.name + args + "\n");
    return {content: [{type: "text", text: "done: " + m.params.name}]};
  } else if (m.method === "resources/read") {
    fs.appendFileSync(log, "read " + m.params.uri + "\n");
    return {contents: [{uri: m.params.uri, mimeType: "text/plain", text: "secret contents"}]};
  }
  return null;
}
` + jsonRPCLoop

// A program attacks the tool policy from inside the jail: a '*' that once
// stopped at '/', a denied name in another case or with a look-alike
// letter (which a lenient server would take), a name the allow list
// matches but the server does not list, and a resource read past a tool
// allow list. Each is refused with a violation, and the server never
// sees it; the allowed call goes through.
func TestAttackToolPolicy(t *testing.T) {
	src := `import crucible
out = {}
for name in ` + literal(toolPolicyNames) + `:
    try:
        out[name] = crucible.tools.call("agg", name, {})
    except crucible.ToolError as e:
        out[name] = e.kind + ": " + str(e)
try:
    out["resource"] = crucible.tools.resource("agg", "file:///etc/shadow")
except crucible.ToolError as e:
    out["resource"] = e.kind + ": " + str(e)
crucible.result = out
`
	r, served := runAgainstAggregator(t, toolPolicy, src)
	checkToolPolicy(t, r, served)
}

// toolPolicy is TestAttackToolPolicy's policy of agg's tools.
const toolPolicy = `    tools: {allow: ["get_*", "*delete*"], deny: ["*delete*"]}
`

// toolPolicyNames are the tools that TestAttackToolPolicy's programs call.
var toolPolicyNames = []string{"admin/delete_repo", "delete_/x", "Admin/Delete_repo", "admin/dеlete_repo", "read_file", "get_secret", "Get_issue", "get_issue"}

// checkToolPolicy checks the result of a program that called each of
// toolPolicyNames and read a resource under toolPolicy, and what the
// server served: each is refused with a violation but the allowed call.
func checkToolPolicy(t *testing.T, r *Result, served string) {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(r.Result, &out); err != nil {
		t.Fatalf("%v: %s\n%+v", err, r.Result, r)
	}
	for name, want := range map[string]string{
		"admin/delete_repo": `tool: tool admin/delete_repo is denied by this server's policy (rule "*delete*")`,
		"delete_/x":         `tool: tool delete_/x is denied`,
		"Admin/Delete_repo": `tool: tool Admin/Delete_repo is not in this server's allow list`,
		"get_secret":        `tool: tool server agg has no tool "get_secret"`,
		"Get_issue":         `is not in this server's allow list`,
		"admin/dеlete_repo": `cannot match cleanly`,
		"read_file":         `is not in this server's allow list`,
		"resource":          `resources are not open to the code`,
		"get_issue":         `done: get_issue`,
	} {
		if got, _ := out[name].(string); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if len(r.Violations) < 8 {
		t.Errorf("violations: %+v", r.Violations)
	}
	for _, v := range r.Violations {
		if v.Kind != "tool" {
			t.Errorf("violation %+v, want kind tool", v)
		}
	}
	if served != "call get_issue\n" {
		t.Errorf("the server served:\n%s", served)
	}
}

// A program tries to slip calls past a rule on their arguments: another
// owner, the allowed one spelled inside a string, a list of it, none at
// all. Each is refused with a violation naming the rule; the server serves
// only the allowed call.
func TestAttackCallRules(t *testing.T) {
	src := callEach("", "get_issue", `[{"owner": "acme"}, {"owner": "evil"}, {"owner": json.dumps({"owner": "acme"})}, {"owner": ["acme"]}, {}, {"owner": "acme "}]`)
	r, served := runAgainstAggregator(t, `    rules:
      - tools: ["get_*"]
        allow_if: 'args.owner == "acme"'
        reason: issues only in the acme org
`, src)
	var out []string
	if err := json.Unmarshal(r.Result, &out); err != nil || len(out) != 6 {
		t.Fatalf("%v: %s\n%+v", err, r.Result, r)
	}
	refused := "tool: tool get_issue is refused by rule 0 of this server: issues only in the acme org"
	// A list compared with a string is no "false": a comparison of two
	// types refuses the call as a condition that cannot be evaluated.
	for i, want := range []string{"done: get_issue", refused, refused, "compares a list with a string", "could not be evaluated", refused} {
		if !strings.Contains(out[i], want) {
			t.Errorf("call %d: %q, want %q", i, out[i], want)
		}
	}
	if len(r.Violations) != 3 {
		t.Errorf("violations (one per reason): %+v", r.Violations)
	}
	if served != "call get_issue\n" {
		t.Errorf("the server served:\n%s", served)
	}
}

// A program sends arguments that the rule would read as one value and
// the server (node: the last key wins, numbers are floats, "true" is
// truthy) as another: the same key twice (forged past Python's json, as
// hostile code may write anything to the channel), keys in two cases, an
// integer a float cannot hold, a bool as a string. Each is refused with a
// violation before the server sees it; the server gets the allowed call
// as the rule read it.
func TestAttackArgumentsAsJudged(t *testing.T) {
	src := callEach(`dumps = json.dumps
json.dumps = lambda v, **kw: dumps(v, **kw).replace('"FORGE":1', '"owner":"victim","owner":"acme"')
`, "transfer", `[{"FORGE": 1}, {"owner": "acme", "Owner": "victim"}, {"owner": "acme", "id": 9007199254740993}, {"owner": "acme", "force": "true"}, {"owner": "acme", "id": 7}]`)
	r, served := runAgainstAggregator(t, argumentsRule, src)
	var out []string
	if err := json.Unmarshal(r.Result, &out); err != nil || len(out) != 5 {
		t.Fatalf("%v: %s\n%+v", err, r.Result, r)
	}
	for i, want := range argumentsJudged {
		if !strings.Contains(out[i], want) {
			t.Errorf("call %d: %q, want %q", i, out[i], want)
		}
	}
	if !strings.Contains(out[3], "compares a string with a bool") {
		t.Errorf("the bool as a string: %q", out[3])
	}
	if len(r.Violations) != 4 {
		t.Errorf("violations (one per reason): %+v", r.Violations)
	}
	if want := "call transfer {\"owner\":\"acme\",\"id\":7}\n"; served != want {
		t.Errorf("the server served:\n%s\nwant:\n%s", served, want)
	}
}

// argumentsRule is TestAttackArgumentsAsJudged's rule of agg's transfer.
const argumentsRule = `    rules:
      - tools: ["transfer"]
        allow_if: 'args.owner == "acme" && (!has(args.force) || args.force != true) && (!has(args.id) || args.id != 9007199254740992)'
`

// argumentsJudged is what each of TestAttackArgumentsAsJudged's calls
// gets: the same key twice, keys in two cases, an integer past 2^53, a
// bool as a string (compared with a bool), and the allowed call.
var argumentsJudged = []string{`tool: tool transfer is refused: the arguments have the key "owner" twice`,
	`tool: tool transfer is refused: the arguments have the keys "owner" and "Owner"`,
	`tool: tool transfer is refused: the arguments hold the integer 9007199254740993, past 2^53`,
	`tool: tool transfer is refused: the condition of rule 0 of this server`, "done: transfer"}

// callEach is a Python program that runs prelude, then calls agg's tool
// with each of args (a Python list) in turn; its result is the list of
// what each call returned, or of its error's kind and message.
func callEach(prelude, tool, args string) string {
	return "import crucible, json\n" + prelude + `out = []
for args in ` + args + `:
    try:
        out.append(crucible.tools.call("agg", "` + tool + `", args))
    except crucible.ToolError as e:
        out.append(e.kind + ": " + str(e))
crucible.result = out
`
}

// runAgainstAggregator runs the Python program src in a jail whose one tool
// server is the aggregator, as agg with policy (YAML under the server's
// key), and returns the result and what the server served.
func runAgainstAggregator(t *testing.T, policy, src string) (*Result, string) {
	t.Helper()
	testenv.NeedTool(t, "python3")
	cfg, tools, served := aggregatorTools(t, policy)
	prog, err := Program(cfg, "py", []byte(src), "main.py")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), cfg, prog, Options{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return r, served()
}

// aggregatorTools is a configuration whose one tool server is the
// aggregator, as agg with policy (YAML under the server's key), its
// tools, and what the server has served so far.
func aggregatorTools(t *testing.T, policy string) (*config.Config, *Tools, func() string) {
	t.Helper()
	testenv.NeedRoot(t, "builds real jails")
	node := testenv.NeedTool(t, "node")
	dir := testenv.PublicDir(t)
	script, log := filepath.Join(dir, "agg.js"), filepath.Join(t.TempDir(), "served.log")
	if err := os.WriteFile(script, []byte(aggregator), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("servers:\n  agg:\n    command: "+node+"\n    args: ["+script+", "+log+"]\n"+policy), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckConfig(cfg); err != nil {
		t.Fatal(err)
	}
	tools, err := NewTools(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tools.Close)
	return cfg, tools, func() string {
		served, _ := os.ReadFile(log)
		return string(served)
	}
}
