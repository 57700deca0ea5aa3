package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/lang"
)

// run runs src in the engine, in process, and returns its outcome and output.
func run(t *testing.T, src string, ts bool, o Options) (*lang.Outcome, string) {
	t.Helper()
	var out bytes.Buffer
	if o.Stdout == nil {
		o.Stdout = &out
		o.Stderr = &out
	}
	name := "main.js"
	if ts {
		name = "main.ts"
	}
	// No deadline: under the race detector on a slow machine the engine is
	// many times slower, and no test here is about time (TestDeadline sets
	// its own). A program that hangs is go test's -timeout to catch.
	return Run(context.Background(), src, name, ts, o), out.String()
}

// result runs src and wants it to succeed with the JSON result want.
func result(t *testing.T, src string, ts bool, want string) {
	t.Helper()
	out, stdout := run(t, src, ts, Options{})
	if out.Error != nil {
		t.Fatalf("%s\nerror: %+v\nstdout: %s", src, out.Error, stdout)
	}
	if !sameJSON(out.Result, []byte(want)) {
		t.Fatalf("%s\nresult %s, want %s", src, out.Result, want)
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func TestForms(t *testing.T) {
	for _, tc := range []struct {
		src  string
		ts   bool
		want string
	}{
		{"return 1 + 1", false, "2"},
		{"const x: number = 20;\nreturn x * 2 + 2", true, "42"},
		{"await null;\nreturn { a: [1, 'b'] }", false, `{"a":[1,"b"]}`},
		{"export default 7", false, "7"},
		{"export default Promise.resolve('later')", false, `"later"`},
		{"const v = await new Promise(r => setTimeout(() => r(3), 5));\nexport default v", false, "3"},
		{"export const x = 1;", false, ""},
		{"interface A { a: string }\nenum E { X = 4 }\nexport default E.X as number", true, "4"},
		{"console.log('no result')", false, ""},
	} {
		out, stdout := run(t, tc.src, tc.ts, Options{})
		if out.Error != nil || string(out.Result) != tc.want {
			t.Errorf("%q: result %s, error %+v, want %s (stdout %q)", tc.src, out.Result, out.Error, tc.want, stdout)
		}
	}
}

// Errors are reported with the lines of the source the user wrote: after
// TypeScript's types are stripped, and inside the script wrapper.
func TestErrorLines(t *testing.T) {
	for _, tc := range []struct {
		src        string
		ts         bool
		name, want string
	}{
		{"type T = {\n  a: number\n};\nfunction f(x: T): never {\n  throw new RangeError('bad ' + x.a);\n}\nf({ a: 1 });\n", true, "RangeError", "main.ts:5:"},
		{"interface I { x: string }\nexport function g(i: I) { return i.x.y.z }\nexport default g({ x: 'a' });\n", true, "TypeError", "main.ts:2:"},
		{"const a = 1;\nlet b = ;\n", false, "SyntaxError", "main.js:2:"},
		{"export default 1;\nreturn 2;\n", false, "SyntaxError", "main.js:2:"},
		{"\n\nnull.x", false, "TypeError", "main.js:3:"},
	} {
		out, _ := run(t, tc.src, tc.ts, Options{})
		if out.Error == nil || out.Error.Name != tc.name || !strings.Contains(out.Error.Stack, tc.want) {
			t.Errorf("%q: error %+v, want %s at %s", tc.src, out.Error, tc.name, tc.want)
			continue
		}
		if strings.Contains(out.Error.Stack, "<eval>") || strings.Contains(out.Error.Stack, "dispatch") {
			t.Errorf("%q: the prelude shows in the stack:\n%s", tc.src, out.Error.Stack)
		}
	}
}

func TestCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/*.[jt]s")
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, filepath.Ext(f)) + ".json")
			if err != nil {
				t.Fatal(err)
			}
			result(t, string(src), filepath.Ext(f) == ".ts", string(want))
		})
	}
}

// The Web APIs of web.js, each check true when it behaves as the standard
// (and Deno) says.
func TestWebAPIs(t *testing.T) {
	src, err := os.ReadFile("testdata/web_test.js")
	if err != nil {
		t.Fatal(err)
	}
	out, stdout := run(t, string(src), false, Options{})
	if out.Error != nil {
		t.Fatalf("%+v\n%s", out.Error, stdout)
	}
	var checks map[string]bool
	if err := json.Unmarshal(out.Result, &checks); err != nil || len(checks) < 50 {
		t.Fatalf("%d checks (%v): %s", len(checks), err, out.Result)
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("%s failed", name)
		}
	}
}
