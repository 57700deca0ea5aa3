package engine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Whatever the source, an error names a line of it, and a stack mapped
// through the program's source map names no line past its end, however
// the wrapper and esbuild move the code about.
func FuzzTranspile(f *testing.F) {
	for _, s := range []string{
		"return 1", "const o = {\n  a: 1,\n", "foo();\n}\nbar();\n", "export default 1;\nreturn 2;\n",
		"const s = `abc\n", "/* x\n", "await x;\nreturn (\n", "\n\n\n", "", "type T = {\n", "}",
		"function f() {\n  throw new Error('x');\n}\nf();\n",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, src string, ts bool) {
		lines := len(lineBreak().FindAllStringIndex(src, -1)) + 1
		p, err := transpile(src, "main.js", ts)
		if err != nil {
			if m := framePos().FindStringSubmatch(err.Stack); m != nil {
				if n, _ := strconv.Atoi(m[2]); n < 1 || n > lines {
					t.Fatalf("%q: %s at line %d of %d", src, err.Message, n, lines)
				}
			}
			return
		}
		if p.smap() == nil {
			t.Fatalf("%q: esbuild wrote other code with a source map than without", src)
		}
		// A frame at every generated line, at its start and far along it.
		var stack strings.Builder
		for l := 1; l <= strings.Count(p.code, "\n")+1; l++ {
			stack.WriteString("    at f (" + position("main.js", l, 1) + ")\n    at g (" + position("main.js", l, 1000) + ")\n")
		}
		for _, m := range framePos().FindAllStringSubmatch(p.mapStack(stack.String()), -1) {
			if n, _ := strconv.Atoi(m[2]); n < 1 || n > lines {
				t.Fatalf("%q: a frame at line %d of %d", src, n, lines)
			}
		}
	})
}

// lineCount agrees with lineBreak, which esbuild's count follows.
func TestLineCount(t *testing.T) {
	for _, src := range []string{"", "a", "a\n", "a\r\nb", "a\rb\nc", "\r\n\r\n", "a\u2028b\u2029c", "\n\r"} {
		if got, want := lineCount(src), len(lineBreak().FindAllStringIndex(src, -1))+1; got != want {
			t.Errorf("lineCount(%q) = %d; want %d", src, got, want)
		}
	}
}

// The code a program runs is made without a source map, and its map later
// from a second transform: the two transforms must write the same code, or
// stack traces would point at the wrong lines. They do, for every program of
// the corpus, as JavaScript and as TypeScript.
func TestSourceMapLater(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/*.[jt]s")
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range []bool{false, true} {
			p, perr := transpile(string(src), filepath.Base(f), ts)
			if perr != nil {
				continue // not TypeScript as well as JavaScript
			}
			if p.smap() == nil {
				t.Errorf("%s (ts %v): no source map for the code that runs", f, ts)
			}
		}
	}
}
