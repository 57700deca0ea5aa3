package terms

import (
	"cmp"
	"context"
	"iter"
	"slices"
	"strings"
	"unicode"
)

// MaxHits bounds what one search returns.
const MaxHits = 20

// ctxEvery is how many docs Rank scores between looks at its context.
const ctxEvery = 64

// Fields are the words of a thing a search can find, in parts that count
// differently (a name more than a description).
type Fields struct {
	weights []int
	words   [][]string // each part's, made singular, sorted, without repeats
	name    string     // the first part's letters and digits, lowercase
}

// NewFields is the Fields of texts, the parts of a thing, each counting by
// its weight in weights. The first is its name.
func NewFields(weights []int, texts ...string) *Fields {
	f := &Fields{weights: weights}
	for _, t := range texts {
		f.words = append(f.words, singulars(split(t)))
	}
	if len(texts) > 0 {
		f.name = strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return unicode.ToLower(r)
			}
			return -1
		}, texts[0])
	}
	return f
}

// score is how much w counts in f (nil counts nothing): its best place.
// A word of a part counts twice its weight where it is w, its weight
// where it starts with w (of 3 letters or more); a part's words are
// sorted, so the first that is not less than w is the one: one binary
// search a part. In the name w also counts where it appears within, across
// the joints of an identifier: "pullrequest" finds list_pull_requests,
// "sum" checksum.
func (f *Fields) score(w string) int {
	if f == nil {
		return 0
	}
	best := 0
	for i, words := range f.words {
		j, found := slices.BinarySearch(words, w)
		switch {
		case found:
			best = max(best, 2*f.weights[i])
		case len(w) >= 3 && j < len(words) && strings.HasPrefix(words[j], w):
			best = max(best, f.weights[i])
		}
	}
	if f.name != "" && best < f.weights[0] && len(w) >= 3 && strings.Contains(f.name, w) {
		best = f.weights[0]
	}
	return best
}

// A Doc is what Rank ranks: the Fields of a thing and, for a thing that is
// one of another's (an API's operation), those of the other, In. A word
// found in In counts for the thing as if found in it, but only beside a
// word of its own: else a word of an API's name would find all its
// operations.
type Doc struct {
	Own, In *Fields
}

// A Hit is what Rank found of a thing, and its score.
type Hit[T any] struct {
	Of    T
	Score int
}

// Rank ranks the things of docs against q, best first, at most MaxHits:
// each word of q counts at its best place in a thing, and a thing that
// matches none is left out. Of two that score the same, the first in docs
// comes first. It reads docs as it goes and stops with ctx's error when
// ctx is done, so a caller that makes each Doc as it is asked for is
// bounded by ctx too.
func Rank[T any](ctx context.Context, q Query, docs iter.Seq2[T, Doc]) ([]Hit[T], error) {
	if len(q.words) == 0 {
		return nil, nil
	}
	var hits []Hit[T]
	n := 0
	for t, d := range docs {
		if n%ctxEvery == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		n++
		score, found := 0, false
		for _, w := range q.words {
			s := d.Own.score(w)
			found = found || s > 0
			score += max(s, d.In.score(w))
		}
		if found {
			hits = append(hits, Hit[T]{t, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit[T]) int { return cmp.Compare(b.Score, a.Score) })
	return hits[:min(len(hits), MaxHits)], nil
}
