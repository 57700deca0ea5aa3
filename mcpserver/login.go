package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/sandbox"
	"github.com/cruciblehq/crucible/serverlogin"
	"github.com/cruciblehq/crucible/toolbridge"
)

// A tool call to a remote server that needs a login of its client's own
// (a client of serve's known by name or OAuth subject: see
// sandbox.AccountOf) has the client asked to log in: a URL elicitation
// pointing at serve's /oauth/start, where the client declares URL
// elicitation: sent during the execute call (2025-11-25), or in execute's
// answer as an input request (2026-07-28); else the URL elicitation
// required error (-32042) that execute answers with once the execution
// ends. The URL goes to the client alone, never
// to the program: whoever opens it logs the client in. The call fails
// either way; the client's calls after its login carry its own token.

// loginAskTime bounds the wait for a 2026-07-28 client's answer to the
// question whether it goes to log in (not for the login itself).
const loginAskTime = 2 * time.Minute

// loginAsker is the Caller.Login of req's execution r; nil where nobody is
// asked (no remote server takes a login, or the client uses the
// operator's).
func (s *Server) loginAsker(rctx context.Context, req *mcp.CallToolRequest, r *run) func(context.Context, string) string {
	account := sandbox.AccountOf(toolbridge.ClientKey(clientOf(req)))
	if s.web == nil || req.Extra == nil || account == serverlogin.Operator {
		return nil
	}
	origin := req.Extra.Header.Get(originHeader)
	if origin == "" {
		return nil
	}
	return func(ctx context.Context, server string) string {
		u, err := s.web.Ask(server, account, origin, func(id string, _ error) {
			if req.Session == nil || rounds(req) {
				return
			}
			// Best effort: a client waiting on the elicitation learns it
			// is over (it may have gone).
			ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			defer cancel()
			_ = req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: id})
		})
		if err != nil {
			return err.Error()
		}
		p := &mcp.ElicitParams{Mode: "url", URL: u, ElicitationID: u[strings.LastIndexByte(u, '=')+1:],
			Message: fmt.Sprintf("Crucible needs you to log in to server %s, for this client alone.", server)}
		// Asked as execute ends, with the -32042 error.
		later := func() string {
			r.mu.Lock()
			r.logins = append(r.logins, p)
			r.mu.Unlock()
			return "this client's MCP client is asked to log in as this execution ends: call again once the login is done"
		}
		if !declares(req, "url") {
			return later()
		}
		var res *mcp.ElicitResult
		if rounds(req) {
			// A 2026-07-28 client: in execute's answer, as an input request.
			res, _ = r.ask(ctx, p, loginAskTime)
		} else {
			ectx, stop := joinContext(rctx, ctx)
			defer stop()
			if res, err = req.Session.Elicit(ectx, p); err != nil {
				s.log.Warn("a client could not be asked to log in", "server", server, "error", err)
				return later()
			}
		}
		switch {
		case res == nil:
			return "this client's MCP client was asked to log in, and did not answer"
		case res.Action == "accept":
			return "this client's MCP client was asked to log in, and went to: call again once the login is done"
		}
		return "this client's MCP client was asked to log in, and declined"
	}
}
