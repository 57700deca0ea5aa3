package apis

import (
	"context"
	"fmt"

	"github.com/cruciblehq/crucible/internal/terms"
)

// ErrQueryTooLong is why Search refuses a query past the bounds of
// terms.ParseQuery: a search costs the query's words times the entries of
// the docs.
var ErrQueryTooLong = terms.ErrTooLong

// Hit is one thing a search found: an API's operation or section, or (with
// a nil Entry) the API itself, by its name, description or hosts.
type Hit struct {
	API   string
	Entry *Entry
	Score int
}

// How much a word of a query counts where it is found (twice this for the
// whole word, this for a word that starts with it: terms.Rank's rules).
var (
	apiWeights       = []int{6, 2, 2}          // name, description, hosts
	operationWeights = []int{4, 3, 3, 3, 1, 1} // operationId, summary, path, method, parameters, description
	sectionWeights   = []int{4, 3, 1}          // heading, its method and path, text
)

// Search ranks the APIs and their operations or sections against query's
// words, best first, at most terms.MaxHits, by terms.Rank: each word
// counts at its best place (an operation's id, summary, path and method
// count more than its parameters and description), and a word found in the
// API's name, description or hosts counts for each of its operations that
// matches another word.
//
// A query of more than terms.MaxQuery bytes or terms.MaxWords words is
// refused with an error that wraps ErrQueryTooLong, before any of it is
// read; a search stops with ctx's error when ctx is done.
func (c *Catalog) Search(ctx context.Context, query string) ([]Hit, error) {
	q, err := terms.ParseQuery(query)
	if err != nil || c == nil {
		return nil, err
	}
	found, err := terms.Rank(ctx, q, c.docs)
	if err != nil {
		return nil, fmt.Errorf("searching the APIs: %w", err)
	}
	var hits []Hit
	for _, f := range found {
		f.Of.Score = f.Score
		hits = append(hits, f.Of)
	}
	return hits, nil
}

// docs are what Search ranks: each API, then its operations or sections.
func (c *Catalog) docs(yield func(Hit, terms.Doc) bool) {
	for _, a := range c.apis {
		if !yield(Hit{API: a.name}, terms.Doc{Own: a.words}) {
			return
		}
		for _, e := range a.entries {
			if !yield(Hit{API: a.name, Entry: e}, terms.Doc{Own: e.words, In: a.words}) {
				return
			}
		}
	}
}
