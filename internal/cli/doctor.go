package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/sandbox"
)

func runDoctor(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: crucible doctor\n\nChecks each kernel feature the jail needs, then builds one jail.\nExits 1 when a required feature is missing.")
	}
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	checks := sandbox.Diagnose(ctx, config.Default())
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tSTATUS\tDETAIL")
	code := ExitOK
	for _, c := range checks {
		status := c.Status
		if c.Status != sandbox.StatusOK && !c.Required {
			status = "optional"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Feature, status, c.Detail)
		if c.Status != sandbox.StatusOK && c.Required {
			code = ExitFail
		}
	}
	tw.Flush()
	for _, c := range checks {
		if c.Status == sandbox.StatusOK || c.Fix == "" {
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
