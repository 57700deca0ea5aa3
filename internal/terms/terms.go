// Package terms splits text into the words that searches compare: the
// tools of search_tools and the HTTP APIs' operations are ranked by them.
package terms

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Split splits text into lowercase words, sorted and without repeats: at
// punctuation and spaces, and at camelCase, snake_case and kebab-case
// joints ("createIssue" and "create_issue" both give create and issue).
// Single letters are left out, single digits kept.
func Split(text string) []string {
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

// Bounds of a query, which Query checks: a search costs the query's words
// times what it searches, and a query comes from the code or the model,
// which may send a megabyte of distinct words.
const (
	MaxQuery = 1024 // bytes
	MaxWords = 32   // distinct words, as Split gives them
)

// ErrTooLong is why Query refuses a query past its bounds. The error it
// returns wraps it, and is safe to show whoever sent the query.
var ErrTooLong = fmt.Errorf("a query has at most %d bytes and %d words: search with a few words", MaxQuery, MaxWords)

// Query is Split for a search's query, which it refuses past the bounds.
func Query(q string) ([]string, error) {
	if len(q) > MaxQuery {
		return nil, fmt.Errorf("the query has %d bytes: %w", len(q), ErrTooLong)
	}
	words := Split(q)
	if len(words) > MaxWords {
		return nil, fmt.Errorf("the query has %d words: %w", len(words), ErrTooLong)
	}
	return words, nil
}

// Singular is a crude singular of an English word: "issues" gives
// "issue", "repositories" "repository"; "class" stays.
func Singular(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}
