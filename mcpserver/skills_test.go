package mcpserver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// syncBuffer is a bytes.Buffer safe for the audit writer's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestSkills(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.ts"), []byte("// Greets someone.\nexport const greet = (n: string): string => `hi ${n}`;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("not a skill"), 0o644); err != nil {
		t.Fatal(err)
	}
	var trail syncBuffer
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
	if _, err := os.Stat(filepath.Join(dir, "double.py")); err == nil {
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
