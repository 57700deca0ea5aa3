package sandbox

// HTTP APIs: the configuration's apis section turned into what the network
// takes. Every API's hosts are allowed implicitly; its secrets may go to
// them (Config.SecretHosts, secrets.go); and an API with rules has every
// request to its hosts judged by them, inside TLS that the stack always
// terminates for it, so the process's CA (loaded with the secrets) is
// needed even for an API without secrets.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/policy/httprule"
	"github.com/cruciblehq/crucible/policy/netpolicy"
)

// apiRules are one API's compiled rules and the destinations they judge.
type apiRules struct {
	hosts  *netpolicy.Policy
	set    *httprule.Set // nil for an API without rules
	traced bool          // apis.NAME.propagate_trace
}

// compileAPIs compiles the host rules of cfg's APIs, and the method and
// path rules of those that have some. Its errors are one line and name
// the setting.
func compileAPIs(cfg *config.Config) ([]apiRules, error) {
	var out []apiRules
	for _, name := range slices.Sorted(maps.Keys(cfg.APIs)) {
		a := cfg.APIs[name]
		at := config.KeyPath("apis", -1, name)
		hosts, err := secretPolicy(&cfg.Network, a.Hosts)
		if err != nil {
			return nil, secretRuleError(cfg, at, err)
		}
		if len(a.Rules) == 0 {
			if a.PropagateTrace {
				out = append(out, apiRules{hosts: hosts, traced: true})
			}
			continue
		}
		rules := make([]httprule.Rule, len(a.Rules))
		for i, r := range a.Rules {
			rules[i] = httprule.Rule{Deny: r.Deny != "", Text: r.Allow + r.Deny, If: r.If}
		}
		set, err := httprule.Compile(name, rules)
		if err != nil {
			return nil, fmt.Errorf("%s.rules: %w", at, err)
		}
		out = append(out, apiRules{hosts: hosts, set: set, traced: a.PropagateTrace})
	}
	return out, nil
}

// hasRules reports whether an API of cfg has rules, or propagates the
// trace: then its hosts' TLS is terminated, which needs the secrets loaded
// (LoadSecrets), if none.
func hasRules(cfg *config.Config) bool {
	for _, a := range cfg.APIs {
		if len(a.Rules) > 0 || a.PropagateTrace {
			return true
		}
	}
	return false
}

// apiNetwork is cfg's network with its APIs' hosts allowed: an execution
// whose configuration has APIs has a network even if network.allow is
// empty.
func apiNetwork(cfg *config.Config) *config.Network {
	n := &cfg.Network
	if len(cfg.APIs) == 0 {
		return n
	}
	m := *n
	m.Allow = slices.Clone(n.Allow)
	for _, name := range slices.Sorted(maps.Keys(cfg.APIs)) {
		m.Allow = append(m.Allow, cfg.APIs[name].Hosts...)
	}
	return &m
}

// rulesFor returns the rules that judge requests to name:port: those of
// every API whose hosts hold it (each must allow a request).
func (e *execSecrets) rulesFor(name string, port uint16) []*httprule.Set {
	var sets []*httprule.Set
	for _, a := range e.apis {
		if a.set != nil && a.hosts.Decide(context.Background(), netpolicy.Request{Name: name, Port: port}).Allow {
			sets = append(sets, a.set)
		}
	}
	return sets
}

// traced reports whether the requests to name:port carry the execution's
// trace context (an API's propagate_trace).
func (e *execSecrets) traced(name string, port uint16) bool {
	for _, a := range e.apis {
		if a.traced && a.hosts.Decide(context.Background(), netpolicy.Request{Name: name, Port: port}).Allow {
			return true
		}
	}
	return false
}
