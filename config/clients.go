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
	Token SecretSource `yaml:"token"`
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
		case c.Clients[name].Token.From == "":
			return fieldErrorf(at+".token", "needs from: env:VAR or file:/absolute/path, where its bearer token is")
		}
		if err := checkSource(at+".token.from", c.Clients[name].Token.From); err != nil {
			return err
		}
	}
	return nil
}

// ClientNames are the configured clients' names, sorted.
func (c *Config) ClientNames() []string { return slices.Sorted(maps.Keys(c.Clients)) }
