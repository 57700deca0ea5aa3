package apis

import (
	"cmp"
	"slices"
	"strings"

	"github.com/cruciblehq/crucible/internal/terms"
)

// maxHits bounds what one search returns.
const maxHits = 20

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
	sets    []map[string]bool
}

func newFields(weights []int, texts ...string) fields {
	f := fields{weights: weights}
	for _, t := range texts {
		set := map[string]bool{}
		for _, w := range searchTerms(t) {
			set[w] = true
		}
		f.sets = append(f.sets, set)
	}
	return f
}

// score is how much w counts in f: its best place.
func (f fields) score(w string) int {
	best := 0
	for i, set := range f.sets {
		s := 0
		if set[w] {
			s = 2 * f.weights[i]
		} else if len(w) >= 3 {
			for t := range set {
				if strings.HasPrefix(t, w) {
					s = f.weights[i]
					break
				}
			}
		}
		best = max(best, s)
	}
	return best
}

// Search ranks the APIs and their operations or sections against query's
// words, best first, at most 20: each word counts at its best place (an
// operation's id, summary, path and method count more than its parameters
// and description), and a word found in the API's name, description or
// hosts counts for each of its operations that matches another word.
func (c *Catalog) Search(query string) []Hit {
	words := searchTerms(query)
	if c == nil || len(words) == 0 {
		return nil
	}
	var hits []Hit
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
	return hits[:min(len(hits), maxHits)]
}

// searchTerms splits text into the words a search compares, each reduced
// to a crude singular ("issues" finds "issue", "repositories"
// "repository").
func searchTerms(text string) []string {
	words := terms.Split(text)
	for i, w := range words {
		words[i] = terms.Singular(w)
	}
	slices.Sort(words)
	return slices.Compact(words)
}
