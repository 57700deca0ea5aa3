package httprule

import (
	"net/http"
	"strings"
	"testing"
)

// Conditions on rules, and requests that try to slip past them: another
// spelling of the path, an override, a query that repeats a name, a header
// sent twice under two spellings, a missing field.
func TestConditions(t *testing.T) {
	set, err := Compile("gh", []Rule{
		{Deny: true, Text: "DELETE /repos/{owner}/**", If: `request.params.owner != "sandbox"`},
		{Deny: true, Text: "PUT /repos/**", If: `request.query.force == "true"`},
		{Text: "POST /repos/{owner}/{repo}/issues", If: `request.params.owner == "acme" && request.method == "POST"`},
		{Text: "GET /search", If: `request.query.q.startsWith("repo:acme/")`},
		{Text: "PATCH /orgs/**", If: `request.headers["x-org"] == "acme"`},
		{Text: "GET /user", If: `request.headers.authorization == "Bearer ${GH_TOKEN}" && client.name == "ci"`},
		{Text: "* /repos/sandbox/**"},
		{Text: "PUT /repos/**"},
	})
	if err != nil {
		t.Fatal(err)
	}
	names := strings.NewReplacer("ph_0123456789", "${GH_TOKEN}").Replace
	for _, c := range []struct {
		method, target string
		header         http.Header
		client         string
		want           string // "" allowed; else a part of the refusal
	}{
		{"POST", "/repos/acme/x/issues", nil, "", ""},
		{"POST", "/repos/evil/x/issues", nil, "", `"POST /repos/{owner}/{repo}/issues" matches, but its condition request.params.owner == "acme" && request.method == "POST" is false`},
		{"POST", "/repos/ACME/x/issues", nil, "", "is false"},
		{"POST", "/repos/acme%2Fevil/x/issues", nil, "", "no allow rule matches"}, // one segment to RFC 3986, two to a lax server
		{"POST", "/repos/evil/../acme/x/issues", nil, "", ""},                     // resolved: the server reads acme
		{"POST", "/repos/acme/x/issues", http.Header{"X-Http-Method-Override": {"DELETE"}}, "", "DELETE is the method that X-Http-Method-Override names"},
		{"GET", "/search?q=repo:acme/x", nil, "", ""},
		{"GET", "/search?q=repo%3Aacme%2Fx", nil, "", ""},
		{"GET", "/search?q=repo:evil/x", nil, "", "is false"},
		{"GET", "/search?q=repo:acme/x&q=repo:evil/y", nil, "", `could not be evaluated: the query gives the parameter "q" more than once`},
		{"GET", "/search?q=repo:acme/x;q=repo:evil/y", nil, "", "more than once"},
		{"GET", "/search", nil, "", "could not be evaluated: no such key: q"},
		{"PATCH", "/orgs/acme", http.Header{"X-Org": {"acme"}}, "", ""},
		{"PATCH", "/orgs/acme", http.Header{"X-Org": {"acme"}, "X_org": {"evil"}}, "", "is false"}, // "acme, evil"
		{"PATCH", "/orgs/acme", http.Header{"X-Org": {"acme", "evil"}}, "", "is false"},
		{"PATCH", "/orgs/acme", nil, "", "could not be evaluated"},
		{"GET", "/user", http.Header{"Authorization": {"Bearer ph_0123456789"}}, "ci", ""},
		{"GET", "/user", http.Header{"Authorization": {"Bearer ph_0123456789"}}, "alice", "is false"},
		{"GET", "/user", http.Header{"Authorization": {"Bearer ghp_other"}}, "ci", "is false"},
		{"DELETE", "/repos/sandbox/x", nil, "", ""},
		// A deny rule reads the path in lower case (its condition holds
		// not), the allow rules as sent.
		{"DELETE", "/repos/Sandbox/x", nil, "", "DELETE /repos/Sandbox/x: no allow rule matches"},
		{"DELETE", "/repos/prod/x", nil, "", `its rule deny "DELETE /repos/{owner}/**" matches`},
		{"PUT", "/repos/x?force=true", nil, "", `its rule deny "PUT /repos/**" matches`},
		{"PUT", "/repos/x?force=false", nil, "", ""},
		{"PUT", "/repos/x?force=true&force=false", nil, "", "its rule deny \"PUT /repos/**\" matches (and its condition could not be evaluated"},
	} {
		v := set.CheckRequest(Request{Method: c.method, Target: c.target, Header: c.header, Client: c.client, Names: names})
		if (c.want == "") != v.Allow || !strings.Contains(v.Reason, c.want) {
			t.Errorf("%s %s %v (client %q): %+v, want %q", c.method, c.target, c.header, c.client, v, c.want)
		}
	}
}

// A condition that does not load names the rule and where it fails.
func TestConditionErrors(t *testing.T) {
	for _, c := range []struct{ cond, want string }{
		{`request.params.owner ==`, `"GET /x": its condition: column 24: Syntax error`},
		{`request.method`, "is a dyn, not a condition"},
		{`args.x == 1`, "undeclared reference to 'args'"},
	} {
		_, err := Compile("gh", []Rule{{Text: "GET /x", If: c.cond}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.cond, err, c.want)
		}
	}
}
