package terms

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The prefix match looks up one word of each part, not all: a word
// counts where a word of the part starts with it (of 3 letters or more),
// twice where it is the word. In the name (the first part) it counts
// where it appears within, across joints too, as a prefix does.
func TestScore(t *testing.T) {
	f := NewFields([]int{5, 1}, "alpha betamax gamma", "delta issues")
	for w, want := range map[string]int{"alpha": 10, "bet": 5, "betamax": 10, "be": 0, "betamaxx": 0, "issue": 2, "iss": 1, "zeta": 0, "a": 0, "gam": 5,
		"phabeta": 5, "max": 5, "ph": 0, "elta": 0} {
		if got := f.score(w); got != want {
			t.Errorf("score(%q) = %d; want %d", w, got, want)
		}
	}
	if got := (*Fields)(nil).score("alpha"); got != 0 {
		t.Errorf("nil fields score %d", got)
	}
}

// docs are things named by their index, each with one part.
func docs(in *Fields, texts ...string) func(yield func(int, Doc) bool) {
	return func(yield func(int, Doc) bool) {
		for i, s := range texts {
			if !yield(i, Doc{Own: NewFields([]int{1}, s), In: in}) {
				return
			}
		}
	}
}

func rank(t *testing.T, query string, d func(yield func(int, Doc) bool)) []int {
	t.Helper()
	q, err := ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := Rank(context.Background(), q, d)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, h := range hits {
		got = append(got, h.Of)
	}
	return got
}

// Best first, the first of equals first, singulars matched; a word of In
// counts only beside one of the thing's own; at most MaxHits.
func TestRank(t *testing.T) {
	api := NewFields([]int{3}, "tracker")
	many := make([]string, MaxHits+5)
	for i := range many {
		many[i] = fmt.Sprintf("issue %d", i)
	}
	for _, tc := range []struct {
		query string
		docs  func(yield func(int, Doc) bool)
		want  []int
	}{
		{"list issues", docs(nil, "get issue", "list_issues", "list", "zebra"), []int{1, 0, 2}},
		{"tracker", docs(api, "get issue", "list issues"), nil},
		{"tracker list", docs(api, "get issue", "list issues"), []int{1}},
		{"", docs(nil, "get issue"), nil},
		{"issue", docs(nil, many...), []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
	} {
		if got := rank(t, tc.query, tc.docs); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v; want %v", tc.query, got, tc.want)
		}
	}
}

// A query past the bounds is refused, also when its words are joined;
// one at them is read.
func TestParseQuery(t *testing.T) {
	var words []string
	for i := range MaxWords + 1 {
		words = append(words, fmt.Sprintf("w%dx", i))
	}
	for _, q := range []string{strings.Repeat("x", MaxQuery+1), strings.Join(words, " "), strings.Join(words, "_")} {
		if _, err := ParseQuery(q); !errors.Is(err, ErrTooLong) {
			t.Errorf("a query of %d bytes: %v", len(q), err)
		}
	}
	if q, err := ParseQuery(strings.Join(words[:MaxWords], " ")); err != nil || len(q.words) != MaxWords {
		t.Errorf("a query at the bounds: %d words, %v", len(q.words), err)
	}
}

// A search whose context is done stops with its error, and reads no more
// of its docs: their making is bounded by the context too.
func TestRankContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	q, _ := ParseQuery("issue")
	read := 0
	many := func(yield func(int, Doc) bool) {
		for i := range 10000 {
			read++
			if i == 100 {
				cancel()
			}
			if !yield(i, Doc{Own: NewFields([]int{1}, "issue")}) {
				return
			}
		}
	}
	if hits, err := Rank(ctx, q, many); !errors.Is(err, context.Canceled) || hits != nil {
		t.Errorf("a cancelled search: %v, %v", hits, err)
	}
	if read > 100+ctxEvery+1 {
		t.Errorf("read %d docs after the context was done at 100", read)
	}
}
