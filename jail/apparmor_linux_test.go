package jail

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

func TestAppArmorCheck(t *testing.T) {
	for _, c := range []struct {
		name   string
		state  apparmorState
		shown  bool
		status string
		want   string
	}{
		{"no AppArmor", apparmorState{uid: 1000}, false, "", ""},
		{"not restricted", apparmorState{restrict: "0", uid: 1000}, true, StatusOK, "not restricted"},
		{"root", apparmorState{restrict: "1", label: "unconfined", uid: 0}, true, StatusOK, "not for root"},
		{"a profile", apparmorState{restrict: "1", label: "crucible (unconfined)", uid: 1000}, true, StatusOK, `"crucible (unconfined)"`},
		{"unconfined", apparmorState{restrict: "1", label: "unconfined", uid: 1000, exe: "/opt/my tools/crucible"}, true, StatusMissing,
			`sudo sh -c ''\''/opt/my tools/crucible'\'' doctor --apparmor > /etc/apparmor.d/crucible && apparmor_parser -r /etc/apparmor.d/crucible'`},
		{"no label", apparmorState{restrict: "1", uid: 1000, exe: "/usr/bin/crucible"}, true, StatusMissing,
			`sudo sh -c '/usr/bin/crucible doctor --apparmor > /etc/apparmor.d/crucible && apparmor_parser -r /etc/apparmor.d/crucible'`},
	} {
		got, shown := c.state.check()
		if shown != c.shown || (shown && (got.Status != c.status || !strings.Contains(got.Detail+got.Fix, c.want))) {
			t.Errorf("%s: %v %+v; want %v, %s, %q", c.name, shown, got, c.shown, c.status, c.want)
		}
	}
}

// The profile, parsed by the real parser (Debian's apparmor package; the
// parser works where the kernel has no AppArmor). A parser older than
// AppArmor 4.0 knows neither the userns rule nor abi 4.0: it must then
// refuse that rule and nothing else.
func TestAppArmorProfileParses(t *testing.T) {
	parser := testenv.NeedTool(t, "apparmor_parser")
	exe := "/opt/my tools/crucible"
	profile := AppArmorProfile(exe)
	if !strings.Contains(profile, `profile crucible "/opt/my tools/crucible" flags=(unconfined) {`) || !strings.Contains(profile, "\n  userns,\n") {
		t.Fatalf("profile:\n%s", profile)
	}
	parse := func(text string) (string, error) {
		p := filepath.Join(t.TempDir(), "crucible")
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
		return
	}
	old := strings.Replace(profile, "abi <abi/4.0>,", "abi <abi/3.0>,", 1)
	out, err := parse(old)
	line := strings.Count(old[:strings.Index(old, "  userns,")], "\n") + 1
	if err == nil || !strings.Contains(out, "at line "+strconv.Itoa(line)+":") {
		t.Errorf("parser %s: want the userns rule (line %d) refused: %v\n%s", v, line, err, out)
	}
	if out, err := parse(strings.Replace(old, "  userns,\n", "", 1)); err != nil {
		t.Errorf("the profile without its userns rule: %v\n%s", err, out)
	}
	t.Logf("%s predates the userns rule (AppArmor 4.0): the rest of the profile parses", v)
}
