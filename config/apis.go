package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/cruciblehq/crucible/policy/httprule"
)

// API is an HTTP API the code may call, described for the model and
// limited by method and path. Its name, the key in Config.APIs, is an
// identifier.
type API struct {
	// Description says what the API is for, in a line or two.
	Description string `yaml:"description"`
	// Hosts are where the API is, in the rule syntax of network.allow;
	// each is allowed implicitly.
	Hosts []string `yaml:"hosts"`
	// Secrets names secrets (of the secrets section) that the API takes:
	// each may go to these hosts (and then needs no hosts of its own).
	Secrets []string `yaml:"secrets,omitempty"`
	// Docs is a Markdown or OpenAPI (JSON or YAML) file that describes the
	// API, an absolute path: Crucible reads it, the code never does.
	Docs string `yaml:"docs,omitempty"`
	// Rules allow or deny requests by method and path, in order of
	// writing; deny wins. With rules, a request that no allow rule matches
	// is refused; without, every request is allowed.
	Rules []APIRule `yaml:"rules,omitempty"`
	// PropagateTrace sends, with each request to the API's hosts, the
	// trace context of crucible serve's span for it (a W3C traceparent, in
	// place of any the program wrote), so that the API's own traces join
	// the agent's. Off by default: the program's headers are the
	// program's. Its hosts' TLS is terminated, as for rules.
	PropagateTrace bool `yaml:"propagate_trace,omitempty"`
}

// APIRule is one rule: "METHOD /path/pattern" in Allow or in Deny. METHOD
// is an HTTP method or * (any); in the pattern, * matches one path
// segment (or the rest of one) and a final /** any number of segments. If
// is a CEL condition over the request (package httprule): the rule allows,
// or denies, only a request for which it holds.
type APIRule struct {
	Allow string `yaml:"allow,omitempty"`
	Deny  string `yaml:"deny,omitempty"`
	If    string `yaml:"if,omitempty"`
}

// Compiled on first use, not by every process of the binary at its start.
var (
	httpMethod  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\*|[A-Z]+)$`) })
	pathPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/[A-Za-z0-9\-._~!$&'()*+,;=:@%/{}]*$`) })
)

// ParseAPIRule splits a rule's text into its method and path pattern.
func ParseAPIRule(text string) (method, pattern string, err error) {
	method, pattern, ok := strings.Cut(strings.TrimSpace(text), " ")
	pattern = strings.TrimSpace(pattern)
	switch {
	case !ok || !httpMethod().MatchString(method):
		return "", "", fmt.Errorf("%s is not METHOD /path (e.g. \"GET /repos/**\" or \"* /admin/**\")", quote(text))
	case !pathPattern().MatchString(pattern):
		return "", "", fmt.Errorf("%s: the path must start with / and hold no spaces, query or fragment", quote(text))
	case strings.Contains(strings.TrimSuffix(pattern, "/**"), "**"):
		return "", "", fmt.Errorf("%s: ** is only allowed as the last segment (/**)", quote(text))
	}
	return method, pattern, nil
}

func (c *Config) validateAPIs() error {
	for _, name := range slices.Sorted(maps.Keys(c.APIs)) {
		a := c.APIs[name]
		at := mapPath("apis", name)
		if !identifier().MatchString(name) {
			return fieldErrorf(at, "the name must be an identifier: letters, digits and _, not starting with a digit")
		}
		if len(a.Description) > 2000 {
			return fieldErrorf(at+".description", "must be at most 2000 characters")
		}
		if len(a.Hosts) == 0 {
			return fieldErrorf(at+".hosts", "must name at least one host")
		}
		if err := checkHostRules(at+".hosts", a.Hosts); err != nil {
			return err
		}
		for i, s := range a.Secrets {
			if _, ok := c.Secrets[s]; !ok {
				return fieldErrorf(fmt.Sprintf("%s.secrets[%d]", at, i), "%s is not a secret of the secrets section", quote(s))
			}
		}
		if a.Docs != "" && (strings.Contains(a.Docs, "\x00") || !filepath.IsAbs(a.Docs)) {
			return fieldErrorf(at+".docs", "%s is not an absolute path", quote(a.Docs))
		}
		for i, r := range a.Rules {
			key := fmt.Sprintf("%s.rules[%d]", at, i)
			if (r.Allow == "") == (r.Deny == "") {
				return fieldErrorf(key, "needs one of allow or deny")
			}
			if _, _, err := ParseAPIRule(r.Allow + r.Deny); err != nil {
				return fieldErrorf(key, "%v", err)
			}
			if r.If != "" {
				if _, err := httprule.Conditions.Compile(r.If); err != nil {
					return fieldErrorf(key+".if", "%s", conditionError(err))
				}
			}
		}
	}
	return nil
}

// SecretHosts are the hosts that secret name may go to: its own, and those
// of every API that lists it.
func (c *Config) SecretHosts(name string) []string {
	hosts := slices.Clone(c.Secrets[name].Hosts)
	for _, api := range slices.Sorted(maps.Keys(c.APIs)) {
		if slices.Contains(c.APIs[api].Secrets, name) {
			hosts = append(hosts, c.APIs[api].Hosts...)
		}
	}
	return hosts
}
