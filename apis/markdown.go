package apis

import (
	"regexp"
	"strings"
	"sync"

	"github.com/cruciblehq/crucible/internal/terms"
)

// maxSection bounds what full detail shows of one Markdown section.
const maxSection = 8 << 10

// Compiled on first use, not by every process of the binary at its start.
var (
	heading  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$`) })
	endpoint = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(/\S*)`) })
)

// parseMarkdown splits a Markdown file into sections at its headings (ATX,
// outside fenced code), each with its heading's text; a heading that
// starts with a method and a path ("GET /users/{id}") says which operation
// the section describes.
func parseMarkdown(b []byte) *digest {
	d := &digest{kind: "markdown"}
	var title string
	var body []string
	flush := func() {
		text := strings.TrimSpace(strings.Join(body, "\n"))
		if text == "" || (title != "" && len(body) > 0 && strings.TrimSpace(strings.Join(body[1:], "")) == "") {
			return // nothing, or a heading with nothing under it but other headings
		}
		if title == "" {
			title = "(introduction)"
		}
		e := &Entry{Section: title, detail: clip(text, maxSection)}
		if m := endpoint().FindStringSubmatch(title); m != nil {
			e.Method, e.Path = m[1], m[2]
		}
		e.words = terms.NewFields(sectionWeights, title, e.Method+" "+e.Path, text)
		d.entries = append(d.entries, e)
	}
	var fence string
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
		case strings.HasPrefix(t, "```"), strings.HasPrefix(t, "~~~"):
			fence = t[:3]
		default:
			if m := heading().FindStringSubmatch(line); m != nil {
				flush()
				title, body = m[2], nil
			}
		}
		body = append(body, line)
	}
	flush()
	return d
}
