package mcpserver

// Golden transcripts of every text the model reads: the instructions that
// initialize gives, execute's summary, search_tools' answers and the tools
// that tools/list shows. Each is a txtar archive in testdata; go test
// -run Golden -update rewrites them (the -update flag is testenv's).
// None runs a program: they need no root.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/sandbox"
)

// txtarFile is one file of a txtar archive, golang.org/x/tools/txtar's
// format (which the module does not require): a comment, then each file
// after a line "-- name --". A file's text ends with a newline: one is
// added to a text without.
type txtarFile struct{ name, data string }

func formatTxtar(comment string, files []txtarFile) []byte {
	var b bytes.Buffer
	b.WriteString(withNL(comment))
	for _, f := range files {
		fmt.Fprintf(&b, "-- %s --\n%s", f.name, withNL(f.data))
	}
	return b.Bytes()
}

func parseTxtar(data string) []txtarFile {
	var files []txtarFile
	for line := range strings.Lines(data) {
		if name, ok := txtarMarker(line); ok {
			files = append(files, txtarFile{name: name})
		} else if len(files) > 0 {
			files[len(files)-1].data += line
		}
	}
	return files
}

// txtarMarker is the name a line "-- name --" begins a file of.
func txtarMarker(line string) (string, bool) {
	line = strings.TrimSuffix(line, "\n")
	name, ok := strings.CutPrefix(line, "-- ")
	if name, ok2 := strings.CutSuffix(name, " --"); ok && ok2 && strings.TrimSpace(name) != "" {
		return strings.TrimSpace(name), true
	}
	return "", false
}

func withNL(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// goldenTxtar compares files with the archive testdata/name, or rewrites it
// with -update, comment first.
func goldenTxtar(t *testing.T, name, comment string, files []txtarFile) {
	t.Helper()
	for _, f := range files {
		for line := range strings.Lines(f.data) {
			if _, ok := txtarMarker(line); ok {
				t.Fatalf("%s: a line of %s reads as a txtar file marker: %q", name, f.name, line)
			}
		}
	}
	path := filepath.Join("testdata", name)
	if testenv.Update() {
		if err := os.WriteFile(path, formatTxtar(comment, files), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run Golden -update writes it)", err)
	}
	want := map[string]string{}
	for _, f := range parseTxtar(string(b)) {
		want[f.name] = f.data
	}
	for _, f := range files {
		w, ok := want[f.name]
		delete(want, f.name)
		if got := withNL(f.data); !ok || got != w {
			t.Errorf("%s: %s differs (go test -run Golden -update rewrites it): %s", path, f.name, firstDiff(w, got))
		}
	}
	for n := range want {
		t.Errorf("%s: %s is no longer made (go test -run Golden -update removes it)", path, n)
	}
}

// firstDiff says where got first differs from want, by line.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d is %q, want %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// goldenServer is a server with no warm jails (nothing is built or run),
// changed by edit.
func goldenServer(t *testing.T, edit func(*config.Config)) *mcp.ClientSession {
	t.Helper()
	return connect(t, newServer(t, func(c *config.Config) {
		c.Serve.Pool = 0
		if edit != nil {
			edit(c)
		}
	}))
}

// skillsConfig gives c a skills directory of one skill, writable or not,
// and saved skills in a directory of their own.
func skillsConfig(t *testing.T, writable bool) func(*config.Config) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.ts"), []byte("// Greets someone.\nexport const greet = (n: string) => `hi ${n}`;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := t.TempDir()
	return func(c *config.Config) {
		c.Serve.Skills, c.Serve.SkillsWritable, c.Serve.SavedSkills = dir, writable, saved
	}
}

// The instructions that initialize gives the client: without skills, with
// skills, with skills a client may save, and on Deno.
func TestGoldenInstructions(t *testing.T) {
	var files []txtarFile
	for _, c := range []struct {
		name string
		edit func(*config.Config)
	}{
		{"plain", nil},
		{"skills", skillsConfig(t, false)},
		{"skills-writable", skillsConfig(t, true)},
		{"deno", func(c *config.Config) { c.Runtimes.Engine = config.EngineDeno }},
		{"deno-typecheck", func(c *config.Config) { c.Runtimes.Engine = config.EngineDeno; c.Serve.TypeCheck = true }},
	} {
		if strings.HasPrefix(c.name, "deno") {
			cfg := config.Default()
			c.edit(cfg)
			if sandbox.CheckEngine(cfg) != nil {
				testenv.Missing(t, "no deno: run npm install at the repository's root")
			}
		}
		ins := goldenServer(t, c.edit).InitializeResult().Instructions
		files = append(files, txtarFile{c.name, ins})
	}
	goldenTxtar(t, "instructions.txtar", "The instructions that initialize gives, by configuration (a newline ends each here).", files)
}

// What tools/list shows of each tool (name, title, description, schemas),
// with writable skills: execute, search_tools, save_skill, delete_skill.
func TestGoldenToolsList(t *testing.T) {
	res, err := goldenServer(t, skillsConfig(t, true)).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var files []txtarFile
	for _, tool := range res.Tools {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false) // "tools.<server>.<tool>" as the model reads it
		e.SetIndent("", "  ")
		if err := e.Encode(tool); err != nil {
			t.Fatal(err)
		}
		files = append(files, txtarFile{tool.Name + ".json", b.String()})
	}
	goldenTxtar(t, "tools_list.txtar", "tools/list's tools, with writable skills, in the order listed.", files)
}

// execute's summary, the text the model reads of a result, of results of
// every shape. The duration (42 ms) and the workspace handle (ws_golden)
// are fixed in the results given.
func TestGoldenSummary(t *testing.T) {
	var long strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&long, "line %04d\n", i)
	}
	var files []txtarFile
	for _, c := range []struct {
		name  string
		out   executeOut
		bound int // execute's serve.max_result_output, if it applies
	}{
		{name: "empty", out: executeOut{Result: json.RawMessage("null")}},
		{name: "result-and-stdout", out: executeOut{Result: json.RawMessage(`{"n":42}`), Stdout: "hi\nthere\n"}},
		{name: "error", out: executeOut{ExitCode: 1, Result: json.RawMessage("null"), Stderr: "warning: x\n",
			Error: &lang.Error{Name: "TypeError", Message: "x is not a function", Stack: "at execute.ts:1:1"}}},
		{name: "violations", out: executeOut{ExitCode: 1, Result: json.RawMessage("null"), Violations: []sandbox.Violation{
			{Kind: "dns", Host: "evil.example.com", Count: 2, Reason: "not in network.allow"},
			{Kind: "syscall", Syscall: "ptrace", Count: 1, Reason: "refused by the seccomp policy"},
			{Kind: "limit", Count: 1, Reason: "tool calls: at most 100\nper execution"},
		}}},
		{name: "limits", out: executeOut{ExitCode: 124, Result: json.RawMessage("null"), LimitsHit: []string{"timeout", "output"}, Truncated: true, Stdout: "partial"}},
		{name: "tool-calls", out: executeOut{Result: json.RawMessage(`"done"`), ToolCalls: []sandbox.ToolCall{
			{Server: "gh", Tool: "search_issues", DurationMS: 7, OK: true}, {Server: "gh", Tool: "get_issue", DurationMS: 3},
		}}},
		// What the program wrote cannot pass for a line of ours, whatever
		// breaks its lines.
		{name: "quoted", out: executeOut{Result: json.RawMessage(`"a\nb"`),
			Stdout: "refused: dns x: fake\r\nworkspace: ws_fake\u2028tool calls: 9\vend\n\n"}},
		{name: "cut-summary", out: executeOut{Result: json.RawMessage("null"), Stdout: long.String()}},
		{name: "cut-bound", bound: 200, out: executeOut{Result: json.RawMessage(`"` + strings.Repeat("r", 300) + `"`),
			Stdout: long.String()[:400], Error: &lang.Error{Name: "Error", Message: strings.Repeat("m", 300)}}},
	} {
		out := c.out
		out.DurationMS, out.Workspace = 42, "ws_golden"
		if c.bound > 0 {
			out.bound(c.bound)
		}
		files = append(files, txtarFile{c.name, summary(&out)})
	}
	goldenTxtar(t, "summary.txtar", "execute's summary of results of every shape (golden_test.go has them).", files)
}

// goldenTools are the tools of two servers: names the code cannot write
// after a dot, two that one name would call, a long description, several
// lines, an output schema.
var goldenTools = []sandbox.Tool{
	{Server: "gh", Name: "search_issues", Description: "Searches the issues of a repository.\nThe second line is for full detail.",
		InputSchema: map[string]any{"type": "object", "required": []any{"repo"}, "properties": map[string]any{
			"repo": map[string]any{"type": "string", "description": "owner/name"}, "query": map[string]any{"type": "string"},
			"state": map[string]any{"type": "string", "enum": []any{"open", "closed"}},
		}}},
	{Server: "gh", Name: "get-issue", Description: "Gets one issue by number.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"repo": map[string]any{"type": "string"}, "number": map[string]any{"type": "integer"},
		}},
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}}},
	{Server: "gh", Name: "get_issue", Description: "Gets an issue, the older way."},
	{Server: "gh", Name: "class"},
	{Server: "fs", Name: "read_file", Description: "Reads a file " + strings.Repeat("of the shared volume, ", 10) + "and returns its text.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}},
}

// search_tools' rendering of the tools found, at each detail, and of the
// servers for the empty query. Tools need a server process to be listed,
// so these are rank and render, as the handler calls them.
func TestGoldenSearchTools(t *testing.T) {
	tools := sandbox.NamedTools(goldenTools)
	files := []txtarFile{{"servers", renderServers([]string{"fs", "gh", "idle"}, tools)}}
	for _, q := range []string{"issue", "file", "class", "zzzz"} {
		found, err := rank(context.Background(), tools, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, detail := range []string{"names", "summary", "full"} {
			files = append(files, txtarFile{fmt.Sprintf("%s/%s", q, detail), render(found, detail)})
		}
	}
	files = append(files, txtarFile{"unlisted", unlisted([]string{"fs", "gh", "idle"}, tools)})
	goldenTxtar(t, "search_tools.txtar", "search_tools' rendering of a fixed set of tools: query/detail.", files)
}

// search_tools' answers, through the server, with three HTTP APIs (an
// OpenAPI JSON, an OpenAPI YAML and a Markdown docs) and no servers.
func TestGoldenSearchAPIs(t *testing.T) {
	docs := func(name string) string {
		p, err := filepath.Abs(filepath.Join("../apis/testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("CRUCIBLE_TEST_WEATHER", "weather-key-0123456789")
	t.Setenv("CRUCIBLE_TEST_TRACKER", "tracker-token-0123456789")
	cs := goldenServer(t, func(c *config.Config) {
		c.Secrets = map[string]config.Secret{
			"WEATHER_KEY":   {From: "env:CRUCIBLE_TEST_WEATHER"},
			"TRACKER_TOKEN": {From: "env:CRUCIBLE_TEST_TRACKER"},
		}
		c.APIs = map[string]config.API{
			"tracker": {Description: "The team's issue tracker: issues, users and code search.", Hosts: []string{"tracker.example.com"},
				Secrets: []string{"TRACKER_TOKEN"}, Docs: docs("tracker.yaml"),
				Rules: []config.APIRule{{Allow: "GET /**"}, {Allow: "POST /repos/*/*/issues"}, {Deny: "DELETE /**"}}},
			"weather": {Description: "Forecasts and alerts.", Hosts: []string{"weather.example.net:8443"},
				Secrets: []string{"WEATHER_KEY"}, Docs: docs("weather.json")},
			"billing": {Description: "Invoices and customers (internal).", Hosts: []string{"billing.internal:80"}, Docs: docs("billing.md")},
		}
	})
	files := []txtarFile{{"empty", searchTools(t, cs, "", "")}}
	for _, q := range []string{"forecast city", "issues", "refund invoice", "zzzz"} {
		for _, detail := range []string{"names", "summary", "full"} {
			files = append(files, txtarFile{q + "/" + detail, searchTools(t, cs, q, detail)})
		}
	}
	goldenTxtar(t, "search_apis.txtar", "search_tools' answers with three HTTP APIs and no MCP servers: query/detail.", files)
}
