package toolbridge

import (
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// value is what a call returns to the code, as JSON (see [Session.Call]).
func value(res *mcp.CallToolResult) ([]byte, error) {
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	vals := make([]any, 0, len(res.Content))
	for _, c := range res.Content {
		vals = append(vals, item(c))
	}
	switch len(vals) {
	case 0:
		return []byte("null"), nil
	case 1:
		return json.Marshal(vals[0])
	}
	return json.Marshal(vals)
}

// item is one content item as the code sees it.
func item(c mcp.Content) any {
	switch c := c.(type) {
	case *mcp.TextContent:
		if t := strings.TrimSpace(c.Text); t != "" && json.Valid([]byte(t)) {
			return json.RawMessage(t)
		}
		return c.Text
	case *mcp.ImageContent:
		return media{Type: "image", MIMEType: c.MIMEType, Data: c.Data}
	case *mcp.AudioContent:
		return media{Type: "audio", MIMEType: c.MIMEType, Data: c.Data}
	case *mcp.ResourceLink:
		return map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name, "mimeType": c.MIMEType}
	case *mcp.EmbeddedResource:
		return map[string]any{"type": "resource", "resource": resourceItem(c.Resource)}
	}
	// A kind the SDK knows and we do not: its own JSON.
	return c
}

// media is an image or audio item; Data marshals as base64.
type media struct {
	Type     string `json:"type"`
	MIMEType string `json:"mimeType"`
	Data     []byte `json:"data"`
}

func resourceItem(r *mcp.ResourceContents) any {
	if r == nil {
		return nil
	}
	m := map[string]any{"uri": r.URI, "mimeType": r.MIMEType}
	if r.Blob != nil {
		m["blob"] = r.Blob
	} else {
		m["text"] = r.Text
	}
	return m
}

func contents(rs []*mcp.ResourceContents) ([]byte, error) {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		out = append(out, resourceItem(r))
	}
	return json.Marshal(out)
}

// errorText is the message of a tool's error result: its text items.
func errorText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && t.Text != "" {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "the tool reported an error without a message"
	}
	return strings.Join(parts, "\n")
}
