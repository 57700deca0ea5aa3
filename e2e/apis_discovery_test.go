package e2e

// Discovery of the configured HTTP APIs: tools.apis() in every language,
// in real jails, and `crucible tools --apis`. The docs file is read by
// Crucible alone: its path never reaches the code or its output.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/apis"
	"github.com/cruciblehq/crucible/internal/cli"
)

// apisConfig writes a crucible.yaml with one API, tracker, described by
// the apis package's OpenAPI testdata (copied to a file whose path is
// distinctive), its secret TRACKER_TOKEN and rules, and no servers. It
// returns the config and the docs file.
func apisConfig(t *testing.T) (cfg, docs string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "apidocs-canary-dir")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../apis/testdata/tracker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs = filepath.Join(dir, "tracker-docs-canary.yaml")
	token := filepath.Join(dir, "token")
	for p, data := range map[string][]byte{docs: b, token: []byte("tracker-token-value-91c2\n")} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg = filepath.Join(dir, "crucible.yaml")
	yaml := `secrets:
  TRACKER_TOKEN:
    from: file:` + token + `
apis:
  tracker:
    description: The team's issue tracker.
    hosts: [tracker.example.com]
    secrets: [TRACKER_TOKEN]
    docs: ` + docs + `
    rules:
      - allow: "GET /**"
      - allow: "POST /repos/*/*/issues"
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, docs
}

// noDocsPath fails the test if the docs file's path, its directory or its
// name is in out.
func noDocsPath(t *testing.T, docs, out string) {
	t.Helper()
	for _, p := range []string{docs, filepath.Dir(docs), filepath.Base(docs), "apidocs-canary", "docs-canary"} {
		if strings.Contains(out, p) {
			t.Errorf("%q reached the output:\n%s", p, out)
		}
	}
}

// What each language's tools.apis() answered: every API, and those that
// "create issue" found.
type discovered struct {
	All    []apis.Info `json:"all"`
	Found  []apis.Info `json:"found"`
	List   string      `json:"list"` // tools.list()'s error: there are no servers
	Exists bool        `json:"exists"`
}

func (d *discovered) check(t *testing.T) {
	t.Helper()
	if len(d.All) != 1 {
		t.Fatalf("tools.apis() = %+v", d.All)
	}
	a := d.All[0]
	if a.Name != "tracker" || a.Operations != 6 || len(a.Auth) != 1 ||
		a.Auth[0].Header != "Authorization: Bearer ${env.TRACKER_TOKEN}" ||
		strings.Join(a.BaseURLs, " ") != "https://tracker.example.com/api/v3" ||
		strings.Join(a.Rules, "; ") != "allow GET /**; allow POST /repos/*/*/issues" || len(a.Matches) != 0 {
		t.Errorf("tools.apis()[0] = %+v", a)
	}
	if len(d.Found) != 1 || len(d.Found[0].Matches) == 0 {
		t.Fatalf("tools.apis(\"create issue\") = %+v", d.Found)
	}
	if m := d.Found[0].Matches[0]; m.Method != "POST" || m.Path != "/repos/{owner}/{repo}/issues" ||
		m.OperationID != "issues/create" || strings.Join(m.Parameters, ",") != "owner,repo" {
		t.Errorf("the best match is %+v", m)
	}
	if d.Found[0].Auth[0].Header != "Authorization: Bearer ${env.TRACKER_TOKEN}" {
		t.Errorf("the match's auth: %+v", d.Found[0].Auth)
	}
	if !strings.Contains(d.List, "no tools are configured") {
		t.Errorf("tools.list() without servers: %q", d.List)
	}
	if d.Exists {
		t.Errorf("the docs file is visible in the jail")
	}
}

func TestAPIsDiscovery(t *testing.T) {
	requireRoot(t)
	cfg, docs := apisConfig(t)
	// The programs test whether the docs file exists in the jail: they
	// hold its path; their output must not.
	for _, tc := range []struct {
		lang, src string
	}{
		{"ts", `
const all: unknown[] = await tools.apis();
const found = await tools.apis("create issue");
const list = await tools.list().catch((e: Error) => e.message);
let exists = false;
try { exists = await fs.exists(` + "`" + docs + "`" + `); } catch { /* outside /workspace and /tmp: refused */ }
export default { all, found, list, exists, placeholder: env.TRACKER_TOKEN.length };
`},
		{"deno", `
const all = await tools.apis();
const found = await tools.apis("create issue");
const list = await tools.list().catch((e) => e.message);
let exists = false;
try { Deno.statSync(` + "`" + docs + "`" + `); exists = true; } catch { /* not there */ }
export default { all, found, list, exists };
`},
		{"py", `import crucible, os
try:
    crucible.tools.list()
    listed = "listed"
except crucible.ToolError as e:
    listed = str(e)
crucible.result = {"all": crucible.tools.apis(), "found": crucible.tools.apis("create issue"),
    "list": listed, "exists": os.path.exists(` + "'" + docs + "'" + `)}
`},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			if tc.lang == "deno" {
				requireDeno(t)
			}
			code, out, errs := run(t, tc.src, "run", "--json", "--config", cfg, "--lang", tc.lang, "-")
			var r struct {
				ExitCode int             `json:"exit_code"`
				Result   json.RawMessage `json:"result"`
				Stdout   string          `json:"stdout"`
				Stderr   string          `json:"stderr"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.ExitCode != 0 {
				t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
			}
			var d discovered
			if err := json.Unmarshal(r.Result, &d); err != nil {
				t.Fatalf("%v: %s", err, r.Result)
			}
			d.check(t)
			noDocsPath(t, docs, out+errs)
		})
	}
}

// Without APIs (or servers) there is no channel: tools.apis() is empty.
func TestAPIsNone(t *testing.T) {
	requireRoot(t)
	for lang, src := range map[string]string{
		"ts":   "export default await tools.apis();\n",
		"deno": "export default await tools.apis();\n",
		"py":   "import crucible\ncrucible.result = crucible.tools.apis()\n",
	} {
		t.Run(lang, func(t *testing.T) {
			if lang == "deno" {
				requireDeno(t)
			}
			if r := runJSON(t, src, "--lang", lang, "-"); r.ExitCode != 0 || string(r.Result) != "[]" {
				t.Errorf("%+v", r)
			}
		})
	}
}

func TestToolsAPIs(t *testing.T) {
	cfg, docs := apisConfig(t)
	// tools names its config on stderr first; past that line, stderr is
	// what each case says.
	named := "crucible tools: config " + cfg + " (named by --config)\n"
	code, out, errs := run(t, "", "tools", "--apis", "--config", cfg)
	if code != cli.ExitOK || errs != named {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "API BASE URL AUTH OPERATIONS DESCRIPTION" ||
		strings.Join(strings.Fields(lines[1]), " ") != "tracker https://tracker.example.com/api/v3 Authorization: Bearer ${env.TRACKER_TOKEN} 6 The team's issue tracker." {
		t.Errorf("the table:\n%s", out)
	}
	noDocsPath(t, docs, out)

	code, out, errs = run(t, "", "tools", "--apis", "--json", "--config", cfg)
	var list []apis.Info
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != cli.ExitOK || errs != named {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	if len(list) != 1 || list[0].Name != "tracker" || list[0].Operations != 6 || list[0].Auth[0].Header != "Authorization: Bearer ${env.TRACKER_TOKEN}" {
		t.Errorf("--json: %s", out)
	}
	noDocsPath(t, docs, out)

	if code, _, errs := run(t, "", "tools", "--apis", "--ts", "--config", cfg); code != cli.ExitUsage || errs == "" {
		t.Errorf("--apis --ts: exit %d, %q", code, errs)
	}

	// A docs file that cannot be read stops crucible before anything
	// runs, with one line that names the setting and not the file.
	if err := os.Remove(docs); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"tools", "--apis", "--config", cfg},
		{"run", "--config", cfg, "--lang", "py", "-"},
	} {
		code, out, errs := run(t, "print(1)\n", args...)
		errs = strings.TrimPrefix(errs, named)
		if code != cli.ExitUsage || !strings.HasSuffix(errs, `apis["tracker"].docs: the file does not exist`+"\n") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q", args, code, errs)
		}
		noDocsPath(t, docs, out+errs)
	}
}
