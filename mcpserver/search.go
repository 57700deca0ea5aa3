package mcpserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cruciblehq/crucible/internal/terms"
	"github.com/cruciblehq/crucible/sandbox"
)

// maxHits bounds the tools one search returns.
const maxHits = 20

// rank orders the tools that match query, best first: each word of the
// query counts where it appears, most in the tool's name, then its
// server's, its description and its parameters' names. A tool that matches
// no word is left out. A query past terms.Query's bounds is refused.
func rank(tools []sandbox.Tool, query string) ([]sandbox.Tool, error) {
	words, err := terms.Query(query)
	if err != nil {
		return nil, err
	}
	type hit struct {
		t     sandbox.Tool
		score int
	}
	var hits []hit
	for _, t := range tools {
		name, server := strings.ToLower(t.Name), strings.ToLower(t.Server)
		desc := strings.ToLower(t.Description)
		params := strings.ToLower(strings.Join(paramNames(t.InputSchema), " "))
		score := 0
		for _, w := range words {
			switch {
			case name == w:
				score += 8
			case strings.Contains(name, w):
				score += 4
			}
			if strings.Contains(server, w) {
				score += 3
			}
			if strings.Contains(desc, w) {
				score += 2
			}
			if strings.Contains(params, w) {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, hit{t, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	out := make([]sandbox.Tool, 0, min(len(hits), maxHits))
	for _, h := range hits[:min(len(hits), maxHits)] {
		out = append(out, h.t)
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
	return strings.Join(out, ", ")
}
