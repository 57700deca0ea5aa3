package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/sandbox"
	"github.com/cruciblehq/crucible/userns"
)

func runDoctor(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	apparmor := fs.Bool("apparmor", false, "print the AppArmor profile that lets this binary make user namespaces (Ubuntu 23.10 and later), and nothing else")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: crucible doctor [--apparmor]\n\nChecks each kernel feature the jail needs, then builds one jail, and says\nwhether crucible can execute anything here. Exits 1 when a required\nfeature is missing.\n\nWith --apparmor, prints the AppArmor profile for this binary's real path\ninstead, for /etc/apparmor.d/crucible.")
	}
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	if *apparmor {
		profile, err := sandbox.AppArmorProfile()
		if err != nil {
			fmt.Fprintf(env.Stderr, "crucible doctor: %v\n", err)
			return ExitFail
		}
		fmt.Fprint(env.Stdout, profile)
		return ExitOK
	}
	checks := sandbox.Diagnose(ctx, config.Default())
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tSTATUS\tDETAIL")
	var blocking, optional []sandbox.Check
	for _, c := range checks {
		status := c.Status
		switch {
		case c.Status == sandbox.StatusOK:
		case c.Required:
			blocking = append(blocking, c)
		default:
			status = "optional"
			optional = append(optional, c)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Feature, status, c.Detail)
	}
	tw.Flush()
	for _, c := range optional {
		printFix(c, env)
	}
	// The verdict last but for the fixes it needs, each given once, so
	// that nobody learns it only from serve's first execute.
	fmt.Fprintf(env.Stdout, "\n%s\n", verdict(blocking, optional))
	for _, c := range blocking {
		printFix(c, env)
	}
	if len(blocking) > 0 {
		return ExitFail
	}
	return ExitOK
}

// verdict says in one line what crucible can do here, as this user.
func verdict(blocking, optional []sandbox.Check) string {
	who := "as root"
	if uid := userns.HostUID(); uid != 0 {
		who = fmt.Sprintf("as uid %d", uid)
	}
	if len(blocking) > 0 {
		return "crucible serve, run and exec cannot execute anything " + who + ": " + features(blocking) + " missing. Fixes:"
	}
	s := "crucible serve, run and exec can execute " + who
	if len(optional) > 0 {
		s += ", without " + features(optional)
	}
	return s + "."
}

func features(cs []sandbox.Check) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Feature)
	}
	return strings.Join(names, ", ")
}

// printFix prints how to fix c, and, for a layer that may be missing, how
// to let it be, unless the fix says so already.
func printFix(c sandbox.Check, env Env) {
	fix := c.Fix
	if fix == "" {
		if !c.Required {
			return
		}
		fix = "no fix is known: see the detail above"
	}
	fmt.Fprintf(env.Stdout, "\n%s: %s\n", c.Feature, fix)
	if c.Degradable != "" && !strings.Contains(c.Fix, "--allow-degraded "+c.Degradable) {
		fmt.Fprintf(env.Stdout, "  (or let it be missing, at the cost of that layer: --allow-degraded %s, or sandbox.allow_degraded in crucible.yaml)\n", c.Degradable)
	}
}
