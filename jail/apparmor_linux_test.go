package jail

import (
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
	profile := AppArmorProfile("/opt/my tools/crucible")
	if !strings.Contains(profile, `profile crucible "/opt/my tools/crucible" flags=(unconfined) {`) || !strings.Contains(profile, "\n  userns,\n") {
		t.Fatalf("profile:\n%s", profile)
	}
	testenv.AppArmorParse(t, profile)
}
