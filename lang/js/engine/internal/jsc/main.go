// Command jsc compiles the engine's JavaScript (js/*.js) to QuickJS
// bytecode (js/*.bc), which the engine embeds: evaluating bytecode skips
// parsing, a tenth of the time. Run it with `go generate ./lang/js/engine`
// after changing a script or upgrading modernc.org/quickjs, whose bytecode
// format is its own; a test fails while the two disagree.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cruciblehq/crucible/lang/js/engine/internal/bytecode"
)

func main() {
	files, err := filepath.Glob("js/*.js")
	if err != nil || len(files) == 0 {
		fail(fmt.Errorf("no js/*.js here (run it from lang/js/engine): %w", err))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			fail(err)
		}
		bc, err := bytecode.Compile(string(src))
		if err != nil {
			fail(fmt.Errorf("%s: %w", f, err))
		}
		if err := os.WriteFile(strings.TrimSuffix(f, ".js")+".bc", bc, 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "jsc:", err)
	os.Exit(1)
}
