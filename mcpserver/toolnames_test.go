package mcpserver

// search_tools shows each tool by the name the code calls it by. The real
// server-everything names its tools get-sum and the like, which no
// language can write after a dot: shown as they are, a program written as
// shown fails ("'sum' is not defined").

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// everythingServer is a Server whose one MCP server, ev, is the real
// server-everything from npm.
func everythingServer(t *testing.T) *Server {
	t.Helper()
	ev := everything(t)
	return newServer(t, func(c *config.Config) {
		c.Servers = map[string]config.Server{"ev": ev}
	})
}

// everything is the real server-everything from npm, as a server of the
// configuration.
func everything(t *testing.T) config.Server {
	t.Helper()
	node, main := testenv.NeedEverything(t, "../node_modules")
	return config.Server{Command: node, Args: []string{main}}
}

// shownName matches a tool's name as search_tools shows it at names and
// summary detail.
var shownName = regexp.MustCompile(`(?m)^tools\.ev\.([^\s(]+)`)

// Every name search_tools shows at names and summary detail is one the
// code calls (tools.list()'s js_name), every tool is shown by one, and a
// TypeScript and a Python program that call get-sum by the name shown get
// its answer.
func TestSearchNamesCallable(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	cs := connect(t, everythingServer(t))
	search := func(q, detail string) string { return searchTools(t, cs, q, detail) }

	res, out := execute(t, cs, map[string]any{"code": `return (await tools.list()).map((t) => t.js_name).sort()`})
	var callable []string
	if res.IsError || out.ExitCode != 0 || json.Unmarshal(out.Result, &callable) != nil || len(callable) < 10 {
		t.Fatalf("tools.list(): %s", text(res))
	}
	for _, detail := range []string{"names", "summary"} {
		var shown []string
		for _, q := range []string{"get", "trigger", "toggle", "echo", "gzip", "simulate"} {
			for _, m := range shownName.FindAllStringSubmatch(search(q, detail), -1) {
				shown = append(shown, m[1])
			}
		}
		slices.Sort(shown)
		if shown = slices.Compact(shown); !slices.Equal(shown, callable) {
			t.Errorf("at %s detail search_tools shows\n%q\nthe code calls\n%q", detail, shown, callable)
		}
	}

	m := shownName.FindStringSubmatch(search("sum", ""))
	if m == nil {
		t.Fatalf("no tool found for sum:\n%s", search("sum", ""))
	}
	for lang, code := range map[string]string{
		"ts": fmt.Sprintf(`return await tools.ev.%s({ a: 2, b: 3 })`, m[1]),
		"py": fmt.Sprintf("import crucible\ncrucible.result = crucible.tools.ev.%s(a=2, b=3)\n", m[1]),
	} {
		res, out := execute(t, cs, map[string]any{"code": code, "language": lang})
		if res.IsError || out.ExitCode != 0 || !strings.Contains(string(out.Result), "is 5") {
			t.Errorf("%s: tools.ev.%s(2, 3): %s", lang, m[1], text(res))
		}
	}
}
