package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/sandbox"
)

// The renderings name a tool as the code calls it, also when only some of
// a server's tools are shown: the name that tells two apart depends on the
// others.
func TestRenderNames(t *testing.T) {
	all := sandbox.NamedTools([]sandbox.Tool{
		{Server: "s", Name: "get-sum", InputSchema: map[string]any{"properties": map[string]any{"a": map[string]any{}}}},
		{Server: "s", Name: "get_sum"},
		{Server: "s", Name: "class"},
	})
	found := rank(all, "get-sum")
	if len(found) != 2 {
		t.Fatalf("found %+v", found)
	}
	one := []sandbox.Tool{all[slices.IndexFunc(all, func(t sandbox.Tool) bool { return t.Name == "get-sum" })]}
	for _, tc := range []struct {
		found       []sandbox.Tool
		detail      string
		want, never []string
	}{
		{found, "names", []string{"tools.s.get_sum\n", "tools.s.get_sum_2\n"}, []string{"get-sum\n"}},
		{one, "names", []string{"tools.s.get_sum_2\n"}, []string{"tools.s.get_sum\n"}},
		{one, "summary", []string{"tools.s.get_sum_2({a})"}, []string{"tools.s.get-sum", "tools.s.get_sum("}},
		{one, "full", []string{"function get_sum_2(args"}, []string{"function get_sum("}},
		{rank(all, "class"), "names", []string{"tools.s._class\n"}, nil},
		// Tools that are not named yet are named from the list given.
		{[]sandbox.Tool{{Server: "s", Name: "get-sum"}}, "names", []string{"tools.s.get_sum\n"}, nil},
		{[]sandbox.Tool{{Server: "s", Name: "get-sum"}}, "summary", []string{"tools.s.get_sum({})"}, nil},
	} {
		got := render(tc.found, tc.detail)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s of %d tools lacks %q:\n%s", tc.detail, len(tc.found), w, got)
			}
		}
		for _, w := range tc.never {
			if strings.Contains(got, w) {
				t.Errorf("%s of %d tools has %q:\n%s", tc.detail, len(tc.found), w, got)
			}
		}
	}
}
