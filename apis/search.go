package apis

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cruciblehq/crucible/internal/terms"
)

// maxHits bounds what one search returns.
const maxHits = 20

// ErrQueryTooLong is why Search refuses a query past the bounds of
// terms.Query: a search costs the query's words times the entries of the
// docs (each in the few fields of an entry, by binary search).
var ErrQueryTooLong = terms.ErrTooLong

// ctxEvery is how many entries Search scores between looks at its context.
const ctxEvery = 64

// Hit is one thing a search found: an API's operation or section, or (with
// a nil Entry) the API itself, by its name, description or hosts.
type Hit struct {
	API   string
	Entry *Entry
	Score int
}

// How much a word of a query counts where it is found (twice this for the
// whole word, this for a word that starts with it).
var (
	apiWeights       = []int{6, 2, 2}          // name, description, hosts
	operationWeights = []int{4, 3, 3, 3, 1, 1} // operationId, summary, path, method, parameters, description
	sectionWeights   = []int{4, 3, 1}          // heading, its method and path, text
)

// fields are the words of what a search looks at, each part with its
// weight.
type fields struct {
	weights []int
	words   [][]string // each part's, sorted, without repeats
}

func newFields(weights []int, texts ...string) fields {
	f := fields{weights: weights}
	for _, t := range texts {
		f.words = append(f.words, searchTerms(t))
	}
	return f
}

// score is how much w counts in f: its best place. A part's words are
// sorted, so the first that is not less than w is w itself, or starts
// with w if any does: one binary search a part.
func (f fields) score(w string) int {
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
	return best
}

// Search ranks the APIs and their operations or sections against query's
// words, best first, at most 20: each word counts at its best place (an
// operation's id, summary, path and method count more than its parameters
// and description), and a word found in the API's name, description or
// hosts counts for each of its operations that matches another word.
//
// A query of more than MaxQuery bytes or MaxQueryTerms words is refused
// with an error that wraps ErrQueryTooLong, before any of it is read; a
// search stops with ctx's error when ctx is done.
func (c *Catalog) Search(ctx context.Context, query string) ([]Hit, error) {
	words, err := terms.Query(query)
	if err != nil {
		return nil, err
	}
	words = singulars(words)
	if c == nil || len(words) == 0 {
		return nil, nil
	}
	var hits []Hit
	scored := 0
	for _, a := range c.apis {
		own := make([]int, len(words))
		total := 0
		for i, w := range words {
			own[i] = a.words.score(w)
			total += own[i]
		}
		if total > 0 {
			hits = append(hits, Hit{API: a.name, Score: total})
		}
		for _, e := range a.entries {
			if scored%ctxEvery == 0 && ctx.Err() != nil {
				return nil, fmt.Errorf("searching the APIs: %w", ctx.Err())
			}
			scored++
			score, found := 0, false
			for i, w := range words {
				s := e.words.score(w)
				found = found || s > 0
				score += max(s, own[i])
			}
			if found {
				hits = append(hits, Hit{API: a.name, Entry: e, Score: score})
			}
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })
	return hits[:min(len(hits), maxHits)], nil
}

// searchTerms splits text into the words a search compares, each reduced
// to a crude singular ("issues" finds "issue", "repositories"
// "repository").
func searchTerms(text string) []string { return singulars(terms.Split(text)) }

// singulars is words, each made singular, sorted and without repeats.
func singulars(words []string) []string {
	for i, w := range words {
		words[i] = terms.Singular(w)
	}
	slices.Sort(words)
	return slices.Compact(words)
}
