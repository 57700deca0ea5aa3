package deno

import (
	"os"
	"path/filepath"
	"testing"
)

// Without runtimes.deno and with no deno in PATH, Find takes the one that
// `npm install deno` put in node_modules of the working directory or of its
// nearest parent that has one.
func TestFindInParentNodeModules(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	deno := filepath.Join(bin, "deno")
	if err := os.WriteFile(deno, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	t.Chdir(sub)
	got, err := Find("")
	if err != nil || got != deno {
		t.Errorf("Find from %s = %q, %v; want %s", sub, got, err, deno)
	}
	t.Chdir(t.TempDir())
	if _, err := Find(""); err != ErrNotFound {
		t.Errorf("Find with no deno anywhere: %v, want ErrNotFound", err)
	}
}
