package mcpserver

import (
	"net/http"
	"net/url"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// With serve.oauth the HTTP server is an OAuth 2.1 resource server, as the
// MCP authorization spec (2025-11-25) has it: it publishes its Protected
// Resource Metadata (RFC 9728) and answers a request without a valid
// token with 401 and a challenge that points to it (challenge). Whose an
// access token is, auth.Verifier says.

// metadataURL is where the Protected Resource Metadata of resource is
// (RFC 9728 §3.1: the well-known path inserted before the resource's).
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
}

// resourceMetadata serves the server's Protected Resource Metadata.
func (s *Server) resourceMetadata() http.Handler {
	o := s.config().Serve.OAuth
	return sdkauth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               o.Audience,
		AuthorizationServers:   []string{o.Issuer},
		ScopesSupported:        o.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Crucible",
	})
}
