package config

import (
	"net/url"
	"strings"
)

// ServerOAuth is how Crucible logs in to a remote MCP server with OAuth
// 2.1: it finds the authorization server from the server's 401 (protected
// resource metadata, then the authorization server's metadata), and
// identifies itself by ClientID, else by dynamic client registration.
type ServerOAuth struct {
	// ClientID is an https:// URL of a Client ID Metadata Document that
	// the operator publishes, or a client id registered with the
	// authorization server beforehand; "" registers one dynamically.
	ClientID string `yaml:"client_id,omitempty"`
	// ClientSecret is a pre-registered client's secret, where the
	// authorization server wants one (client_credentials always does).
	ClientSecret SecretSource `yaml:"client_secret,omitempty"`
	// Scopes are the scopes asked for; none: those the server names in its
	// challenge or metadata.
	Scopes []string `yaml:"scopes,omitempty"`
	// Grant is GrantAuthorizationCode (the default: a person logs in in a
	// browser) or GrantClientCredentials (the client's own account, no
	// browser).
	Grant string `yaml:"grant,omitempty"`
}

// Grants of ServerOAuth.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// IsMetadataDocument says whether o's client id is the URL of a Client ID
// Metadata Document.
func (o *ServerOAuth) IsMetadataDocument() bool { return strings.HasPrefix(o.ClientID, "https://") }

func (o *ServerOAuth) validate(at string) error {
	key := func(k string) string { return at + "." + k }
	switch o.Grant {
	case "", GrantAuthorizationCode, GrantClientCredentials:
	default:
		return fieldErrorf(key("grant"), "%s is not authorization_code or client_credentials", quote(o.Grant))
	}
	if strings.ContainsAny(o.ClientID, " \t\r\n\x00") {
		return fieldErrorf(key("client_id"), "contains a space, a line break or a NUL byte")
	}
	if o.IsMetadataDocument() {
		if u, err := url.Parse(o.ClientID); err != nil || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return fieldErrorf(key("client_id"), "%s is not the URL of a Client ID Metadata Document (an https URL with a path)", quote(o.ClientID))
		}
		if o.ClientSecret.From != "" {
			return fieldErrorf(key("client_secret"), "is for a pre-registered client; a Client ID Metadata Document's client has none")
		}
	}
	if o.ClientSecret.From != "" {
		if o.ClientID == "" {
			return fieldErrorf(key("client_secret"), "needs client_id, the client it is the secret of")
		}
		if err := checkSource(key("client_secret.from"), o.ClientSecret.From); err != nil {
			return err
		}
		o.ClientSecret.From = cleanSource(o.ClientSecret.From)
	}
	if o.Grant == GrantClientCredentials && (o.ClientID == "" || o.IsMetadataDocument() || o.ClientSecret.From == "") {
		return fieldErrorf(key("grant"), "client_credentials needs a pre-registered client_id and its client_secret")
	}
	for i, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\x00\"\\") {
			return fieldErrorf(KeyPath(key("scopes"), i, ""), "%s is not a scope (no spaces, quotes or backslashes)", quote(s))
		}
	}
	return nil
}
