package jail

import (
	"fmt"

	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cruciblehq/crucible/userns"
)

// AppArmor: where kernel.apparmor_restrict_unprivileged_userns is 1 (Ubuntu
// 23.10 and later), an unconfined process that makes a user namespace is
// moved to a profile that holds no capability in it, so that neither
// crucible's own namespace nor a jail can mount anything. A profile attached
// to the binary's path that allows userns lifts that for crucible alone, as
// Ubuntu's own profiles do for browsers and rootless container runtimes.

// AppArmorProfile is the profile that lets the binary at exe (its real
// path) make user namespaces, and confines it in nothing else.
func AppArmorProfile(exe string) string {
	return `# AppArmor profile for crucible (written by ` + "`crucible doctor --apparmor`" + `).
# Where kernel.apparmor_restrict_unprivileged_userns=1 (Ubuntu 23.10 and
# later), it lets this binary make user namespaces, as Ubuntu's profiles do
# for browsers and rootless container runtimes; it confines nothing else.
# Install it as root, once: ` + apparmorInstall(exe) + `
abi <abi/4.0>,
include <tunables/global>

profile crucible ` + strconv.Quote(exe) + ` flags=(unconfined) {
  userns,

  # Site-specific additions and overrides: see local/README.
  include if exists <local/crucible>
}
`
}

// realExe is this binary's real path, as a profile must name it.
func realExe() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

// RealExe is this binary's path with every symbolic link resolved, for
// `crucible doctor --apparmor`.
func RealExe() (string, error) { return realExe() }

// apparmorState is what the AppArmor check reads of this host.
type apparmorState struct {
	restrict string // kernel.apparmor_restrict_unprivileged_userns: "1", "0", or "" if absent
	label    string // this process's AppArmor label ("unconfined", "crucible (unconfined)"), or ""
	exe      string // this binary's real path
	uid      int    // the host uid crucible runs as
}

func readAppArmor() apparmorState {
	s := apparmorState{uid: userns.HostUID()}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil {
		s.restrict = strings.TrimSpace(string(b))
	}
	for _, p := range []string{"/proc/self/attr/apparmor/current", "/proc/self/attr/current"} {
		if b, err := os.ReadFile(p); err == nil {
			s.label = strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
			break
		}
	}
	s.exe, _ = realExe()
	return s
}

// check is doctor's AppArmor row, or false where there is nothing to say
// (no such restriction in this kernel).
func (s apparmorState) check() (Check, bool) {
	c := Check{Feature: "AppArmor", Status: StatusOK}
	switch {
	case s.restrict == "":
		return c, false
	case s.restrict == "0":
		c.Detail = "kernel.apparmor_restrict_unprivileged_userns=0: user namespaces are not restricted"
	case s.uid == 0:
		c.Detail = "user namespaces are restricted (kernel.apparmor_restrict_unprivileged_userns=1), but not for root"
	case s.label != "" && s.label != "unconfined":
		// A profile of ours is attached: whether it allows userns shows
		// in the namespace checks, which build real ones.
		c.Detail = fmt.Sprintf("user namespaces are restricted, and crucible runs under the profile %q (it must allow userns)", s.label)
	default:
		c.Status, c.Required = StatusMissing, true
		c.Detail = "user namespaces are restricted (kernel.apparmor_restrict_unprivileged_userns=1) and crucible has no AppArmor profile: in its namespaces it can mount nothing"
		c.Fix = "load a profile that allows crucible user namespaces, once (again if the binary moves): " + apparmorInstall(s.exe)
	}
	return c, true
}

// apparmorInstall is the one command that installs and loads the profile
// for the binary at exe.
func apparmorInstall(exe string) string {
	return "sudo sh -c " + shellQuote(shellQuote(exe)+" doctor --apparmor > /etc/apparmor.d/crucible && apparmor_parser -r /etc/apparmor.d/crucible")
}

// shellQuote quotes s for a POSIX shell, where it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
