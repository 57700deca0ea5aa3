package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/sandbox"
)

const toolsUsage = `Usage: crucible tools [--config FILE] [--json | --ts]

Starts the servers of the config's servers section and lists the tools that
their policies let the code call: a table of server, tool and description,
--json the whole of each (with its input and output JSON Schemas), or --ts
the TypeScript declarations the code sees. A server that cannot be listed is
named on stderr, and the exit code is 1.

Flags:
`

func runTools(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	file := fs.String("config", "", "read the servers from `FILE` (crucible.yaml)")
	asJSON := fs.Bool("json", false, "print the tools as one JSON array")
	asTS := fs.Bool("ts", false, "print the TypeScript declarations of the tools")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), toolsUsage)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() > 0 || (*asJSON && *asTS) {
		fmt.Fprintln(env.Stderr, "crucible tools: takes no arguments, and at most one of --json and --ts")
		return ExitUsage
	}
	cfg := config.Default()
	if *file != "" {
		var err error
		if cfg, err = config.Load(*file); err != nil {
			fmt.Fprintf(env.Stderr, "crucible tools: %v\n", err)
			return ExitUsage
		}
	}
	if err := sandbox.CheckConfig(cfg); err != nil {
		fmt.Fprintf(env.Stderr, "crucible tools: %v\n", err)
		return ExitUsage
	}
	tools, err := sandbox.ListTools(ctx, cfg)
	switch {
	case *asJSON:
		if tools == nil {
			tools = []sandbox.Tool{}
		}
		out, jerr := json.MarshalIndent(tools, "", "  ")
		if jerr != nil {
			fmt.Fprintf(env.Stderr, "crucible tools: %v\n", jerr)
			return ExitFail
		}
		fmt.Fprintf(env.Stdout, "%s\n", out)
	case *asTS:
		fmt.Fprint(env.Stdout, sandbox.ToolDeclarations(tools))
	default:
		if len(cfg.Servers) == 0 {
			fmt.Fprintln(env.Stderr, "crucible tools: no servers are configured (see the servers section of crucible.yaml)")
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tTOOL\tDESCRIPTION")
		for _, t := range tools {
			desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Server, t.Name, desc)
		}
		tw.Flush()
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(env.Stderr, "crucible tools: %s\n", line)
		}
		return ExitFail
	}
	return ExitOK
}
