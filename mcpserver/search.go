package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cruciblehq/crucible/internal/terms"
	"github.com/cruciblehq/crucible/sandbox"
)

// toolWeights are how much a word of a query counts in a tool's name, its
// server's, its description and its parameters' names: twice this for the
// whole word, this for a word that starts with it (terms.Rank's rules).
var toolWeights = []int{4, 3, 2, 1}

// rank orders the tools that match query, best first, at most
// terms.MaxHits, by terms.Rank: each word of the query counts at its best
// place in a tool, most in its name, then its server's, its description
// and its parameters' names. A tool that matches no word is left out. A
// query past terms.ParseQuery's bounds is refused, and a search stops with
// ctx's error when ctx is done.
func rank(ctx context.Context, tools []sandbox.Tool, query string) ([]sandbox.Tool, error) {
	q, err := terms.ParseQuery(query)
	if err != nil {
		return nil, err
	}
	hits, err := terms.Rank(ctx, q, func(yield func(sandbox.Tool, terms.Doc) bool) {
		for _, t := range tools {
			f := terms.NewFields(toolWeights, t.Name, t.Server, t.Description, strings.Join(paramNames(t.InputSchema), " "))
			if !yield(t, terms.Doc{Own: f}) {
				return
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("searching the tools: %w", err)
	}
	out := make([]sandbox.Tool, 0, len(hits))
	for _, h := range hits {
		out = append(out, h.Of)
	}
	return out, nil
}

// paramNames lists the top-level property names of a tool's input schema.
func paramNames(schema any) []string {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	var names []string
	for k := range s.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// render writes the found tools at the detail asked for, each by the name
// the code calls it by.
func render(found []sandbox.Tool, detail string) string {
	if len(found) == 0 {
		return "Nothing matches. Search with other words, or with an empty query to list the servers and APIs."
	}
	found = sandbox.NamedTools(found) // those of the bridge are named already
	var b strings.Builder
	switch detail {
	case "full":
		b.WriteString(sandbox.ToolDeclarations(found))
	case "names":
		for _, t := range found {
			fmt.Fprintf(&b, "tools.%s.%s\n", t.Server, t.JSName)
		}
	default: // summary
		for _, t := range found {
			// Written as a call: a tool takes one object of its arguments.
			fmt.Fprintf(&b, "tools.%s.%s({%s})", t.Server, t.JSName, strings.Join(paramNames(t.InputSchema), ", "))
			if d := firstLine(t.Description); d != "" {
				b.WriteString(": " + d)
			}
			b.WriteByte('\n')
		}
		b.WriteString("\nUse detail \"full\" for their TypeScript declarations.\n")
	}
	return b.String()
}

// renderServers lists the servers and how many tools each offers.
func renderServers(servers []string, tools []sandbox.Tool) string {
	if len(servers) == 0 {
		return "No MCP servers are configured: programs run without tools."
	}
	n := map[string]int{}
	for _, t := range tools {
		n[t.Server]++
	}
	var b strings.Builder
	b.WriteString("Servers (call their tools as tools.<server>.<tool>(args)):\n")
	for _, s := range servers {
		fmt.Fprintf(&b, "  %s: %d tools\n", s, n[s])
	}
	b.WriteString("\nSearch with words to find tools.\n")
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	const max = 160
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "..."
	}
	return s
}

// unlisted names the servers that have no tool in tools.
func unlisted(servers []string, tools []sandbox.Tool) string {
	return strings.Join(unlistedServers(servers, tools), ", ")
}

// unlistedServers are those of servers that have no tool in tools.
func unlistedServers(servers []string, tools []sandbox.Tool) []string {
	seen := map[string]bool{}
	for _, t := range tools {
		seen[t.Server] = true
	}
	var out []string
	for _, s := range servers {
		if !seen[s] {
			out = append(out, s)
		}
	}
	return out
}
