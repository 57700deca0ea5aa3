package mcpserver

import (
	"context"
	"fmt"
	"github.com/cruciblehq/crucible/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type searchIn struct {
	Query  string `json:"query"`
	Detail string `json:"detail,omitempty"`
}

func searchTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  "search_tools",
		Title: "Find the tools a program can call",
		Description: "Searches the tools of the connected MCP servers, and the HTTP APIs, that execute's programs can call, best match first. " +
			`detail "names" lists them, "summary" (the default) adds their parameters and purpose, "full" gives their TypeScript declarations. An empty query lists the servers.`,
		InputSchema: &jsonschema.Schema{
			Type:     "object",
			Required: []string{"query"},
			Properties: map[string]*jsonschema.Schema{
				"query":  {Type: "string", Description: "Words that describe what the tool does, or its name."},
				"detail": {Type: "string", Enum: []any{"names", "summary", "full"}, Description: `How much to say of each tool; default "summary".`},
			},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		},
	}
}

// listTimeout bounds how long a search waits for the servers to list their
// tools (each is started on first use).
const listTimeout = 30 * time.Second

// searchHandler answers search_tools from the tools and APIs of the
// caller's view alone, in the current configuration.
func (s *Server) searchHandler() mcp.ToolHandlerFor[searchIn, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
		g, release := s.gens.hold()
		defer release()
		v := g.viewOf(clientOf(req))
		if v == nil {
			return nil, nil, errNoClient
		}
		ctx, span := tracing.Tracer().Start(tracing.FromMeta(ctx, req.Params.Meta), "search_tools", trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("crucible.client", clientOf(req)), attribute.String("mcp.client.name", mcpClientName(req)),
				attribute.Int("crucible.query_bytes", len(in.Query))))
		defer span.End()
		res, out, err := v.search(ctx, req, in)
		if err != nil {
			span.SetStatus(codes.Error, "search failed")
		}
		return res, out, err
	}
}

func (v *view) search(ctx context.Context, req *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	// As the client sees them: a server with a login, through its own.
	tools, err := v.tools.ListFor(ctx, clientOf(req))
	catalog := v.tools.APIs()
	var text string
	if in.Query == "" {
		text = renderServers(v.tools.Servers(), tools)
		if list := catalog.List(); len(list) > 0 {
			text += "\nHTTP APIs (call them with fetch; search to see their operations and how to authenticate):\n"
			for _, a := range list {
				text += fmt.Sprintf("  %s: %s\n", a.Name, firstLine(a.Description))
			}
		}
	} else {
		// Each search bounds its query (terms.ParseQuery): its error is
		// safe to show, as is a call that ended.
		found, serr := rank(ctx, tools, in.Query)
		if serr != nil {
			return nil, nil, serr
		}
		hits, serr := catalog.Search(ctx, in.Query)
		if serr != nil {
			return nil, nil, serr
		}
		if len(found) > 0 || len(hits) == 0 {
			text = render(found, in.Detail)
		}
		if len(hits) > 0 {
			text += "\nHTTP APIs:\n" + catalog.Render(hits, in.Detail)
		}
	}
	if err != nil {
		// Which servers could not be listed: their names, not why (the
		// reason may name the operator's paths).
		text += "\nSome servers could not list their tools now: " + unlisted(v.tools.Servers(), tools) + "\n"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}
