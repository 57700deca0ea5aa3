// Package terms is how Crucible's searches rank what they find: the tools
// of search_tools and the HTTP APIs' operations and sections (of
// search_tools and tools.apis) by one set of rules. It splits text into the
// words a search compares, bounds a query, and ranks; what is searched, and
// how much each part of it counts, are its callers'.
package terms

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// split splits text into lowercase words, sorted and without repeats: at
// punctuation and spaces, and at camelCase, snake_case and kebab-case
// joints ("createIssue" and "create_issue" both give create and issue).
// Single letters are left out, single digits kept.
func split(text string) []string {
	var words []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 1 || (b.Len() == 1 && unicode.IsDigit(rune(b.String()[0]))) {
			words = append(words, b.String())
		}
		b.Reset()
	}
	prev := ' '
	for _, r := range text {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			b.WriteRune(unicode.ToLower(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		default:
			flush()
		}
		prev = r
	}
	flush()
	slices.Sort(words)
	return slices.Compact(words)
}

// Bounds of a query, which ParseQuery checks: a search costs the query's
// words times what it searches, and a query comes from the code or the
// model, which may send a megabyte of distinct words.
const (
	MaxQuery = 1024 // bytes
	MaxWords = 32   // distinct words, as split gives them
)

// ErrTooLong is why ParseQuery refuses a query past its bounds. The error
// it returns wraps it, and is safe to show whoever sent the query.
var ErrTooLong = fmt.Errorf("a query has at most %d bytes and %d words: search with a few words", MaxQuery, MaxWords)

// A Query is the words a search looks for, each made singular, at most
// MaxWords of them: only ParseQuery makes one.
type Query struct{ words []string }

// ParseQuery is the words of q. A q of more than MaxQuery bytes is
// refused before it is read (a megabyte costs only its length), one of
// more than MaxWords words once they are split.
func ParseQuery(q string) (Query, error) {
	if len(q) > MaxQuery {
		return Query{}, fmt.Errorf("the query has %d bytes: %w", len(q), ErrTooLong)
	}
	words := split(q)
	if len(words) > MaxWords {
		return Query{}, fmt.Errorf("the query has %d words: %w", len(words), ErrTooLong)
	}
	return Query{singulars(words)}, nil
}

// singular is a crude singular of an English word: "issues" gives
// "issue", "repositories" "repository"; "class" stays.
func singular(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}

// singulars is words, each made singular, sorted and without repeats.
func singulars(words []string) []string {
	for i, w := range words {
		words[i] = singular(w)
	}
	slices.Sort(words)
	return slices.Compact(words)
}
