package apis

import (
	"fmt"
	"strings"
)

// MaxRender bounds what Render returns, in bytes.
const MaxRender = 16 << 10

// Render writes hits (from Search) for the model, grouped by API, at
// detail "names" (each operation's method and path, each section's
// heading), "summary" (the default: also each API's base URL, how to
// authenticate and its rules, and each operation's parameters and
// summary) or "full" (also each operation's parameters and request body in
// full, each Markdown section's text, and what the placeholder is). It is
// at most MaxRender bytes: matches past that are left out, and it says
// how many. Without hits it returns "".
func (c *Catalog) Render(hits []Hit, detail string) string {
	if c == nil || len(hits) == 0 {
		return ""
	}
	type group struct {
		a       *api
		entries []*Entry
	}
	var groups []*group
	at := map[string]*group{}
	for _, h := range hits {
		g := at[h.API]
		if g == nil {
			a := c.byName(h.API)
			if a == nil {
				continue
			}
			g = &group{a: a}
			at[h.API] = g
			groups = append(groups, g)
		}
		if h.Entry != nil {
			g.entries = append(g.entries, h.Entry)
		}
	}
	var b strings.Builder
	cut := 0
	add := func(s string) {
		// Room is kept for the note of what was cut.
		if cut > 0 || b.Len()+len(s) > MaxRender-200 {
			cut++
			return
		}
		b.WriteString(s)
	}
	for _, g := range groups {
		add(g.a.header(detail))
		entries, level := g.entries, detail
		if len(entries) == 0 && detail == "full" {
			entries, level = g.a.entries, "summary" // the API alone matched: what it offers
		}
		for _, e := range entries {
			add(e.render(level))
		}
		if len(g.entries) == 0 && detail != "full" && len(g.a.entries) > 0 {
			add(fmt.Sprintf("  %d %s: search with words of what to do\n", len(g.a.entries), g.a.unit()))
		}
		add("\n")
	}
	if cut > 0 {
		fmt.Fprintf(&b, "[%d more parts cut: the answer is bounded to %d KiB; search with more precise words, or a lesser detail]\n", cut, MaxRender>>10)
	}
	if detail != "full" {
		b.WriteString("Use detail \"full\" for the parameters, the docs' text and how to authenticate.\n")
	}
	return b.String()
}

func (a *api) unit() string {
	if a.docs == "markdown" {
		return "sections"
	}
	return "operations"
}

// header introduces an API: at names, its name and base URL; at summary
// also its description's first line, auth and rules; at full all of them
// explained.
func (a *api) header(detail string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP API %s", a.name)
	switch detail {
	case "names":
		fmt.Fprintf(&b, " (%s)\n", strings.Join(a.baseURLs, ", "))
		return b.String()
	case "full":
		b.WriteString("\n")
		if a.description != "" {
			b.WriteString(a.description + "\n")
		}
	default:
		if d := oneLine(a.description); d != "" {
			b.WriteString(": " + d)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "  base URL: %s\n", strings.Join(a.baseURLs, ", "))
	for _, au := range a.auth {
		if au.Header != "" {
			fmt.Fprintf(&b, "  auth: header %s\n", au.Header)
		} else {
			fmt.Fprintf(&b, "  auth: query parameter %s\n", au.Query)
		}
	}
	if detail == "full" && len(a.auth) > 0 {
		for _, au := range a.auth {
			fmt.Fprintf(&b, "    env.%[1]s (Python os.environ[%[1]q], shell $%[1]s) holds a placeholder: Crucible puts the real secret in its place on HTTPS requests to %[2]s only.\n",
				au.Secret, strings.Join(a.hosts, ", "))
		}
	}
	if len(a.rules) > 0 {
		fmt.Fprintf(&b, "  rules: %s", strings.Join(a.rules, "; "))
		if detail == "full" {
			b.WriteString(" (by method and path, in order; deny wins; a request no allow rule matches is refused with 403)")
		}
		b.WriteString("\n")
	}
	return clip(b.String(), 4<<10)
}

// render writes one operation or section.
func (e *Entry) render(detail string) string {
	switch detail {
	case "names":
		if e.Section != "" {
			return fmt.Sprintf("  section %q\n", e.Section)
		}
		return fmt.Sprintf("  %s %s\n", e.Method, e.Path)
	case "full":
		text := e.detail
		if e.Section != "" {
			if len(text) >= maxSection {
				text += fmt.Sprintf("\n[the section is cut at %d KiB]", maxSection>>10)
			}
			return "  --- section " + e.Section + "\n" + indent(text) + "\n"
		}
		return "  --- " + indent(text)[2:] + "\n"
	}
	if e.Section != "" {
		return fmt.Sprintf("  section %q\n", e.Section)
	}
	s := fmt.Sprintf("  %s %s", e.Method, e.Path)
	if len(e.Parameters) > 0 {
		s += " (" + strings.Join(e.Parameters, ", ") + ")"
	}
	if e.Summary != "" {
		s += ": " + e.Summary
	}
	return s + "\n"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
