package apis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cruciblehq/crucible/internal/terms"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
)

// catalog loads the three testdata APIs: tracker (OpenAPI 3 in YAML, a
// bearer token), weather (Swagger 2.0 in JSON, an API key header) and
// billing (Markdown).
func catalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := Load(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.APIs = map[string]config.API{
		"tracker": {
			Description: "The team's issue tracker: issues, users and code search.",
			Hosts:       []string{"tracker.example.com"},
			Secrets:     []string{"TRACKER_TOKEN"},
			Docs:        abs(t, "testdata/tracker.yaml"),
			Rules:       []config.APIRule{{Allow: "GET /**"}, {Allow: "POST /repos/*/*/issues"}, {Deny: "DELETE /**"}},
		},
		"weather": {
			Description: "Forecasts and alerts.",
			Hosts:       []string{"weather.example.net:8443"},
			Secrets:     []string{"WEATHER_KEY"},
			Docs:        abs(t, "testdata/weather.json"),
		},
		"billing": {
			Description: "Invoices and customers (internal).",
			Hosts:       []string{"billing.internal:80"},
			Docs:        abs(t, "testdata/billing.md"),
		},
	}
	return cfg
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func entryByPath(t *testing.T, c *Catalog, api, method, path string) *Entry {
	t.Helper()
	for _, e := range c.byName(api).entries {
		if e.Method == method && e.Path == path {
			return e
		}
	}
	t.Fatalf("%s has no %s %s", api, method, path)
	return nil
}

func TestList(t *testing.T) {
	got := catalog(t).List()
	b, _ := json.Marshal(got)
	want := `[` +
		`{"name":"billing","description":"Invoices and customers (internal).","hosts":["billing.internal:80"],"base_urls":["http://billing.internal"],"auth":[],"docs":"markdown","operations":0,"sections":5},` +
		`{"name":"tracker","description":"The team's issue tracker: issues, users and code search.","hosts":["tracker.example.com"],"base_urls":["https://tracker.example.com/api/v3"],"auth":[{"secret":"TRACKER_TOKEN","header":"Authorization: Bearer ${env.TRACKER_TOKEN}"}],"rules":["allow GET /**","allow POST /repos/*/*/issues","deny DELETE /**"],"docs":"openapi","operations":6},` +
		`{"name":"weather","description":"Forecasts and alerts.","hosts":["weather.example.net:8443"],"base_urls":["https://weather.example.net:8443/v2"],"auth":[{"secret":"WEATHER_KEY","header":"X-Api-Key: ${env.WEATHER_KEY}"}],"docs":"openapi","operations":2}` +
		`]`
	if string(b) != want {
		t.Errorf("List:\n got %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal((*Catalog)(nil).List()); string(b) != "[]" {
		t.Errorf("a nil catalog lists %s, want []", b)
	}
}

func TestOpenAPI(t *testing.T) {
	c := catalog(t)
	// Path-level parameters by $ref, then the operation's own.
	e := entryByPath(t, c, "tracker", "GET", "/repos/{owner}/{repo}/issues")
	if got := strings.Join(e.Parameters, ","); got != "state,per_page,owner,repo" {
		t.Errorf("parameters %s", got)
	}
	for _, want := range []string{
		"GET /repos/{owner}/{repo}/issues (operationId issues/list-for-repo)",
		"List repository issues",
		"Pull requests are issues too.",
		"owner (path, required, string): The account owner of the repository.",
		"state (query, string): open, closed or all",
	} {
		if !strings.Contains(e.detail, want) {
			t.Errorf("the detail lacks %q:\n%s", want, e.detail)
		}
	}
	if e := entryByPath(t, c, "tracker", "POST", "/repos/{owner}/{repo}/issues"); !strings.Contains(e.detail,
		"Request body (application/json): {body: string, labels: array, title: string (required)}") {
		t.Errorf("the request body is not described:\n%s", e.detail)
	}
	if e := entryByPath(t, c, "tracker", "DELETE", "/repos/{owner}/{repo}/issues/{number}"); !strings.Contains(e.detail, "[deprecated]") {
		t.Errorf("deprecation is not said:\n%s", e.detail)
	}
	// Swagger 2.0: a body parameter, and a parameter by $ref.
	e = entryByPath(t, c, "weather", "GET", "/forecast/{city}")
	if got := strings.Join(e.Parameters, ","); got != "city,days" || !strings.Contains(e.detail, "days (query, integer): How many days") {
		t.Errorf("parameters %s, detail:\n%s", got, e.detail)
	}
	if e := entryByPath(t, c, "weather", "POST", "/alerts"); len(e.Parameters) != 0 ||
		!strings.Contains(e.detail, "Request body (application/json): {city: string (required), severity: string}") {
		t.Errorf("parameters %v, detail:\n%s", e.Parameters, e.detail)
	}
}

func TestMarkdown(t *testing.T) {
	var got []string
	for _, e := range catalog(t).byName("billing").entries {
		got = append(got, e.Section+"|"+e.Method+" "+e.Path)
	}
	want := "(introduction)| ;Authentication| ;GET /invoices|GET /invoices;POST /invoices/{id}/refund|POST /invoices/{id}/refund;GET /customers/{id}|GET /customers/{id}"
	if strings.Join(got, ";") != want {
		t.Errorf("sections\n got %s\nwant %s", strings.Join(got, ";"), want)
	}
	e := entryByPath(t, catalog(t), "billing", "GET", "/invoices")
	if !strings.Contains(e.detail, "# not a heading") || !strings.Contains(e.detail, "curl https://billing.internal") {
		t.Errorf("the code block is not in its section:\n%s", e.detail)
	}
}

func TestSearch(t *testing.T) {
	c := catalog(t)
	for _, tc := range []struct {
		query string
		first string // API, method and path (or section) of the best hit
	}{
		{"create an issue", "tracker POST /repos/{owner}/{repo}/issues"},
		{"createIssue", "tracker POST /repos/{owner}/{repo}/issues"},
		{"list issues", "tracker GET /repos/{owner}/{repo}/issues"},
		{"delete issue", "tracker DELETE /repos/{owner}/{repo}/issues/{number}"},
		{"issues/get", "tracker GET /repos/{owner}/{repo}/issues/{number}"},
		{"who am I authenticated user", "tracker GET /user"},
		{"forecast days", "weather GET /forecast/{city}"},
		{"weather alerts", "weather POST /alerts"},
		{"refund an invoice", "billing POST /invoices/{id}/refund"},
		{"tracker", "tracker"},
		{"customer payment methods", "billing GET /customers/{id}"},
	} {
		hits := search(t, c, tc.query)
		if len(hits) == 0 {
			t.Errorf("%q: no hits", tc.query)
			continue
		}
		got := hits[0].API
		if e := hits[0].Entry; e != nil {
			got += " " + e.Method + " " + e.Path
		}
		if got != tc.first {
			t.Errorf("%q: the best hit is %q (score %d), want %q", tc.query, got, hits[0].Score, tc.first)
		}
	}
	for _, q := range []string{"", "  ", "zebra xylophone", "a"} {
		if hits := search(t, c, q); len(hits) != 0 {
			t.Errorf("%q found %d hits", q, len(hits))
		}
	}
	if hits := search(t, nil, "issues"); hits != nil {
		t.Errorf("a nil catalog found %v", hits)
	}
}

func TestFind(t *testing.T) {
	found := find(t, catalog(t), "create issue")
	if len(found) == 0 || found[0].Name != "tracker" || len(found[0].Matches) == 0 {
		t.Fatalf("found %+v", found)
	}
	m := found[0].Matches[0]
	if m.Method != "POST" || m.Path != "/repos/{owner}/{repo}/issues" || m.OperationID != "issues/create" || found[0].Auth[0].Header != "Authorization: Bearer ${env.TRACKER_TOKEN}" {
		t.Errorf("the first match is %+v, auth %+v", m, found[0].Auth)
	}
	if f := find(t, catalog(t), "zebra"); f == nil || len(f) != 0 {
		t.Errorf("found %v, want []", f)
	}
}

func TestRender(t *testing.T) {
	c := catalog(t)
	hits := search(t, c, "create issue")
	for _, tc := range []struct {
		detail    string
		want, not []string
	}{
		{"names", []string{"HTTP API tracker (https://tracker.example.com/api/v3)", "  POST /repos/{owner}/{repo}/issues\n"},
			[]string{"Bearer", "Create an issue"}},
		{"summary", []string{
			"HTTP API tracker: The team's issue tracker",
			"base URL: https://tracker.example.com/api/v3",
			"auth: header Authorization: Bearer ${env.TRACKER_TOKEN}",
			"rules: allow GET /**; allow POST /repos/*/*/issues; deny DELETE /**",
			"  POST /repos/{owner}/{repo}/issues (owner, repo): Create an issue\n",
		}, []string{"title: string"}},
		{"full", []string{
			"auth: header Authorization: Bearer ${env.TRACKER_TOKEN}",
			`env.TRACKER_TOKEN (Python os.environ["TRACKER_TOKEN"], shell $TRACKER_TOKEN) holds a placeholder`,
			"POST /repos/{owner}/{repo}/issues (operationId issues/create)",
			"Request body (application/json): {body: string, labels: array, title: string (required)}",
			"deny wins",
		}, nil},
	} {
		out := c.Render(hits, tc.detail)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s lacks %q:\n%s", tc.detail, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("%s has %q:\n%s", tc.detail, w, out)
			}
		}
	}
	out := c.Render(search(t, c, "refund invoice"), "full")
	for _, w := range []string{"HTTP API billing", "base URL: http://billing.internal", "--- section POST /invoices/{id}/refund", "Refunds a paid invoice, in full or by `amount`"} {
		if !strings.Contains(out, w) {
			t.Errorf("the Markdown section lacks %q:\n%s", w, out)
		}
	}
	// The API alone matched: full lists what it offers, briefly.
	out = c.Render(search(t, c, "net"), "full") // in its hosts only
	if !strings.Contains(out, "  GET /forecast/{city} (city, days): Forecast for a city, by day") ||
		!strings.Contains(out, "auth: header X-Api-Key: ${env.WEATHER_KEY}") {
		t.Errorf("the API alone:\n%s", out)
	}
	if out := c.Render(nil, "full"); out != "" {
		t.Errorf("no hits rendered %q", out)
	}
}

// A large description: a broad query at full detail stays within
// MaxRender and says what it left out.
func TestRenderBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("openapi: 3.1.0\npaths:\n")
	long := strings.Repeat("Widgets are described at length here. ", 100)
	for i := range 500 {
		b.WriteString("  /widgets/" + string(rune('a'+i%26)) + "/" + strings.Repeat("x", i%7) + "/" + itoa(i) + ":\n")
		b.WriteString("    get:\n      summary: Get widget " + itoa(i) + "\n      description: " + long + "\n")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "widgets.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.APIs = map[string]config.API{"widgets": {Hosts: []string{"widgets.example"}, Docs: p}}
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.List()[0].Operations; n != 500 {
		t.Fatalf("%d operations, want 500", n)
	}
	hits := search(t, c, "get widget")
	if len(hits) != terms.MaxHits {
		t.Fatalf("%d hits, want %d", len(hits), terms.MaxHits)
	}
	for _, detail := range []string{"names", "summary", "full"} {
		out := c.Render(hits, detail)
		if len(out) > MaxRender {
			t.Errorf("%s: %d bytes, more than %d", detail, len(out), MaxRender)
		}
		if detail == "full" && !strings.Contains(out, "more parts cut: the answer is bounded to 16 KiB") {
			t.Errorf("full does not say what it cut:\n%s", out[len(out)-300:])
		}
	}
	for _, e := range c.byName("widgets").entries {
		if len(e.detail) > maxDetail+3 || !strings.Contains(e.detail, "...") {
			t.Fatalf("a long description is not clipped: %d bytes", len(e.detail))
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// The docs file's path, and its contents when it is not what it should
// be, never appear in an error: they may reach the model.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxDocs + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	unreadable := write("unreadable.md", "# x\n")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		docs, want string
		root       bool // root reads a mode-0 file
	}{
		{filepath.Join(dir, "missing.yaml"), `apis["x"].docs: the file does not exist`, false},
		{dir, `apis["x"].docs: is not a regular file`, false},
		{big, `apis["x"].docs: is larger than 16 MiB`, false},
		{write("bad.yaml", "openapi: 3.0.0\npaths: [\n  sekrit-contents: {"), `apis["x"].docs: is not valid YAML (line `, false},
		{write("bad.json", `{"openapi": "3.0.0", "paths": sekrit-contents}`), `apis["x"].docs: is not valid JSON (at byte `, false},
		{write("other.json", `{"sekrit-contents": 1}`), `apis["x"].docs: is neither OpenAPI 3 nor Swagger 2.0`, false},
		{unreadable, `apis["x"].docs: the file cannot be read: permission denied`, true},
	} {
		if tc.root && os.Geteuid() == 0 {
			continue
		}
		cfg := config.Default()
		cfg.APIs = map[string]config.API{"x": {Hosts: []string{"x.example"}, Docs: tc.docs}}
		c, err := Load(cfg)
		if err == nil {
			t.Errorf("%s: loaded %v", filepath.Base(tc.docs), c)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tc.want) {
			t.Errorf("%s: error %q, want %q...", filepath.Base(tc.docs), msg, tc.want)
		}
		if strings.Contains(msg, dir) || strings.Contains(msg, filepath.Base(tc.docs)) || strings.Contains(msg, "sekrit") || strings.Contains(msg, "\n") {
			t.Errorf("the error says the path or the contents, or is not one line: %q", msg)
		}
	}
}

// Whatever is asked, nothing the catalog says names a docs file.
func TestNoPath(t *testing.T) {
	cfg := testConfig(t)
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testdata := abs(t, "testdata")
	var outs []string
	b, _ := json.Marshal(c.List())
	outs = append(outs, string(b))
	for _, q := range []string{"issue", "tracker", "weather", "billing invoice", "testdata", "yaml", "md json docs", "/"} {
		b, _ := json.Marshal(find(t, c, q))
		outs = append(outs, string(b))
		for _, d := range []string{"names", "summary", "full"} {
			outs = append(outs, c.Render(search(t, c, q), d))
		}
	}
	for _, out := range outs {
		for _, p := range []string{testdata, "tracker.yaml", "weather.json", "billing.md", "testdata/"} {
			if strings.Contains(out, p) {
				t.Fatalf("%q in:\n%s", p, out)
			}
		}
	}
}

func FuzzParseDocs(f *testing.F) {
	for _, n := range []string{"tracker.yaml", "weather.json", "billing.md"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(n, b)
		f.Add("docs", b)
	}
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		d, err := parseDocs(name, b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("a multi-line error: %q", err)
			}
			return
		}
		for _, e := range d.entries {
			_ = e.render("full")
		}
	})
}

// search is c.Search, which must not fail.
func search(t *testing.T, c *Catalog, query string) []Hit {
	t.Helper()
	hits, err := c.Search(context.Background(), query)
	if err != nil {
		t.Fatalf("search %q: %v", query, err)
	}
	return hits
}

// find is c.Find, which must not fail.
func find(t *testing.T, c *Catalog, query string) []Info {
	t.Helper()
	found, err := c.Find(context.Background(), query)
	if err != nil {
		t.Fatalf("find %q: %v", query, err)
	}
	return found
}

// A query past the bounds is refused with an error that says them, before
// it is split into words: a 1 MiB one costs nothing but its length. One of
// many words is refused too, also when they are joined (camelCase, a-b).
func TestSearchBound(t *testing.T) {
	c := catalog(t)
	ctx := context.Background()
	var words []string
	for i := range 1 << 17 {
		words = append(words, fmt.Sprintf("w%dx", i))
	}
	huge := strings.Join(words, " ")[:1<<20]
	allocs := testing.AllocsPerRun(3, func() {
		if hits, err := c.Search(ctx, huge); !errors.Is(err, ErrQueryTooLong) || hits != nil {
			t.Fatalf("a 1 MiB query: %v, %v", hits, err)
		}
	})
	if allocs > 20 { // the error's; a search of it would make one a word
		t.Errorf("a 1 MiB query made %v allocations", allocs)
	}
	for _, q := range []string{
		strings.Repeat("x", terms.MaxQuery+1),
		strings.Join(words[:terms.MaxWords+1], " "),
		strings.Join(words[:terms.MaxWords+1], "-"),
	} {
		_, err := c.Find(ctx, q)
		if !errors.Is(err, ErrQueryTooLong) || !strings.Contains(err.Error(), "at most 1024 bytes and 32 words") {
			t.Errorf("a query of %d bytes: %v", len(q), err)
		}
	}
	// At the bounds: searched. Repeats are one word.
	for _, q := range []string{
		strings.Join(words[:terms.MaxWords-1], " ") + " issue",
		strings.Repeat("issue ", terms.MaxQuery/6),
	} {
		if hits := search(t, c, q); len(hits) == 0 {
			t.Errorf("a query of %d bytes found nothing", len(q))
		}
	}
}

// A search whose context is done stops with its error.
func TestSearchContext(t *testing.T) {
	c := catalog(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Search(ctx, "issue"); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled search: %v", err)
	}
}
