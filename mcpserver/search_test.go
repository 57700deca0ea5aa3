package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/terms"
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
	found, err := rank(context.Background(), all, "get-sum")
	if err != nil || len(found) != 2 {
		t.Fatalf("found %+v, %v", found, err)
	}
	class, _ := rank(context.Background(), all, "class")
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
		{class, "names", []string{"tools.s._class\n"}, nil},
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

// rank bounds its own query: a megabyte of distinct words is refused
// before any is compared, with the reason.
func TestRankBound(t *testing.T) {
	tools := []sandbox.Tool{{Server: "s", Name: "get-sum"}}
	var words []string
	for i := range terms.MaxWords + 1 {
		words = append(words, fmt.Sprintf("w%c%c", 'a'+i/26, 'a'+i%26))
	}
	for _, q := range []string{strings.Repeat("x", terms.MaxQuery+1), strings.Join(words, " "), strings.Join(words, "-")} {
		if _, err := rank(context.Background(), tools, q); !errors.Is(err, terms.ErrTooLong) {
			t.Errorf("a query of %d bytes: %v", len(q), err)
		}
	}
	if found, err := rank(context.Background(), tools, strings.Join(words[:terms.MaxWords-1], " ")+" sum"); err != nil || len(found) != 1 {
		t.Errorf("a query within the bounds: %+v, %v", found, err)
	}
}

// rank honours its context: a search whose context is done stops with its
// error.
func TestRankContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if found, err := rank(ctx, []sandbox.Tool{{Server: "s", Name: "get-sum"}}, "sum"); !errors.Is(err, context.Canceled) || found != nil {
		t.Errorf("a cancelled search: %+v, %v", found, err)
	}
}
