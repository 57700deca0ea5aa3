package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/egress"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang"
)

// Check is one line of `crucible doctor`: a feature, whether this host has
// it, and how to fix it when it does not.
type Check = jail.Check

// Statuses of a Check.
const (
	StatusOK      = jail.StatusOK
	StatusMissing = jail.StatusMissing
)

// Diagnose checks what the sandbox needs of this host: each kernel feature,
// then a real jail; as root, a jail with a network; and which languages can
// run with cfg's runtimes (none of those is required).
func Diagnose(ctx context.Context, cfg *config.Config) []Check {
	checks := jail.Diagnose(ctx)
	checks = append(checks, networkCheck(ctx, checks)...)
	engine := Check{Feature: "ts/js engine", Status: StatusOK, Detail: EngineNote(cfg)}
	if err := CheckEngine(cfg); err != nil {
		engine.Status, engine.Detail, engine.Fix = StatusMissing, "runtimes.engine is deno: no deno binary", err.Error()
	}
	checks = append(checks, engine)
	for _, l := range lang.All() {
		l, _ = lookup(cfg, l.Name) // ts and js as runtimes.engine runs them
		c := Check{Feature: l.Name + " (crucible run)", Status: StatusOK}
		if l.Check != nil {
			if detail, err := l.Check(settings(cfg)); err != nil {
				c.Status, c.Detail, c.Fix = StatusMissing, "not found", err.Error()
			} else {
				c.Detail = detail
			}
		}
		checks = append(checks, c)
	}
	return checks
}

// AppArmorProfile is the AppArmor profile that lets this binary, at its
// real path, make user namespaces where Ubuntu (23.10 and later) forbids
// them, for /etc/apparmor.d/crucible.
func AppArmorProfile() (string, error) {
	exe, err := jail.RealExe()
	if err != nil {
		return "", fmt.Errorf("finding this binary: %w", err)
	}
	return jail.AppArmorProfile(exe), nil
}

// networkCheck builds a jail with a network and has it resolve an allowed
// name: the tun device, the stack and its DNS, end to end, without the
// layers that checks found missing (their rows say so already). Nothing
// leaves the machine: the sandbox's resolver answers by itself. Only root
// (of the host's user namespace or of crucible's own) can give a jail a
// network, so otherwise there is nothing to try.
func networkCheck(ctx context.Context, checks []Check) []Check {
	if os.Geteuid() != 0 {
		return nil
	}
	const name = "doctor.crucible.test"
	c := Check{Feature: "network (jail)", Status: StatusMissing,
		Fix: "see the network (tun) row (only needed for network rules: network.allow, --allow-net)"}
	cfg := config.Default()
	cfg.Network.Allow = []string{name}
	for _, c := range checks {
		if c.Status != StatusOK && c.Degradable != "" {
			cfg.Sandbox.AllowDegraded = append(cfg.Sandbox.AllowDegraded, c.Degradable)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	// getent where there is one (glibc's libc-bin); else busybox's or
	// bind's nslookup, as in a minimal image.
	r, err := Exec(ctx, cfg, []string{"sh", "-c", `if command -v getent >/dev/null; then getent ahostsv4 "$1"; elif command -v nslookup >/dev/null; then nslookup "$1"; else exit 127; fi`, "sh", name},
		Options{Stdout: &out, Stderr: &out})
	switch {
	case err != nil:
		c.Detail = err.Error()
	case r.ExitCode == 127:
		c.Detail = "nothing in /usr to ask the jail's DNS with (getent, nslookup): the jail runs the host's commands"
	case r.ExitCode != 0 || !synthetic(out.String()):
		c.Detail = fmt.Sprintf("the jail's DNS did not answer (exit %d)", r.ExitCode)
	default:
		c.Status, c.Fix = StatusOK, ""
		c.Detail = fmt.Sprintf("built a jail with a network; its DNS answered, in %s", time.Since(start).Round(time.Millisecond))
	}
	return []Check{c}
}

// synthetic reports whether out, getent's or nslookup's, holds a sandbox
// address: the answer of the jail's own resolver.
func synthetic(out string) bool {
	for _, f := range strings.Fields(out) {
		if a, err := netip.ParseAddr(f); err == nil && egress.Synthetic4.Contains(a) {
			return true
		}
	}
	return false
}
