package config

import (
	"fmt"
	"maps"
	"slices"
)

// Profile is a named subset of the configuration that a client gets:
// the servers, APIs and secrets it names (a list left out names none),
// and tool limits that can only be lower than the tools section's. A
// client of a profile sees only what it holds, in search_tools, in
// tools.list() and tools.apis(), and in its jails' environment and
// network.
type Profile struct {
	Servers []string `yaml:"servers"`
	APIs    []string `yaml:"apis"`
	Secrets []string `yaml:"secrets"`
	// Tools lowers the tools section's limits; a zero field keeps it.
	Tools Tools `yaml:"tools,omitempty"`
}

func (c *Config) validateProfiles() error {
	for _, name := range slices.Sorted(maps.Keys(c.Profiles)) {
		p := c.Profiles[name]
		at := mapPath("profiles", name)
		if !clientName().MatchString(name) {
			return fieldErrorf(at, "the name must be lowercase letters, digits, _ and -, starting with a letter, at most 64")
		}
		for _, l := range []struct {
			key   string
			names []string
			has   func(string) bool
		}{
			{"servers", p.Servers, func(n string) bool { _, ok := c.Servers[n]; return ok }},
			{"apis", p.APIs, func(n string) bool { _, ok := c.APIs[n]; return ok }},
			{"secrets", p.Secrets, func(n string) bool { _, ok := c.Secrets[n]; return ok }},
		} {
			for i, n := range l.names {
				if !l.has(n) {
					return fieldErrorf(fmt.Sprintf("%s.%s[%d]", at, l.key, i), "%s is not in the %s section", quote(n), l.key)
				}
			}
		}
		for _, api := range p.APIs {
			for _, sec := range c.APIs[api].Secrets {
				if !slices.Contains(p.Secrets, sec) {
					return fieldErrorf(at+".apis", "the API %s takes the secret %s, which the profile does not have: add it to its secrets, or leave the API out", api, sec)
				}
			}
		}
		for _, f := range []struct {
			key       string
			lower, of int64
		}{
			{"max_calls", int64(p.Tools.MaxCalls), int64(c.Tools.MaxCalls)},
			{"max_arg_size", int64(p.Tools.MaxArgSize), int64(c.Tools.MaxArgSize)},
			{"max_result_size", int64(p.Tools.MaxResultSize), int64(c.Tools.MaxResultSize)},
		} {
			if f.lower < 0 || f.lower > f.of {
				return fieldErrorf(at+".tools."+f.key, "can only lower the tools section's %d, not raise it to %d", f.of, f.lower)
			}
		}
	}
	for _, name := range c.ClientNames() {
		if p := c.Clients[name].Profile; p != "" {
			if _, ok := c.Profiles[p]; !ok {
				return fieldErrorf(mapPath("clients", name)+".profile", "%s is not in the profiles section", quote(p))
			}
		}
	}
	return nil
}

// ForProfile is the configuration a client of profile name gets: this one
// with only the profile's servers, APIs and secrets, and its tool limits.
// "" is the whole configuration.
func (c *Config) ForProfile(name string) *Config {
	if name == "" {
		return c
	}
	p := c.Profiles[name]
	n := *c
	n.Servers = keep(c.Servers, p.Servers)
	n.APIs = keep(c.APIs, p.APIs)
	n.Secrets = keep(c.Secrets, p.Secrets)
	if p.Tools.MaxCalls > 0 {
		n.Tools.MaxCalls = p.Tools.MaxCalls
	}
	if p.Tools.MaxArgSize > 0 {
		n.Tools.MaxArgSize = p.Tools.MaxArgSize
	}
	if p.Tools.MaxResultSize > 0 {
		n.Tools.MaxResultSize = p.Tools.MaxResultSize
	}
	return &n
}

// ProfileOf is the profile of the named client: "" for the whole
// configuration.
func (c *Config) ProfileOf(client string) string { return c.Clients[client].Profile }

// ProfileNames are the profiles' names, sorted.
func (c *Config) ProfileNames() []string { return slices.Sorted(maps.Keys(c.Profiles)) }

// keep is m with only the keys of names.
func keep[V any](m map[string]V, names []string) map[string]V {
	out := map[string]V{}
	for _, n := range names {
		if v, ok := m[n]; ok {
			out[n] = v
		}
	}
	return out
}
