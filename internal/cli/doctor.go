package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang/deno"
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

func runDoctor(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: crucible doctor\n\nChecks each kernel feature the jail needs, then builds one jail.\nExits 1 when a required feature is missing.")
	}
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	checks := append(jail.Diagnose(ctx), runtimeChecks(config.Default())...)
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
