package engine

import (
	"bytes"
	"context"
	"testing"

	"modernc.org/quickjs"

	"github.com/cruciblehq/crucible/lang/js/engine/internal/bytecode"
)

const hello = "const greeting: string = \"hello\";\nconsole.log(greeting);\nexport default { ok: true };\n"

// A whole run of a tiny TypeScript program: transpile, a new engine with
// every global, the program, the result.
func BenchmarkRunHello(b *testing.B) {
	for b.Loop() {
		if out := Run(context.Background(), hello, "hello.ts", true, Options{}); out.Error != nil {
			b.Fatal(out.Error)
		}
	}
}

func BenchmarkTranspile(b *testing.B) {
	for b.Loop() {
		if _, err := transpile(hello, "hello.ts", true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewVM(b *testing.B) {
	for b.Loop() {
		vm, err := quickjs.NewVM()
		if err != nil {
			b.Fatal(err)
		}
		_ = vm.Close()
	}
}

// The embedded bytecode is that of the scripts beside it.
func TestBytecodeCurrent(t *testing.T) {
	for _, name := range []string{"web", "prelude"} {
		bc, err := bytecode.Compile(string(script(name + ".js")))
		if err != nil {
			t.Fatalf("%s.js: %v", name, err)
		}
		if !bytes.Equal(bc, script(name+".bc")) {
			t.Errorf("js/%s.bc is not js/%s.js compiled: run go generate ./lang/js/engine", name, name)
		}
	}
}

// A new engine with every global (the Web APIs and the prelude), as each
// execution's worker makes one.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		r, err := New(Options{})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
