package mcpserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
	"github.com/cruciblehq/crucible/toolbridge"
)

func TestSkills(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.ts"), []byte("// Greets someone.\nexport const greet = (n: string): string => `hi ${n}`;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("not a skill"), 0o644); err != nil {
		t.Fatal(err)
	}
	var trail testenv.Buffer
	aw := audit.New(&trail)
	cfg := config.Default()
	cfg.Serve.Skills, cfg.Serve.SkillsWritable = dir, true
	s, err := New(Options{Config: cfg, Audit: aw, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	cs := connect(t, s)
	ctx := context.Background()

	res, err := cs.ListResources(ctx, nil)
	if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != "skill://greet.ts" || res.Resources[0].Description != "Greets someone." {
		t.Fatalf("resources = %+v, %v", res, err)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://greet.ts"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "export const greet") {
		t.Fatalf("read = %+v, %v", rr, err)
	}

	// A program imports the skill, on a warm jail and on a new one.
	_, out := execute(t, cs, map[string]any{"code": `import { greet } from "/skills/greet.ts"; export default greet("ada");`})
	if out == nil || string(out.Result) != `"hi ada"` {
		t.Fatalf("import: %+v", out)
	}
	_, out = execute(t, cs, map[string]any{"code": `import { greet } from "/skills/greet.ts"; export default greet("bob");`})
	if out == nil || string(out.Result) != `"hi bob"` {
		t.Fatalf("import, second: %+v", out)
	}

	// Attack: the program writes to /skills, to plant code for others.
	_, out = execute(t, cs, map[string]any{"code": `import { writeFileSync } from "node:fs"; return 1`})
	if out == nil || out.Error == nil {
		t.Errorf("an import of node:fs: %+v", out)
	}
	_, out = execute(t, cs, map[string]any{"language": "py", "code": "open('/skills/greet.ts', 'w').write('x')"})
	if out == nil || out.ExitCode == 0 {
		t.Errorf("a write to /skills: %+v", out)
	}

	// save_skill, then a Python program imports it.
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	if r := call("save_skill", map[string]any{"name": "double.py", "code": "def double(x):\n    return 2 * x\n", "description": "Doubles."}); r.IsError {
		t.Fatalf("save_skill: %q", text(r))
	}
	_, out = execute(t, cs, map[string]any{"language": "py", "code": "import double\nprint(double.double(21))"})
	if out == nil || out.Stdout != "42\n" {
		t.Fatalf("python import of a saved skill: %+v", out)
	}
	// It is the client's own, beside the operator's: listed with them, and
	// kept apart from them on the host.
	res, _ = cs.ListResources(ctx, nil)
	if len(res.Resources) != 2 || res.Resources[1].URI != "skill://double.py" || res.Resources[1].Description != "Doubles." {
		t.Errorf("resources after save: %+v", res.Resources)
	}
	if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://double.py"}); err != nil || !strings.Contains(rr.Contents[0].Text, "return 2 * x") {
		t.Errorf("read of the saved skill: %+v, %v", rr, err)
	}
	saved := filepath.Join(dir+".saved", "stdio", "double.py")
	if _, err := os.Stat(saved); err != nil {
		t.Errorf("the saved skill is not in its client's directory: %v", err)
	}
	for _, bad := range []map[string]any{
		{"name": "../escape.ts", "code": "x", "description": "d"},
		{"name": "Greet.ts", "code": "x", "description": "d"},
		{"name": "a.sh", "code": "x", "description": "d"},
		{"name": "ok.ts", "code": "x", "description": "two\nlines"},
		{"name": "big.ts", "code": strings.Repeat("x", maxSkill+1), "description": "d"},
	} {
		if r := call("save_skill", bad); !r.IsError {
			t.Errorf("save_skill %.40v was taken", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.ts")); err == nil {
		t.Error("a skill was written outside the directory")
	}
	if r := call("delete_skill", map[string]any{"name": "double.py"}); r.IsError {
		t.Fatalf("delete_skill: %q", text(r))
	}
	if r := call("delete_skill", map[string]any{"name": "../greet.ts"}); !r.IsError {
		t.Error("delete_skill of a bad name was taken")
	}
	if _, err := os.Stat(saved); err == nil {
		t.Error("the deleted skill is still there")
	}
	res, _ = cs.ListResources(ctx, nil)
	if len(res.Resources) != 1 {
		t.Errorf("resources after save and delete: %+v", res.Resources)
	}
	if err := aw.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := trail.String()
	for _, want := range []string{`"event":"skill","op":"save","name":"double.py","client":"stdio"`, `"op":"delete","name":"double.py"`} {
		if !strings.Contains(lines, want) {
			t.Errorf("the audit trail lacks %s:\n%s", want, lines)
		}
	}
}

// Without skills_writable the tools are not offered.
func TestSkillsReadOnly(t *testing.T) {
	cfg := config.Default()
	cfg.Serve.Skills = t.TempDir()
	tools, _ := sandbox.NewTools(cfg, nil, nil)
	s, err := New(Options{Config: cfg, Tools: tools, ProgressEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	res, err := connect(t, s).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if strings.Contains(tool.Name, "skill") {
			t.Errorf("%s offered without serve.skills_writable", tool.Name)
		}
	}
}

// Attack: a client imports a skill another client saved (it would read
// its code), plants one under the same name for the other's programs to
// import (they would then run its code with their workspace, tools and
// placeholders), replaces or deletes the operator's, or saves skills
// without end, filling the disk. A skill saved is its client's alone:
// only its programs import it, only it lists it; the operator's are no
// client's to change; each client has a count, a size and a rate. The
// jails are built for each execution here (pool 0); TestSkills has them
// warm.
func TestAttackSavedSkills(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	dir, saved := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.ts"), []byte("// Greets.\nexport const greet = 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := serveHTTP(t, newServer(t, func(c *config.Config) {
		c.Serve.Pool = 0
		c.Serve.Rate = 0
		c.Serve.Skills, c.Serve.SkillsWritable, c.Serve.SavedSkills = dir, true, saved
		c.Serve.SkillsPerClient, c.Serve.SkillBytesPerClient = 2, 4*config.KiB
	}))
	a, b, c := connectHTTP(t, url, tokenA, ""), connectHTTP(t, url, tokenB, ""), connectHTTP(t, url, tokenC, "")
	call := func(cs *mcp.ClientSession, tool, name, code string) string {
		args := map[string]any{"name": name, "code": code, "description": "d"}
		if tool == "delete_skill" {
			args = map[string]any{"name": name}
		}
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if !r.IsError {
			return "ok"
		}
		return text(r)
	}
	for _, c := range []struct {
		who        *mcp.ClientSession
		tool, name string
		code       string
		want       string
	}{
		{a, "save_skill", "util.ts", "export const u = 1;", "ok"},
		{a, "save_skill", "util.ts", "export const u = 2;", "ok"},       // its own, replaced
		{b, "save_skill", "util.ts", "export const u = 'pwned';", "ok"}, // b's own, beside a's
		{b, "save_skill", "greet.ts", "export const greet = 'pwned';", `skill "greet.ts" is the operator's, which no client may change`},
		{a, "delete_skill", "greet.ts", "", "is the operator's"},
		{a, "save_skill", "more.ts", strings.Repeat("x", 5000), "more than the 4KiB it may (serve.skill_bytes_per_client)"},
		{a, "save_skill", "more.ts", "export const m = 1;", "ok"},
		{a, "save_skill", "third.ts", "export const t = 1;", "this client has saved 2 skills, the most it may (serve.skills_per_client)"},
		{b, "save_skill", "third.ts", "export const t = 1;", "ok"}, // b's own count
		{a, "delete_skill", "more.ts", "", "ok"},
		{a, "delete_skill", "more.ts", "", `no skill "more.ts"`},
		{c, "delete_skill", "util.ts", "", `no skill "util.ts"`}, // a's and b's are not c's to delete
		{a, "save_skill", "third2.ts", "export const t = 1;", "ok"},
	} {
		if got := call(c.who, c.tool, c.name, c.code); !strings.Contains(got, c.want) {
			t.Errorf("%s %s: %q, want %q", c.tool, c.name, got, c.want)
		}
	}

	// Each client's programs import its own util.ts; c, which saved none,
	// finds none, and its /skills holds the operator's alone.
	code := `const m = await import("/skills/util.ts").catch(() => null); return m ? m.u : "not there";`
	for cs, want := range map[*mcp.ClientSession]string{a: "2", b: `"pwned"`, c: `"not there"`} {
		_, out := execute(t, cs, map[string]any{"code": code})
		if out == nil || string(out.Result) != want {
			t.Errorf("import of util.ts: %+v, want %s", out, want)
		}
	}
	_, out := execute(t, c, map[string]any{"language": "py", "code": "import os\nprint(sorted(os.listdir('/skills')))\ntry:\n    import util\nexcept ImportError:\n    print('no util')"})
	if out == nil || out.Stdout != "['greet.ts']\nno util\n" {
		t.Errorf("c's /skills: %+v", out)
	}
	for cs, want := range map[*mcp.ClientSession][]string{a: {"skill://greet.ts", "skill://third2.ts", "skill://util.ts"}, c: {"skill://greet.ts"}} {
		res, err := cs.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res.Resources {
			got = append(got, r.URI)
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("resources: %q, want %q", got, want)
		}
	}
	if rr, err := c.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "skill://util.ts"}); err == nil {
		t.Errorf("c read a's skill: %+v", rr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "greet.ts")); strings.Contains(string(b), "pwned") {
		t.Errorf("the operator's skill was replaced: %s", b)
	}
	if names := testenv.DirNames(t, dir); !slices.Equal(names, []string{"greet.ts"}) {
		t.Errorf("the operator's directory holds %q", names)
	}
}

// A client's directory of saved skills is named by its key, as {client}
// is: both keep clients apart the same way. The names are those saved
// skills already lie under: a change would lose them.
func TestSkillsDirIsClientKey(t *testing.T) {
	for client, want := range map[string]string{
		"stdio":                   "stdio",
		"ci":                      "client-ci",
		"token:0123456789abcdef":  "token-0123456789abcdef",
		"token-0123456789abcdef":  "client-token-0123456789abcdef",
		"oauth:alice@example.com": "id-f666d93060e539991fb760fe3d5319bf3f4db45748ff2b1b477f5f8b3608ae75",
		"oauth:alice-example.com": "id-" + fmt.Sprintf("%x", sha256.Sum256([]byte("oauth:alice-example.com"))),
		"..":                      "id-" + fmt.Sprintf("%x", sha256.Sum256([]byte(".."))),
	} {
		got := clientSkillsDir("/saved", client)
		if got != filepath.Join("/saved", want) {
			t.Errorf("%q's skills are in %s, want /saved/%s", client, got, want)
		}
		if key := toolbridge.ClientKey(client); filepath.Base(got) != key {
			t.Errorf("%q's skills are in %s, its {client} is %s", client, got, key)
		}
	}
}
