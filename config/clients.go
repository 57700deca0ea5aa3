package config

import (
	"maps"
	"regexp"
	"slices"
	"sync"
)

// Client is one client of crucible serve, by name: the bearer token it
// presents, read from a source as a secret's value is. Its name is what
// the audit trail, the metrics, the rules' client.name and a server's
// {client} call it.
type Client struct {
	Token SecretSource `yaml:"token,omitempty"`
	// OAuth, instead of a token, names the client by the claims of its
	// serve.oauth access token: each claim given must be the token's (or,
	// for a list claim such as groups, one of its values).
	OAuth map[string]string `yaml:"oauth,omitempty"`
	// Profile names the subset of the configuration the client gets
	// (profiles); "" is the whole of it.
	Profile string `yaml:"profile,omitempty"`
}

// clientName is a client's name. stdio, local and catalog name the stdio
// client, run and exec's, and a server's lister.
var clientName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`) })

// reservedClients are names that stand for something else already.
var reservedClients = []string{"stdio", "local", "catalog"}

func (c *Config) validateClients() error {
	for _, name := range slices.Sorted(maps.Keys(c.Clients)) {
		at := mapPath("clients", name)
		switch {
		case !clientName().MatchString(name):
			return fieldErrorf(at, "the name must be lowercase letters, digits, _ and -, starting with a letter, at most 64")
		case slices.Contains(reservedClients, name):
			return fieldErrorf(at, "%s names a client of its own already (stdio, local, catalog are taken)", quote(name))
		case c.Clients[name].OAuth != nil:
			if c.Clients[name].Token.From != "" {
				return fieldErrorf(at, "has a token and oauth claims: a client is known by one of them")
			}
			if !c.Serve.OAuth.Enabled() {
				return fieldErrorf(at+".oauth", "needs serve.oauth, the issuer whose tokens carry the claims")
			}
			if len(c.Clients[name].OAuth) == 0 {
				return fieldErrorf(at+".oauth", "names no claim (e.g. {sub: alice@example.com})")
			}
			continue
		case c.Clients[name].Token.From == "":
			return fieldErrorf(at+".token", "needs from: env:VAR or file:/absolute/path, where its bearer token is (or oauth: claims)")
		}
		if err := checkSource(at+".token.from", c.Clients[name].Token.From); err != nil {
			return err
		}
	}
	return nil
}

// ClientNames are the configured clients' names, sorted.
func (c *Config) ClientNames() []string { return slices.Sorted(maps.Keys(c.Clients)) }
