package sandbox

import (
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/toolbridge"
)

// What an execution gets of the apis section: every API's hosts allowed,
// an API's secrets for its hosts (and their own), and the rules of each
// API that has some for its hosts only, its TLS terminated even without a
// secret.
func TestExecutionAPIs(t *testing.T) {
	t.Setenv("CRUCIBLE_TEST_OK", testValue)
	cfg := config.Default()
	cfg.Secrets = map[string]config.Secret{"TOKEN": {From: "env:CRUCIBLE_TEST_OK", Hosts: []string{"own.example.com"}}}
	cfg.APIs = map[string]config.API{
		"github":  {Hosts: []string{"api.github.com"}, Secrets: []string{"TOKEN"}, Rules: []config.APIRule{{Allow: "GET /repos/**"}, {Deny: "DELETE /**"}}},
		"both":    {Hosts: []string{"api.github.com", "uploads.github.com"}, Rules: []config.APIRule{{Allow: "* /**"}, {Deny: "* /admin/**"}}},
		"open":    {Hosts: []string{"open.example.com"}},
		"secrets": {Hosts: []string{"vault.example.com"}, Secrets: []string{"TOKEN"}},
	}
	x := attached(t, cfg, Options{Secrets: loadSecrets(t, cfg)})
	if x.network == nil {
		t.Fatal("no network: the APIs' hosts must be reachable without network.allow")
	}
	// The rules' conditions see whom the execution runs for, once it
	// begins (a pooled jail's network is attached before that).
	x.begin(audit.Execution{}, toolbridge.Caller{Client: "token:0123", Profile: "readonly"})
	if name, profile := x.net.who(); name != "token:0123" || profile != "readonly" {
		t.Errorf("the network's rules see client %q of profile %q", name, profile)
	}
	n := x.secrets.network(apiNetwork(cfg))
	for _, h := range []string{"api.github.com", "uploads.github.com", "open.example.com", "vault.example.com", "own.example.com"} {
		if !slices.Contains(n.Allow, h) {
			t.Errorf("%s is not allowed: %q", h, n.Allow)
		}
	}
	for _, tc := range []struct {
		name    string
		secrets []string
		apis    []string
	}{
		{"api.github.com", []string{"TOKEN"}, []string{"both", "github"}},
		{"uploads.github.com", nil, []string{"both"}},
		{"vault.example.com", []string{"TOKEN"}, nil},
		{"own.example.com", []string{"TOKEN"}, nil},
		{"open.example.com", nil, nil},
	} {
		if got := x.secrets.forHost(tc.name, 443); !slices.Equal(got, tc.secrets) {
			t.Errorf("secrets for %s = %q, want %q", tc.name, got, tc.secrets)
		}
		var apis []string
		for _, set := range x.secrets.rulesFor(tc.name, 443) {
			v := set.Check("DELETE", "/admin", nil)
			apis = append(apis, strings.Fields(v.Reason)[2]) // "the API NAME refuses …"
		}
		if !slices.Equal(apis, tc.apis) {
			t.Errorf("rules for %s: %q, want %q", tc.name, apis, tc.apis)
		}
	}

	// Rules without secrets still need the CA: loaded, and refused when
	// not given.
	cfg.Secrets, cfg.APIs = nil, map[string]config.API{"github": cfg.APIs["github"]}
	g := cfg.APIs["github"]
	g.Secrets = nil
	cfg.APIs["github"] = g
	if s, err := LoadSecrets(cfg); err != nil || s == nil || s.ca == nil || len(s.apis) != 1 {
		t.Errorf("rules only: %v, %v", s, err)
	}
	x = newTrue(cfg, Options{})
	if err := x.attach(cfg); err == nil || !strings.Contains(err.Error(), "API rules") {
		t.Errorf("rules, secrets not loaded: %v", err)
	}
	// An API without rules or secrets needs nothing loaded.
	cfg.APIs = map[string]config.API{"open": {Hosts: []string{"open.example.com"}}}
	if s, err := LoadSecrets(cfg); s != nil || err != nil {
		t.Errorf("no rules, no secrets: %v, %v", s, err)
	}
	x = newTrue(cfg, Options{})
	if err := x.attach(cfg); err != nil || x.network == nil {
		t.Errorf("an open API: %v, network %v", err, x.network != nil)
	}
}

// A host rule of an API that does not compile is named by its key.
func TestAPIErrors(t *testing.T) {
	cfg := config.Default()
	cfg.APIs = map[string]config.API{"x": {Hosts: []string{"ok.example.com", "*.com"}}}
	if err := CheckConfig(cfg); err == nil || !strings.HasPrefix(err.Error(), `apis["x"].hosts[1]: "*.com": `) {
		t.Errorf("CheckConfig, a bad host rule: %v", err)
	}
}
