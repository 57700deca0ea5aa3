package lang_test

import (
	"testing"

	"github.com/cruciblehq/crucible/lang"
	_ "github.com/cruciblehq/crucible/lang/deno"
	_ "github.com/cruciblehq/crucible/lang/js"
	_ "github.com/cruciblehq/crucible/lang/python"
)

// The languages register themselves; Detect picks among them.
func TestDetect(t *testing.T) {
	for _, tc := range []struct{ flag, file, want string }{
		{"", "a.py", lang.Python},
		{"", "a.PY", lang.Python},
		{"", "a.js", lang.JavaScript},
		{"", "a.mjs", lang.JavaScript},
		{"", "a.ts", lang.TypeScript},
		{"", "-", lang.TypeScript},
		{"", "noext", lang.TypeScript},
		{"deno", "a.py", lang.Deno},
		{"py", "a.ts", lang.Python},
	} {
		got, err := lang.Detect(tc.flag, tc.file)
		if err != nil || got != tc.want {
			t.Errorf("Detect(%q, %q) = %q, %v; want %q", tc.flag, tc.file, got, err, tc.want)
		}
	}
	if _, err := lang.Detect("ruby", "a.rb"); err == nil {
		t.Error("an unknown language was accepted")
	}
}
