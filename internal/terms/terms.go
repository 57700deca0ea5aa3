// Package terms splits text into the words that searches compare: the
// tools of search_tools and the HTTP APIs' operations are ranked by them.
package terms

import (
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
