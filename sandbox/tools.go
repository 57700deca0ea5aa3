package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/policy/netpolicy"
	"github.com/cruciblehq/crucible/serverlogin"
	"github.com/cruciblehq/crucible/toolbridge"
)

// Tool is one tool that the code may call: its server, name, description
// and JSON schemas.
type Tool = toolbridge.Tool

// toolOptions are the tool bridge's settings from cfg's servers and tools
// sections.
func toolOptions(cfg *config.Config, w *audit.Writer) toolbridge.Options {
	o := toolbridge.Options{
		Servers: map[string]toolbridge.Server{},
		Limits: toolbridge.Limits{
			Calls:       cfg.Tools.MaxCalls,
			ArgBytes:    int64(cfg.Tools.MaxArgSize),
			ResultBytes: int64(cfg.Tools.MaxResultSize),
		},
	}
	for name, s := range cfg.Servers {
		srv := toolbridge.Server{
			Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Cwd,
			URL: s.URL, Headers: s.Headers,
			Shared: s.Shared, MaxClients: s.MaxClients, IdleTimeout: time.Duration(s.IdleTimeout), // 0: the bridge's defaults
			Policy: toolbridge.Policy{
				Allow: s.Tools.Allow, Deny: s.Tools.Deny, Resources: resourceFilter(s.Resources), Rules: s.CallRules(),
				Group:           s.Group,
				Timeout:         time.Duration(s.Timeout),         // 0: the bridge's default
				ApprovalTimeout: time.Duration(s.ApprovalTimeout), // likewise
			},
		}
		if s.Jail {
			srv.Start = serverStart(name, s, cfg.Sandbox.AllowDegraded, w)
			srv.Paths = s.RO
		}
		if s.OAuth != nil {
			srv.Login = serverLogin(cfg, name)
		}
		o.Servers[name] = srv
	}
	return o
}

// checkServers checks what config cannot: that each server's name works as
// a name in every language's tools API, and that a jailed server's ro paths
// exist and its network rules compile.
func checkServers(cfg *config.Config) error {
	fail := func(path, format string, args ...any) error { return keyError(cfg, path, format, args...) }
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		s := cfg.Servers[name]
		at := config.KeyPath("servers", -1, name)
		if why := toolbridge.ServerNameOK(name); why != "" {
			return fail(at, "the name %s", why)
		}
		for i, p := range s.RO {
			if _, err := os.Stat(p); err != nil {
				return fail(config.KeyPath(at+".ro", i, ""), "%v", err)
			}
		}
		n := s.JailNetwork()
		if _, err := NetworkPolicy(&n); err != nil {
			var re *netpolicy.RuleError
			if errors.As(err, &re) {
				return fail(config.KeyPath(at+".network."+re.List, re.Index, re.Rule), "%q: %v", re.Rule, re.Err)
			}
			return fail(at, "%v", err)
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
	b, err := toolbridge.New(toolOptions(cfg, nil))
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Tools(ctx)
}

// ToolDeclarations returns the TypeScript declarations of tools, as the
// code sees them: `tools.<server>.<tool>(args)` and `tools.call(...)`.
func ToolDeclarations(tools []Tool) string { return toolbridge.Declarations(tools) }

// NamedTools returns tools with each one's JSName, the name the code calls
// it by, set where it is not: see [toolbridge.Named].
func NamedTools(tools []Tool) []Tool { return toolbridge.Named(tools) }

// resourceFilter is a server's resources section as the bridge takes it.
func resourceFilter(f config.ToolFilter) *toolbridge.Filter {
	if len(f.Allow) == 0 && len(f.Deny) == 0 {
		return nil
	}
	return &toolbridge.Filter{Allow: f.Allow, Deny: f.Deny}
}

// LoginSettings are the login settings of cfg's server name, which has an
// oauth section; its client secret is read now.
func LoginSettings(cfg *config.Config, name string) (*serverlogin.Settings, error) {
	s, ok := cfg.Servers[name]
	if !ok || s.URL == "" {
		return nil, fmt.Errorf("there is no url server %s in the config", name)
	}
	if s.OAuth == nil {
		return nil, fmt.Errorf("server %s has no oauth section: it logs in with its headers, if at all", name)
	}
	dir, err := serverlogin.DefaultDir()
	if err != nil {
		return nil, err
	}
	out := &serverlogin.Settings{Server: name, URL: s.URL, ClientID: s.OAuth.ClientID, Scopes: s.OAuth.Scopes,
		ClientCredentials: s.OAuth.Grant == config.GrantClientCredentials, Store: &serverlogin.Store{Dir: dir}}
	if from := s.OAuth.ClientSecret.From; from != "" {
		b, err := readSource(from)
		if err != nil {
			return nil, fmt.Errorf("servers[%q].oauth.client_secret: %w", name, err)
		}
		out.ClientSecret = string(b)
	}
	return out, nil
}

// serverLogin gives the bridge the OAuth handler of cfg's server name for
// each client: a client of crucible serve known by name or by an OAuth
// subject logs in to an account of its own (see AccountOf); every other
// (stdio, run, a shared token, the tools' listing) uses the operator's
// login, crucible login NAME.
func serverLogin(cfg *config.Config, name string) func(client string) (toolbridge.Authorizer, error) {
	settings := sync.OnceValues(func() (*serverlogin.Settings, error) { return LoginSettings(cfg, name) })
	var mu sync.Mutex
	handlers := map[string]*serverlogin.Handler{}
	return func(key string) (toolbridge.Authorizer, error) {
		s, err := settings()
		if err != nil {
			return nil, err
		}
		account := AccountOf(key)
		mu.Lock()
		defer mu.Unlock()
		h := handlers[account]
		if h == nil {
			if h, err = serverlogin.NewHandler(s, account); err != nil {
				return nil, err
			}
			handlers[account] = h
		}
		return h, nil
	}
}

// AccountOf is the login account of the client whose key
// (toolbridge.ClientKey) is key: its own for a client of serve's known by
// name (client-NAME) or OAuth subject (id-HASH), else the operator's.
func AccountOf(key string) string {
	if strings.HasPrefix(key, "client-") || strings.HasPrefix(key, "id-") {
		return key
	}
	return serverlogin.Operator
}
