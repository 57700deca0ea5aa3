package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/toolbridge"
)

// Tool is one tool that the code may call: its server, name, description
// and JSON schemas.
type Tool = toolbridge.Tool

// toolOptions are the tool bridge's settings from cfg's servers and tools
// sections.
func toolOptions(cfg *config.Config) toolbridge.Options {
	o := toolbridge.Options{
		Servers: map[string]toolbridge.Server{},
		Limits: toolbridge.Limits{
			Calls:       cfg.Tools.MaxCalls,
			ArgBytes:    int64(cfg.Tools.MaxArgSize),
			ResultBytes: int64(cfg.Tools.MaxResultSize),
		},
	}
	for name, s := range cfg.Servers {
		o.Servers[name] = toolbridge.Server{
			Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Cwd,
			URL: s.URL, Headers: s.Headers,
			Policy: toolbridge.Policy{
				Allow: s.Tools.Allow, Deny: s.Tools.Deny,
				Group:   s.Group,
				Timeout: time.Duration(s.Timeout), // 0: the bridge's default
			},
		}
	}
	return o
}

// checkServers checks what config cannot: that each server's name works as
// a name in every language's tools API.
func checkServers(cfg *config.Config) error {
	for name := range cfg.Servers {
		if why := toolbridge.ServerNameOK(name); why != "" {
			path := config.KeyPath("servers", -1, name)
			msg := fmt.Sprintf("%s: the name %s", path, why)
			if where := cfg.Where(path); where != "" {
				msg = where + ": " + msg
			}
			return errors.New(msg)
		}
	}
	return nil
}

// ListTools starts cfg's servers, lists the tools that their policies let
// the code call (sorted by server and name), and stops them. A server that
// cannot be listed is named in the error, returned with the others' tools.
func ListTools(ctx context.Context, cfg *config.Config) ([]Tool, error) {
	if err := checkServers(cfg); err != nil {
		return nil, err
	}
	b, err := toolbridge.New(toolOptions(cfg))
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Tools(ctx)
}

// ToolDeclarations returns the TypeScript declarations of tools, as the
// code sees them: `tools.<server>.<tool>(args)` and `tools.call(...)`.
func ToolDeclarations(tools []Tool) string { return toolbridge.Declarations(tools) }
