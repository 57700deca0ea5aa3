package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/cruciblehq/crucible/apis"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/sandbox"
)

const toolsUsage = `Usage: crucible tools [--config FILE] [--json | --ts]
       crucible tools --apis [--config FILE] [--json]

Starts the servers of the config's servers section and lists the tools that
their policies let the code call: a table of server, tool and description
(a tool by the name the code calls it by, its own name after it in
parentheses where they differ: that is the one the policies' globs match),
--json the whole of each (with js_name, the name the code calls, and its
input and output JSON Schemas), or --ts the TypeScript declarations the
code sees. A server that cannot be listed is
named on stderr, and the exit code is 1.

With --apis, lists the config's HTTP APIs instead, as the code's
tools.apis() does: a table of name, base URL, authentication, operations
and description, or --json the whole of each.

Flags:
`

func runTools(ctx context.Context, args []string, env Env) int {
	fs := newFlagSet("tools", toolsUsage)
	file := fs.String("config", "", configFlagHelp)
	asJSON := fs.Bool("json", false, "print the tools as one JSON array")
	asTS := fs.Bool("ts", false, "print the TypeScript declarations of the tools")
	asAPIs := fs.Bool("apis", false, "list the HTTP APIs of the config's apis section")
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() > 0 || (*asJSON && *asTS) || (*asAPIs && *asTS) {
		fmt.Fprintln(env.Stderr, "crucible tools: takes no arguments, and at most one of --json and --ts (--apis: no --ts)")
		return ExitUsage
	}
	cfg, src, err := loadConfig(*file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible tools: %v\n", err)
		return ExitUsage
	}
	// What it lists is the config's, so it says which one.
	fmt.Fprintf(env.Stderr, "crucible tools: %s\n", src)
	if err := sandbox.CheckConfig(cfg); err != nil {
		fmt.Fprintf(env.Stderr, "crucible tools: %v\n", err)
		return ExitUsage
	}
	if *asAPIs {
		return listAPIs(cfg, *asJSON, env)
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
			name := t.JSName // what the code writes after tools.<server>.
			if name != t.Name {
				name += " (" + t.Name + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Server, name, desc)
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

// listAPIs prints cfg's HTTP APIs: a table, or the JSON that tools.apis()
// gives the code.
func listAPIs(cfg *config.Config, asJSON bool, env Env) int {
	catalog, err := apis.Load(cfg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible tools: %v\n", err)
		return ExitUsage
	}
	list := catalog.List()
	if asJSON {
		out, err := json.MarshalIndent(list, "", "  ")
		if err != nil {
			fmt.Fprintf(env.Stderr, "crucible tools: %v\n", err)
			return ExitFail
		}
		fmt.Fprintf(env.Stdout, "%s\n", out)
		return ExitOK
	}
	if len(list) == 0 {
		fmt.Fprintln(env.Stderr, "crucible tools: no APIs are configured (see the apis section of crucible.yaml)")
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "API\tBASE URL\tAUTH\tOPERATIONS\tDESCRIPTION")
	for _, a := range list {
		var auth []string
		for _, x := range a.Auth {
			auth = append(auth, x.Header+x.Query)
		}
		ops := "-"
		switch a.Docs {
		case "openapi":
			ops = fmt.Sprint(a.Operations)
		case "markdown":
			ops = fmt.Sprintf("%d sections", a.Sections)
		}
		desc, _, _ := strings.Cut(a.Description, "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Name, strings.Join(a.BaseURLs, " "),
			cmp.Or(strings.Join(auth, "; "), "-"), ops, desc)
	}
	tw.Flush()
	return ExitOK
}
