package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A program imports the skills, which import each other; nothing else.
func TestImportSkills(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"greet.ts":      "import { exclaim } from './lib/punct.ts';\nexport function greet(n: string): string { return exclaim('hi ' + n); }\n",
		"lib/punct.ts":  "export const exclaim = (s: string) => s + '!';\n",
		"broken.ts":     "export const = 1;\n",
		"escape.ts":     "import '../etc/passwd.js';\n",
		"plain.js":      "export default 7;\n",
		"notes.txt":     "not a module\n",
		"lib/other.mjs": "export default 1;\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{Skills: dir}
	out, _ := run(t, "import { greet } from '/skills/greet.ts';\nimport seven from '/skills/plain.js';\nexport default greet('ada') + seven;", true, o)
	if out.Error != nil || string(out.Result) != `"hi ada!7"` {
		t.Fatalf("import of skills = %s, %+v", out.Result, out.Error)
	}
	for src, want := range map[string]string{
		"import '/skills/missing.ts';":                 "no such skill",
		"import '/skills/broken.ts';":                  "/skills/broken.ts:1:",
		"import '/skills/escape.ts';":                  "programs import only skills",
		"import '/skills/../etc/passwd.ts';":           "programs import only skills",
		"import '/skills/notes.txt';":                  "programs import only skills",
		"import 'node:fs';":                            "programs import only skills",
		"import x from 'https://example.com/x.js'; x;": "programs import only skills",
	} {
		out, _ := run(t, src, true, o)
		if out.Error == nil || !strings.Contains(out.Error.Message, want) {
			t.Errorf("%s: error %+v; want %q", src, out.Error, want)
		}
	}
	out, _ = run(t, "import '/skills/greet.ts';", true, Options{})
	if out.Error == nil || !strings.Contains(out.Error.Message, "offers no skills") {
		t.Errorf("without skills: %+v", out.Error)
	}
}
