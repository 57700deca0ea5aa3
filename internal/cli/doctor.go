package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/egress"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang/deno"
	"github.com/cruciblehq/crucible/sandbox"
	"golang.org/x/sys/unix"
)

// runtimeChecks says which languages `crucible run` can run here. None is
// required: the jail works without them.
func runtimeChecks(cfg *config.Config) []jail.Check {
	py := jail.Check{Feature: "python (crucible run)", Status: jail.StatusOK, Detail: cfg.Runtimes.Python}
	if err := unix.Access(cfg.Runtimes.Python, unix.X_OK); err != nil {
		py.Status, py.Fix = jail.StatusMissing, "install python3 (apt-get install python3), or set runtimes.python"
		py.Detail = cfg.Runtimes.Python + ": " + err.Error()
	}
	dn := jail.Check{Feature: "deno (crucible run)", Status: jail.StatusOK}
	if p, err := deno.Find(cfg.Runtimes.Deno); err != nil {
		dn.Status, dn.Detail, dn.Fix = jail.StatusMissing, "not found", err.Error()
	} else {
		dn.Detail = p
	}
	return []jail.Check{py, dn}
}

// networkCheck builds a jail with a network and has it resolve an allowed
// name: the tun device, the stack and its DNS, end to end. Nothing leaves
// the machine: the sandbox's resolver answers by itself. Only root can give
// a jail a network, so as another user there is nothing to try.
func networkCheck(ctx context.Context) []jail.Check {
	if os.Geteuid() != 0 {
		return nil
	}
	const name = "doctor.crucible.test"
	c := jail.Check{Feature: "network (jail)", Status: jail.StatusMissing,
		Fix: "see the network (tun) row (only needed for network rules: network.allow, --allow-net)"}
	cfg := config.Default()
	cfg.Network.Allow = []string{name}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	r, err := sandbox.Exec(ctx, cfg, []string{"getent", "ahostsv4", name}, sandbox.Options{Stdout: &out, Stderr: &out})
	switch {
	case err != nil:
		c.Detail = err.Error()
	case r.ExitCode != 0 || !synthetic(out.String()):
		c.Detail = fmt.Sprintf("the jail's DNS did not answer (exit %d)", r.ExitCode)
	default:
		c.Status, c.Fix = jail.StatusOK, ""
		c.Detail = fmt.Sprintf("built a jail with a network; its DNS answered, in %s", time.Since(start).Round(time.Millisecond))
	}
	return []jail.Check{c}
}

// synthetic reports whether getent's first answer is a sandbox address.
func synthetic(getent string) bool {
	f := strings.Fields(getent)
	if len(f) == 0 {
		return false
	}
	a, err := netip.ParseAddr(f[0])
	return err == nil && egress.Synthetic4.Contains(a)
}

func runDoctor(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: crucible doctor\n\nChecks each kernel feature the jail needs, then builds one jail.\nExits 1 when a required feature is missing.")
	}
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	checks := append(jail.Diagnose(ctx), networkCheck(ctx)...)
	checks = append(checks, runtimeChecks(config.Default())...)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tSTATUS\tDETAIL")
	code := ExitOK
	for _, c := range checks {
		status := c.Status
		if c.Status != jail.StatusOK && !c.Required {
			status = "optional"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Feature, status, c.Detail)
		if c.Status != jail.StatusOK && c.Required {
			code = ExitFail
		}
	}
	tw.Flush()
	for _, c := range checks {
		if c.Status == jail.StatusOK || c.Fix == "" {
			continue
		}
		fmt.Fprintf(env.Stdout, "\n%s: %s", c.Feature, c.Fix)
		if c.Degradable != "" {
			fmt.Fprintf(env.Stdout, "\n  (or run with --allow-degraded %s, at the cost of that layer)", c.Degradable)
		}
		fmt.Fprintln(env.Stdout)
	}
	return code
}
