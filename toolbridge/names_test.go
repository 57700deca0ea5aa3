package toolbridge

import (
	"slices"
	"strings"
	"testing"
)

// Named names each tool among its server's tools in the list, once: a part
// of a named list keeps the names the whole gave it, which are not the
// ones the part alone would get.
func TestNamed(t *testing.T) {
	in := []Tool{{Server: "a", Name: "get-sum"}, {Server: "a", Name: "get_sum"}, {Server: "b", Name: "get-sum"}, {Server: "b", Name: "if"}}
	all := Named(in)
	var got []string
	for _, tool := range all {
		got = append(got, tool.Server+"."+tool.JSName)
	}
	if want := []string{"a.get_sum_2", "a.get_sum", "b.get_sum", "b._if"}; !slices.Equal(got, want) {
		t.Errorf("named %q; want %q", got, want)
	}
	if in[0].JSName != "" {
		t.Error("Named changed its argument")
	}
	part := Named(all[:1])
	if part[0].JSName != "get_sum_2" || &part[0] != &all[0] {
		t.Errorf("a named part: %+v (not the same slice: %v)", part[0], &part[0] != &all[0])
	}
	if d := Declarations(all[:1]); !strings.Contains(d, "function get_sum_2(args") || strings.Contains(d, "function get_sum(") {
		t.Errorf("the declarations of a named part:\n%s", d)
	}
	if Named(nil) != nil {
		t.Error("Named(nil) is not nil")
	}
}
