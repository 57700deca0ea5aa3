// Package hello is the TypeScript program that the cold-start benchmarks
// run: it prints hello and returns a value.
package hello

import (
	"os"
	"path/filepath"
)

// Source is the program.
const Source = `const greeting: string = "hello";
console.log(greeting);
export default { ok: true };
`

// Embedded is a configuration that runs TypeScript on the embedded
// engine, the benchmarks' subject: the default, runtimes.engine auto, is
// Deno wherever one is found (after npm install, in node_modules).
const Embedded = "runtimes:\n  engine: embedded\n"

// Write writes the program to hello.ts in a new temporary directory, and
// Embedded to crucible.yaml beside it, and returns their paths; remove
// removes the directory.
func Write() (file, config string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "crucible-bench-")
	if err != nil {
		return "", "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	file, config = filepath.Join(dir, "hello.ts"), filepath.Join(dir, "crucible.yaml")
	for name, text := range map[string]string{file: Source, config: Embedded} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			remove()
			return "", "", nil, err
		}
	}
	return file, config, remove, nil
}
