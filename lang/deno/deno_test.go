package deno

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/lang"
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
	if err := os.WriteFile(deno, []byte("#!/bin/sh\necho 'deno 2.0.0 (stable)'\n"), 0o755); err != nil {
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

// A deno older than 2.0, one that fails, and one that does not say its
// version are refused, with why and no path; one of 2.0 or later is taken.
func TestFindVersion(t *testing.T) {
	for out, want := range map[string]string{
		"echo 'deno 1.46.3 (stable, release, x86_64-unknown-linux-gnu)'": "deno 1.46.3 is too old: Crucible needs deno 2.0 or later",
		"exit 3":                      "does not run",
		"echo 'v20.20.2'":             "does not say its version",
		"echo 'deno 2.9.6 (stable)'":  "",
		"echo 'deno 10.0.1 (canary)'": "",
	} {
		dir := t.TempDir()
		deno := filepath.Join(dir, "deno")
		if err := os.WriteFile(deno, []byte("#!/bin/sh\n"+out+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := Find(deno)
		switch {
		case want == "" && (err != nil || got != deno):
			t.Errorf("%s: %q, %v", out, got, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), dir)):
			t.Errorf("%s: %v, want %q and no path", out, err, want)
		}
	}
}

// A program runs under its file's base name when that is safe in a stack
// trace and Deno runs its extension; else under main.ts (or the extension
// its language asks for).
func TestName(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"-", ""}: "main.ts", {"/home/u/job.ts", ""}: "job.ts", {"x.mjs", ""}: "x.mjs",
		{"x.py", ""}: "main.ts", {"/a/b/../evil\nname.ts", ""}: "main.ts", {".hidden.ts", ""}: "main.ts",
		{"x.ts", ".js"}: "main.js", {"x.js", ".js"}: "x.js", {"-", ".js"}: "main.js",
	} {
		if got := Name(in[0], in[1]); got != want {
			t.Errorf("Name(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

// Deno gets no --allow-all, and no FFI: its walls are the flags the
// runner is started with.
func TestPermissions(t *testing.T) {
	for _, p := range []*lang.Program{Program([]byte("1"), "-", "", "/usr/bin/deno"), WarmProgram("/usr/bin/deno", false)} {
		args := strings.Join(p.Args, " ")
		if strings.Contains(args, " -A ") || strings.Contains(args, "--allow-all") || !strings.Contains(args, " --deny-ffi ") ||
			!strings.Contains(args, " --allow-read=/workspace,") {
			t.Errorf("deno's flags: %s", args)
		}
	}
}
