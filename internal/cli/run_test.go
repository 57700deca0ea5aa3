package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file by name: its extension picks the language, and the program keeps
// crucible's stdin.
func TestRunFile(t *testing.T) {
	requireRoot(t)
	file := filepath.Join(t.TempDir(), "prog.py")
	if err := os.WriteFile(file, []byte("import sys\nprint(sys.stdin.read().upper())\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "shout", "run", file)
	if code != 0 || out != "SHOUT\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// Flags may follow FILE; without --json, the program's value is printed
// after its output, as JSON.
func TestRunFlagsAfterFileAndResult(t *testing.T) {
	requireRoot(t)
	file := filepath.Join(t.TempDir(), "prog.py")
	if err := os.WriteFile(file, []byte("import crucible\nprint('out')\ncrucible.result = {'n': 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "", "run", file)
	if code != 0 || out != "out\n{\"n\":1}\n" {
		t.Errorf("without --json: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	r := jsonRun(t, "", "run", file, "--json", "--timeout", "20s")
	if r.ExitCode != 0 || r.Stdout != "out\n" || string(r.Result) != `{"n":1}` {
		t.Errorf("flags after FILE: %+v", r)
	}
}

// A runtime that is not on the host is named by its setting, before any jail
// is built.
func TestRunMissingRuntime(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("runtimes:\n  python: /nonexistent/python3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "print(1)", "run", "--config", cfg, "--lang", "py", "-")
	if code != ExitUsage || !strings.Contains(errs, "runtimes.python") || strings.Contains(errs, "kernel") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run"},
		{"run", "a.py", "b.py"},
		{"run", "a.py", "--json", "b.py"},
		{"run", "a.py", "-"},
		{"run", "--lang", "ruby", "a.rb"},
		{"run", "/nonexistent/prog.py"},
	} {
		code, _, errs := run(t, "x", args...)
		if code != ExitUsage || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line", args, code, errs)
		}
	}
}
