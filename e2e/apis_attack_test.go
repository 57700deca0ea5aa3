package e2e

import (
	"strings"
	"testing"
)

// Attack: a program hands tools.apis a 1 MiB query, which the channel
// carries (it takes requests of its argument bound, 1 MiB, and a little
// more) to the process that serves it, where a search costs the query's
// words times the docs' entries and words. Unbounded, each such query
// took seconds of the serve process's CPU, 64 at a time per execution.
// Bounded, the program gets an error of kind limit that says the bound,
// the refusal is in the result's violations, and a search within the
// bound still answers.
func TestAttackAPIsQuery(t *testing.T) {
	requireRoot(t)
	cfg, _ := apisConfig(t)
	for lang, src := range map[string]string{
		"ts": `
const q = Array.from({ length: 110000 }, (_, i) => "q" + i + "x").join(" "); // ~1 MiB of distinct words
let huge;
try { await tools.apis(q); huge = "answered"; } catch (e) { huge = e.kind + ": " + e.message; }
export default { huge, found: (await tools.apis("create issue")).length };
`,
		"py": `import crucible
try:
    crucible.tools.apis(" ".join("q%dx" % i for i in range(110000)))
    huge = "answered"
except crucible.ToolError as e:
    huge = e.kind + ": " + str(e)
crucible.result = {"huge": huge, "found": len(crucible.tools.apis("create issue"))}
`,
	} {
		t.Run(lang, func(t *testing.T) {
			r := runJSON(t, src, "--config", cfg, "--lang", lang, "-")
			if r.ExitCode != 0 || !strings.Contains(string(r.Result), `"huge":"limit: the query`) ||
				!strings.Contains(string(r.Result), "at most 1024 bytes") || !strings.Contains(string(r.Result), `"found":1`) {
				t.Fatalf("%s\n%s", r.Result, r.Stderr)
			}
			n := 0
			for _, v := range r.Violations {
				if v.Kind == "limit" && strings.Contains(v.Reason, "tools.apis") {
					n += v.Count
				}
			}
			if n != 1 {
				t.Errorf("violations %+v; want one limit for tools.apis", r.Violations)
			}
		})
	}
}
