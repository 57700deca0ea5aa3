// Package testenv says what a test may rely on in the machine it runs on,
// and skips (or, under CI, fails) a test whose needs are not met. It is for
// tests only.
//
// A test that skips on a developer's machine because a tool is missing must
// not skip in CI, where the tool is installed by .ci/run: a silent skip there
// would hide a test that no longer runs anywhere. With CI=true in the
// environment, every Need* below fails the test instead of skipping it.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where every tool
// the tests need is installed and every privilege is held.
func InCI() bool { return os.Getenv("CI") == "true" }

// NeedRoot skips t unless it runs as root; under CI it fails instead.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "needs root: "+why)
	}
}

// NeedTool returns the path of the named program, or skips t (fails it under
// CI) when the program is not installed.
func NeedTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, "needs "+name+" in PATH")
	}
	return p
}

// Missing skips t for a reason outside the test's control, or fails it under
// CI, where nothing the tests need may be missing.
func Missing(t testing.TB, reason string) {
	t.Helper()
	missing(t, reason)
}

// PublicDir returns a new directory that every user may read and traverse,
// removed when the test ends. Not t.TempDir: its parent is private to root,
// so neither an unprivileged user nor a jail's root could reach it.
func PublicDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "crucible-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func missing(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s (CI=true: a missing tool or privilege fails the run; .ci/run must install it)", reason)
	}
	t.Skip(reason)
}

// DirNames lists the names in dir, sorted.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
