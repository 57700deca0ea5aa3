package httprule

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct {
		target, strict, lax string
		err                 error
	}{
		{target: "/", strict: "/", lax: "/"},
		{target: "", err: ErrTarget},
		{target: "*", err: ErrTarget},
		{target: "example.com:443", err: ErrTarget},
		{target: "/repos/x", strict: "/repos/x", lax: "/repos/x"},
		{target: "/repos/x/", strict: "/repos/x", lax: "/repos/x"},
		{target: "//admin", strict: "/admin", lax: "/admin"},
		{target: "/repos//x///y", strict: "/repos/x/y", lax: "/repos/x/y"},
		{target: "/repos/../admin", strict: "/admin", lax: "/admin"},
		{target: "/repos/./x/.", strict: "/repos/x", lax: "/repos/x"},
		{target: "/../../admin", strict: "/admin", lax: "/admin"},
		{target: "/repos/%2e%2e/admin", strict: "/admin", lax: "/admin"},
		{target: "/repos/%2E%2e/admin", strict: "/admin", lax: "/admin"},
		{target: "/repos/.%2E/admin", strict: "/admin", lax: "/admin"},
		{target: "/repos/%2e/x", strict: "/repos/x", lax: "/repos/x"},
		{target: "/repos/..%2fadmin", strict: "/repos/..%2Fadmin", lax: "/admin"},
		{target: "/repos/..%2Fadmin", strict: "/repos/..%2Fadmin", lax: "/admin"},
		{target: "/repos/..%5cadmin", strict: "/repos/..%5Cadmin", lax: "/admin"},
		{target: `/repos/..\admin`, strict: "/repos/..%5Cadmin", lax: "/admin"},
		{target: "/repos/..;/admin", strict: "/repos/..%3B/admin", lax: "/admin"},
		{target: "/repos;x=1/y", strict: "/repos%3Bx=1/y", lax: "/repos/y"},
		{target: "/rep%6fs/x", strict: "/repos/x", lax: "/repos/x"},
		{target: "/a%20b", strict: "/a%20b", lax: "/a%20b"},
		{target: "/repos/x?a=/../admin", strict: "/repos/x", lax: "/repos/x"},
		{target: "/repos/x?a=/../admin#/../y", err: ErrFragment},
		{target: "/repos/x#frag", err: ErrFragment},
		{target: "/repos/x#/../../admin", err: ErrFragment},
		{target: "https://api.example.com/repos/../admin?q", strict: "/admin", lax: "/admin"},
		{target: "HTTP://api.example.com", strict: "/", lax: "/"},
		{target: "ftp://api.example.com/x", err: ErrTarget},
		{target: "/repos/%zz", err: ErrEncoding},
		{target: "/repos/%2", err: ErrEncoding},
		{target: "/repos/%00x", err: ErrControl},
		{target: "/repos/%0d%0aX: y", err: ErrControl},
	} {
		strict, lax, err := Normalize(c.target)
		if err != c.err {
			t.Errorf("%q: error %v, want %v", c.target, err, c.err)
			continue
		}
		if err == nil && (Format(strict) != c.strict || Format(lax) != c.lax) {
			t.Errorf("%q: %s and %s, want %s and %s", c.target, Format(strict), Format(lax), c.strict, c.lax)
		}
	}
}

func TestCheck(t *testing.T) {
	set, err := Compile("github", []Rule{
		{Text: "GET /repos/**"},
		{Text: "POST /repos/*/issues"},
		{Text: "* /gists/{id}"},
		{Text: "GET /files/*.json"},
		{Text: "GET /a%20b"},
		{Deny: true, Text: "DELETE /**"},
		{Deny: true, Text: "* /repos/*/admin/**"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, target string
		header         http.Header
		allow          bool
		rule, reason   string
	}{
		{method: "GET", target: "/repos", allow: true},
		{method: "GET", target: "/repos/x", allow: true},
		{method: "GET", target: "/repos/x/y/z?page=2", allow: true},
		{method: "get", target: "/repos/x", allow: true},
		{method: "GET", target: "https://api.github.com/repos/x", allow: true},
		{method: "POST", target: "/repos/x/issues", allow: true},
		{method: "POST", target: "/repos/x/issues/", allow: true},
		{method: "POST", target: "/repos/x/y/issues", reason: "no allow rule matches (it allows GET /repos/**, POST /repos/*/issues"},
		{method: "PATCH", target: "/gists/abc", allow: true},
		{method: "PATCH", target: "/gists/abc/def"},
		{method: "GET", target: "/files/a.json", allow: true},
		{method: "GET", target: "/files/a.jsonx"},
		{method: "GET", target: "/files/a/b.json"},
		{method: "GET", target: "/a%20b", allow: true},
		{method: "GET", target: "/a b", allow: true},

		{method: "DELETE", target: "/repos/x", rule: `github: deny DELETE /**`, reason: `the API github refuses DELETE /repos/x: its rule deny "DELETE /**" matches`},
		{method: "delete", target: "/repos/x", rule: `github: deny DELETE /**`},
		{method: "GET", target: "/repos/x/admin/keys", rule: `github: deny * /repos/*/admin/**`},
		{method: "GET", target: "/repos/x/ADMIN", rule: `github: deny * /repos/*/admin/**`},
		{method: "GET", target: "/REPOS/x", reason: "no allow rule matches"},
		{method: "GET", target: "/admin", reason: "refuses GET /admin: no allow rule"},

		// Traversal: judged where it lands.
		{method: "GET", target: "/repos/../admin", reason: "refuses GET /admin:"},
		{method: "GET", target: "/repos/%2e%2e/admin", reason: "refuses GET /admin:"},
		{method: "GET", target: "/repos/..%2fadmin", reason: "refuses GET /admin:"},
		{method: "GET", target: "/repos/..%5Cadmin", reason: "refuses GET /admin:"},
		{method: "GET", target: "/repos/..;/admin", rule: `github: deny * /repos/*/admin/**`},
		{method: "GET", target: "/repos/x/..;/y/..;/..;/admin", reason: "refuses GET /admin:"},
		{method: "GET", target: "//admin", reason: "refuses GET /admin:"},
		{method: "GET", target: "/repos/x/..%2fadmin", allow: true},
		{method: "GET", target: "/repos/x/y/%2e%2e/admin/k", rule: `github: deny * /repos/*/admin/**`},
		{method: "GET", target: "/repos/x/adm%69n", rule: `github: deny * /repos/*/admin/**`},
		{method: "GET", target: "/repos/%zz", reason: "malformed percent-encoding"},
		{method: "OPTIONS", target: "*", reason: "not a path"},
		{method: "GET", target: "/repos/x#/../../admin", reason: "holds a '#'"},
		{method: "POST", target: "/repos/x?a=1#&_method=DELETE", reason: "holds a '#'"},

		// Overrides: every method named must be allowed.
		{method: "POST", target: "/repos/x/issues", header: http.Header{"X-Http-Method-Override": {"DELETE"}},
			rule: `github: deny DELETE /**`, reason: "(DELETE is the method that X-Http-Method-Override names)"},
		{method: "POST", target: "/repos/x/issues", header: http.Header{"X-Http-Method": {"delete"}}, rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues", header: http.Header{"X-Method-Override": {"GET, DELETE"}}, rule: `github: deny DELETE /**`},
		{method: "GET", target: "/repos/x", header: http.Header{"X-Http-Method-Override": {"PUT"}}, reason: "PUT /repos/x"},
		{method: "POST", target: "/repos/x/issues", header: http.Header{"X-Http-Method-Override": {"POST"}}, allow: true},
		{method: "POST", target: "/repos/x/issues?_method=DELETE", rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues?_method=", allow: true},
		{method: "POST", target: "/repos/x/issues", header: http.Header{"X_http_method_override": {"DELETE"}},
			rule: `github: deny DELETE /**`, reason: "(DELETE is the method that X_http_method_override names)"},
		{method: "POST", target: "/repos/x/issues", header: http.Header{"X-Http_Method": {"DELETE"}}, rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues", header: http.Header{"X-Http-Method-Overrides": {"DELETE"}}, allow: true},
		{method: "POST", target: "/repos/x/issues?.method=DELETE", rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues?+method=DELETE", rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues?%20method=DELETE", rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues?[method=DELETE", rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues?_method[]=DELETE", rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues?a=1;_method=DELETE", rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues?a=%zz&_method=DELETE", rule: `github: deny DELETE /**`},
		{method: "POST", target: "/repos/x/issues?_method=DEL%zz", reason: "DEL%ZZ"},
		{method: "POST", target: "/repos/x/issues?x_method=DELETE&method=DELETE", allow: true},
	} {
		v := set.Check(c.method, c.target, c.header)
		if v.Allow != c.allow || v.Rule != c.rule || !strings.Contains(v.Reason, c.reason) || !v.Allow && !strings.Contains(v.Reason, "API github") {
			t.Errorf("%s %s %v: %+v", c.method, c.target, c.header, v)
		}
	}
}

func TestCheckNoRules(t *testing.T) {
	empty, err := Compile("x", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Set{nil, empty} {
		if v := s.Check("DELETE", "/../%zz", nil); !v.Allow {
			t.Errorf("no rules refused: %+v", v)
		}
	}
	denyOnly, _ := Compile("x", []Rule{{Deny: true, Text: "DELETE /**"}})
	if v := denyOnly.Check("GET", "/", nil); v.Allow || !strings.Contains(v.Reason, "no allow rule") {
		t.Errorf("deny rules only: %+v", v)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, text := range []string{"GET", "/x", "GET x", "GET /a/**/b", "GET /a**", "GET /a/%2f", "GET /a/%zz", "GET /a/..", "GET /x?y"} {
		if _, err := Compile("x", []Rule{{Text: text}}); err == nil {
			t.Errorf("%q compiled", text)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		ok   bool
	}{
		{"*", "x", true}, {"a*", "a", true}, {"a*", "ab", true}, {"a*", "ba", false},
		{"*.json", "x.json", true}, {"*.json", ".json", true}, {"*.json", "json", false},
		{"a*b*c", "abc", true}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "acb", false},
		{"ab*ba", "aba", false}, {"ab*ba", "abba", true}, {"x", "x", true}, {"x", "y", false},
	} {
		if glob(c.p, c.s) != c.ok {
			t.Errorf("glob(%q, %q) = %v", c.p, c.s, !c.ok)
		}
	}
}

// FuzzNormalize: whatever the target, the readings hold no dot segment and
// no empty one; the lax one has no separator left inside a segment; and a
// normalized path normalizes to itself.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"/", "/repos/../admin", "/repos/%2e%2e/admin", "/repos/..%2fadmin", "//admin",
		`/a\..\b`, "/a/..;/b", "https://h/a/./b?x", "/%zz", "/%00", "/a%2F..%2F..%2Fb/%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		strict, lax, err := Normalize(target)
		if err != nil {
			return
		}
		for _, segs := range [][]string{strict, lax} {
			for _, s := range segs {
				if s == "" || s == "." || s == ".." {
					t.Fatalf("%q: segment %q in %q", target, s, segs)
				}
			}
		}
		for _, s := range lax {
			if strings.ContainsAny(s, `/\;`) {
				t.Fatalf("%q: lax segment %q", target, s)
			}
		}
		again, _, err := Normalize(Format(strict))
		if err != nil || !slices.Equal(again, strict) {
			t.Fatalf("%q: %q normalizes to %q, %v", target, Format(strict), again, err)
		}
		_, laxAgain, err := Normalize(Format(lax))
		if err != nil || !slices.Equal(laxAgain, lax) {
			t.Fatalf("%q: lax %q normalizes to %q, %v", target, Format(lax), laxAgain, err)
		}
	})
}
