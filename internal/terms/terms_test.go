package terms

import (
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"createIssue", []string{"create", "issue"}},
		{"create_issue list-issues", []string{"create", "issue", "issues", "list"}},
		{"GET /repos/{owner}/x 2", []string{"2", "get", "owner", "repos"}},
		{"Ünïcode wörds", []string{"wörds", "ünïcode"}},
		{"", nil},
	} {
		if got := split(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("split(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestSingular(t *testing.T) {
	for in, want := range map[string]string{"issues": "issue", "repositories": "repository", "class": "class", "bus": "bus", "ids": "ids", "users": "user"} {
		if got := singular(in); got != want {
			t.Errorf("singular(%q) = %q; want %q", in, got, want)
		}
	}
}
