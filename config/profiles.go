package config

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
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
	// Limits lowers the sandbox section's limits of the profile's
	// executions; a zero field keeps it.
	Limits ProfileLimits `yaml:"limits,omitempty"`
	// Network narrows the network section: Allow, when given, keeps only
	// those of its allow rules (each written as there); Deny adds rules;
	// the limits can only be lower.
	Network ProfileNetwork `yaml:"network,omitempty"`
	// Skills gives the profile a skills directory of its own in place of
	// serve.skills: its clients see, import and (if writable) save the
	// skills there, and no other profile's.
	Skills ProfileSkills `yaml:"skills,omitempty"`
}

// ProfileSkills is a profile's own skills directory: Dir, Writable and
// Saved are as serve.skills, skills_writable and saved_skills.
type ProfileSkills struct {
	Dir      string `yaml:"dir,omitempty"`
	Writable bool   `yaml:"writable,omitempty"`
	Saved    string `yaml:"saved,omitempty"`
}

// ProfileLimits are the sandbox limits a profile may lower.
type ProfileLimits struct {
	Timeout Duration `yaml:"timeout,omitempty"`
	Memory  ByteSize `yaml:"memory,omitempty"`
	Pids    int      `yaml:"pids,omitempty"`
	CPUs    float64  `yaml:"cpus,omitempty"`
}

// ProfileNetwork is how a profile narrows the network section.
type ProfileNetwork struct {
	Allow          []string `yaml:"allow,omitempty"`
	Deny           []string `yaml:"deny,omitempty"`
	MaxConnections int      `yaml:"max_connections,omitempty"`
	MaxBytesOut    ByteSize `yaml:"max_bytes_out,omitempty"`
	MaxBytesIn     ByteSize `yaml:"max_bytes_in,omitempty"`
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
			lower, of any // of one numeric type
		}{
			{"tools.max_calls", p.Tools.MaxCalls, c.Tools.MaxCalls},
			{"tools.max_arg_size", p.Tools.MaxArgSize, c.Tools.MaxArgSize},
			{"tools.max_result_size", p.Tools.MaxResultSize, c.Tools.MaxResultSize},
			{"limits.timeout", p.Limits.Timeout, c.Sandbox.Timeout},
			{"limits.memory", p.Limits.Memory, c.Sandbox.Memory},
			{"limits.pids", p.Limits.Pids, c.Sandbox.Pids},
			{"limits.cpus", p.Limits.CPUs, c.Sandbox.CPUs},
			{"network.max_connections", p.Network.MaxConnections, c.Network.MaxConnections},
			{"network.max_bytes_out", p.Network.MaxBytesOut, c.Network.MaxBytesOut},
			{"network.max_bytes_in", p.Network.MaxBytesIn, c.Network.MaxBytesIn},
		} {
			if lower, of := number(f.lower), number(f.of); lower < 0 || lower > of {
				return fieldErrorf(at+"."+f.key, "can only lower the top level's %v, not raise it to %v", f.of, f.lower)
			}
		}
		for i, a := range p.Network.Allow {
			if !slices.Contains(c.Network.Allow, a) {
				return fieldErrorf(fmt.Sprintf("%s.network.allow[%d]", at, i), "%s is not one of network.allow's rules: a profile can only keep some of them", quote(a))
			}
		}
		if err := checkHostRules(at+".network.deny", p.Network.Deny); err != nil {
			return err
		}
		if p.Skills.Dir != "" {
			if err := hostPath(p.Skills.Dir); err != nil {
				return fieldErrorf(at+".skills.dir", "%v", err)
			}
		} else if p.Skills.Writable || p.Skills.Saved != "" {
			return fieldErrorf(at+".skills", "needs dir, the profile's own directory of skills")
		}
		if p.Skills.Saved != "" {
			if err := hostPath(p.Skills.Saved); err != nil {
				return fieldErrorf(at+".skills.saved", "%v", err)
			}
		}
	}
	if err := c.checkSavedSkills(); err != nil {
		return err
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
	n.Sandbox.Timeout = cmp.Or(p.Limits.Timeout, n.Sandbox.Timeout)
	n.Sandbox.Memory = cmp.Or(p.Limits.Memory, n.Sandbox.Memory)
	n.Sandbox.Pids = cmp.Or(p.Limits.Pids, n.Sandbox.Pids)
	n.Sandbox.CPUs = cmp.Or(p.Limits.CPUs, n.Sandbox.CPUs)
	if p.Network.Allow != nil {
		n.Network.Allow, n.Network.AllowAll = slices.Clone(p.Network.Allow), false
	}
	n.Network.Deny = append(slices.Clone(c.Network.Deny), p.Network.Deny...)
	n.Network.MaxConnections = cmp.Or(p.Network.MaxConnections, n.Network.MaxConnections)
	n.Network.MaxBytesOut = cmp.Or(p.Network.MaxBytesOut, n.Network.MaxBytesOut)
	n.Network.MaxBytesIn = cmp.Or(p.Network.MaxBytesIn, n.Network.MaxBytesIn)
	if p.Skills.Dir != "" {
		n.Serve.Skills, n.Serve.SkillsWritable, n.Serve.SavedSkills = p.Skills.Dir, p.Skills.Writable, p.Skills.Saved
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

// number is a limit's value, to compare.
func number(v any) float64 {
	switch v := v.(type) {
	case int:
		return float64(v)
	case float64:
		return v
	case ByteSize:
		return float64(v)
	case Duration:
		return float64(v)
	}
	panic(fmt.Sprintf("config: %T is no limit", v))
}

// checkSavedSkills refuses a directory of saved skills within a directory
// of skills (the top level's or a profile's), or the other way round: a
// jail binds its skills directory whole, and would show its clients every
// client's saved skills.
func (c *Config) checkSavedSkills() error {
	type place struct {
		at, skills, saved string
		writable          bool
	}
	places := []place{{"serve.saved_skills", c.Serve.Skills, c.Serve.SavedSkillsDir(), c.Serve.SkillsWritable}}
	for _, name := range c.ProfileNames() {
		p := c.Profiles[name].Skills
		sv := Serve{Skills: p.Dir, SavedSkills: p.Saved}
		places = append(places, place{mapPath("profiles", name) + ".skills.saved", p.Dir, sv.SavedSkillsDir(), p.Writable})
	}
	for _, a := range places {
		for _, b := range places {
			if a.writable && b.skills != "" && (within(a.saved, b.skills) || within(b.skills, a.saved)) {
				return fieldErrorf(a.at, "%s must be outside every skills directory, which a jail sees whole, and hold none", quote(a.saved))
			}
		}
	}
	return nil
}

// within says whether path is dir or lies under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
