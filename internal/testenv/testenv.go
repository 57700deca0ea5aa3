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
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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

// AppArmorParse parses an AppArmor profile with the real apparmor_parser
// (Debian's apparmor package; it parses where the kernel has no AppArmor),
// loading nothing into the kernel. A parser older than 4.0 knows neither
// abi/4.0 nor its userns rule: there the profile must have exactly one
// userns rule, which the parser must refuse, and parse without it. It
// returns whether the parser knew the userns rule.
func AppArmorParse(t testing.TB, profile string) (userns bool) {
	t.Helper()
	parser := NeedTool(t, "apparmor_parser")
	parse := func(text string) (string, error) {
		p := filepath.Join(t.TempDir(), "profile")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(parser, "--skip-kernel-load", "--skip-cache", "--quiet", p).CombinedOutput()
		return string(out), err
	}
	ver, _ := exec.Command(parser, "--version").Output()
	v, _, _ := strings.Cut(string(ver), "\n")
	m := regexp.MustCompile(`version (\d+)\.`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("apparmor_parser --version: %q", v)
	}
	if major, _ := strconv.Atoi(m[1]); major >= 4 {
		if out, err := parse(profile); err != nil {
			t.Fatalf("apparmor_parser: %v\n%s\n%s", err, out, profile)
		}
		return true
	}
	if strings.Count(profile, "\n  userns,\n") != 1 {
		t.Fatalf("want one userns rule in the profile:\n%s", profile)
	}
	old := strings.Replace(profile, "abi <abi/4.0>,", "abi <abi/3.0>,", 1)
	out, err := parse(old)
	line := strings.Count(old[:strings.Index(old, "\n  userns,\n")+1], "\n") + 1
	if err == nil || !strings.Contains(out, "at line "+strconv.Itoa(line)+":") {
		t.Errorf("parser %s: want the userns rule (line %d) refused: %v\n%s", v, line, err, out)
	}
	if out, err := parse(strings.Replace(old, "\n  userns,\n", "\n", 1)); err != nil {
		t.Errorf("the profile without its userns rule: %v\n%s", err, out)
	}
	t.Logf("%s predates the userns rule (AppArmor 4.0): the rest of the profile parses", v)
	return false
}

// RemoveCgroupTree removes the cgroup directory dir and every cgroup below
// it, deepest first, retrying for up to 20 seconds while their last
// processes leave; it fails t if dir is still there then.
func RemoveCgroupTree(t testing.TB, dir string) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var dirs []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
		if time.Now().After(end) {
			t.Errorf("cannot remove the test's cgroup %s", dir)
			return
		}
	}
}

// NeedEverything returns node and the main script of server-everything in
// the node_modules folder nm (npm install at the repository's root makes
// it), skipping t without either; under CI it fails instead.
func NeedEverything(t testing.TB, nm string) (node, main string) {
	t.Helper()
	node = NeedTool(t, "node")
	main, _ = filepath.Abs(filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"))
	if _, err := os.Stat(main); err != nil {
		missing(t, "needs @modelcontextprotocol/server-everything (npm install at the repository's root)")
	}
	return node, main
}
