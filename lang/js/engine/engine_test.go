package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
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
		// A sync throw at the top level: the wrapper's call of the program
		// is no frame of the user's.
		{"function f() {\n  throw new Error('x');\n}\nf();\n", false, "Error", "main.js:4:"},
		{"class A { constructor() { null.x; } }\nnew A();", false, "TypeError", "main.js:2:"},
		// Unterminated: at the end of the user's last line, not in the
		// wrapper the script runs in.
		{"const o = {\n  a: 1,\n", false, "SyntaxError", "main.js:2:8"},
		{"const o: { a: number } = {\n  a: 1,\n\n\n", true, "SyntaxError", "main.ts:2:8"},
		{"return 1;\nfoo(1,", false, "SyntaxError", "main.js:2:7"},
		{"const s = `abc\n", false, "SyntaxError", "main.js:1:"},
		// A stray brace would close the wrapper: it is the error.
		{"foo();\n}\nbar();\n", false, "SyntaxError", "main.js:2:1"},
		{"export const x = {\n", false, "SyntaxError", "main.js:1:19"},
	} {
		out, _ := run(t, tc.src, tc.ts, Options{})
		if out.Error == nil || out.Error.Name != tc.name || !strings.Contains(out.Error.Stack, tc.want) {
			t.Errorf("%q: error %+v, want %s at %s", tc.src, out.Error, tc.name, tc.want)
			continue
		}
		if strings.Contains(out.Error.Stack, "<eval>") || strings.Contains(out.Error.Stack, "dispatch") {
			t.Errorf("%q: the prelude shows in the stack:\n%s", tc.src, out.Error.Stack)
		}
		if out.Error.Name == "SyntaxError" && strings.Contains(out.Error.Message, `")"`) {
			t.Errorf("%q: the message is about the wrapper: %s", tc.src, out.Error.Message)
		}
		checkLines(t, tc.src, out.Error.Stack)
	}
}

// checkLines fails the test if stack names a line the source lacks.
func checkLines(t *testing.T, src, stack string) {
	t.Helper()
	lines := strings.Count(strings.TrimRight(src, "\n"), "\n") + 1
	for _, m := range framePos().FindAllStringSubmatch(stack, -1) {
		if n, _ := strconv.Atoi(m[2]); n < 1 || n > lines {
			t.Errorf("%q: line %d of %d in the stack:\n%s", src, n, lines, stack)
		}
	}
}

// An error that a host API raises after an await (a body that is not
// JSON, a fetch that fails) carries the program's line of the call: the
// engine alone would name no line of the program at all.
func TestErrorAtCall(t *testing.T) {
	for _, tc := range []struct{ src, name, want string }{
		{"const r = new Response('{bad');\nconsole.log(1);\nawait r.json();\n", "SyntaxError", "main.js:3:"},
		{"const f = async () => {\n  const r = new Response('');\n  return await r.json();\n};\nawait f();\n", "SyntaxError", "main.js:3:"},
		{"\nawait fetch('http://127.0.0.1:1/');\n", "TypeError", "main.js:2:"},
	} {
		out, _ := run(t, tc.src, false, Options{HTTP: &http.Client{}})
		if out.Error == nil || out.Error.Name != tc.name || !strings.Contains(out.Error.Stack, tc.want) {
			t.Errorf("%q: error %+v, want %s at %s", tc.src, out.Error, tc.name, tc.want)
			continue
		}
		checkLines(t, tc.src, out.Error.Stack)
	}
}

// console shows an error's stack in the source's lines too.
func TestConsoleStack(t *testing.T) {
	src := "const a: number = 1;\n\ntry {\n  null.x;\n} catch (e) {\n  console.log(e);\n  console.error({ e });\n}\nconsole.trace('here');\n"
	out, stdout := run(t, src, true, Options{})
	if out.Error != nil {
		t.Fatal(out.Error)
	}
	if strings.Count(stdout, "main.ts:4:") != 2 || !strings.Contains(stdout, "main.ts:9:") {
		t.Errorf("want main.ts:4: twice and main.ts:9:\n%s", stdout)
	}
	checkLines(t, src, stdout)
}

// console shows a class as a class, the engine's own too, whose source
// text the embedded bytecode leaves out, as Deno and Node show theirs; a
// function and a built-in stay functions.
func TestConsoleClasses(t *testing.T) {
	src := "class A {}\nclass B extends A {}\nconsole.log(URL, Headers, Response, AbortSignal, TextEncoder, DOMException, A, B, function f() {}, Map)\n"
	out, stdout := run(t, src, false, Options{})
	if out.Error != nil {
		t.Fatal(out.Error)
	}
	want := "[class URL] [class Headers] [class Response extends Body] [class AbortSignal extends EventTarget] " +
		"[class TextEncoder] [class DOMException extends Error] [class A] [class B extends A] [Function: f] [Function: Map]\n"
	if stdout != want {
		t.Errorf("got  %q\nwant %q", stdout, want)
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
	// A small stack: structuredClone's deep nesting goes past it without
	// recursion, at a fraction of the depth (and of the race detector's
	// time) the default would need.
	out, stdout := run(t, string(src), false, Options{Stack: 1000})
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
