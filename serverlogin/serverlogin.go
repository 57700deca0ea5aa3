// Package serverlogin logs Crucible in to remote MCP servers with OAuth
// 2.1, as their client: crucible login NAME (authorization code with PKCE,
// in the user's browser, the redirect to a listener on 127.0.0.1), or the
// client credentials grant (no browser); the tokens kept on disk (Store),
// refreshed before or when they expire and written back at once; and the
// tool bridge's handler, which puts them on the server's requests and never
// opens a browser itself: a login it lacks is an error that names the
// command to run. The code in the jail never sees a token: only the bridge
// holds one, and it redacts it from whatever a server echoes back.
package serverlogin

import (
	"fmt"
	"net/http"
	"time"
)

// Settings are one server's login settings (config's servers.NAME.oauth).
type Settings struct {
	// Server is the server's name in the config; URL its MCP endpoint.
	Server, URL string
	// ClientID is a Client ID Metadata Document's https URL, a
	// pre-registered client id (with ClientSecret where the authorization
	// server wants one), or "": dynamic client registration.
	ClientID, ClientSecret string
	// Scopes, if any, are asked for in place of those the server names.
	Scopes []string
	// ClientCredentials logs in with the client credentials grant: the
	// client's own account, no browser, no tokens on disk.
	ClientCredentials bool
	Store             *Store
}

// requestTimeout bounds each request to an authorization server.
const requestTimeout = 30 * time.Second

// maxRedirects bounds the redirects an authorization server's answer may
// take, all on its own host.
const maxRedirects = 5

// httpClient is the client for the authorization server's endpoints: a
// redirect to another host is refused, since a token request carries the
// client's secret and the code. Its transport is the default, which the
// SDK's discovery wraps to refuse private addresses (loopback aside).
func (s *Settings) httpClient() *http.Client {
	return &http.Client{
		Timeout: requestTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if from := via[0].URL; req.URL.Host != from.Host || req.URL.Scheme != from.Scheme {
				return fmt.Errorf("refused a redirect from %s to another host, %s", from.Host, req.URL.Host)
			}
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			return nil
		},
	}
}

// NeedsLogin is the error of a request that a login would let through:
// none yet, or one the server or its authorization server no longer
// takes. Its words name the command that fixes it.
type NeedsLogin struct {
	Server string
	// Account is whose login it needs: Operator, or a client of serve's.
	Account string
	// Why is "" (no login yet) or what became of the last one.
	Why string
}

func (e *NeedsLogin) Error() string {
	what := "a login"
	if e.Why != "" {
		what = "a new login (" + e.Why + ")"
	}
	if e.Account != Operator {
		// The operator's crucible login does not serve a client: each
		// logs in on its own, when its MCP client is asked.
		return fmt.Sprintf("server %s needs %s of this client's own", e.Server, what)
	}
	return fmt.Sprintf("server %s needs %s: run crucible login %s", e.Server, what, e.Server)
}

// LoginNeeded marks the error for the tool bridge, which knows no
// package of logins: it reports such an error as it is, and does not back
// off before trying again (a login may come any time).
func (e *NeedsLogin) LoginNeeded() bool { return true }
