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

// Write writes the program to hello.ts in a new temporary directory and
// returns its path; remove removes the directory.
func Write() (file string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "crucible-bench-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	file = filepath.Join(dir, "hello.ts")
	if err := os.WriteFile(file, []byte(Source), 0o644); err != nil {
		remove()
		return "", nil, err
	}
	return file, remove, nil
}
