// Package glob is the one meaning of a name pattern in crucible's policy:
// tool names and resource URIs. '*' matches any run of characters, '/'
// included (path.Match's '*' stops at '/', so "deny: ['*']" let a tool
// named "admin/delete_repo" through); '?' matches one character; [a-z],
// [^a-z] (or [!a-z]) a class; '\' takes the next character as it is.
// Matching is on the whole name, case and all.
package glob

import (
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Glob is a compiled pattern.
type Glob struct {
	pattern string
	re      *regexp.Regexp
}

// Compile compiles pattern, or says why it is not one.
func Compile(pattern string) (*Glob, error) {
	if pattern == "" {
		return nil, errors.New("an empty pattern")
	}
	if !utf8.ValidString(pattern) {
		return nil, errors.New("a pattern that is not UTF-8")
	}
	var b strings.Builder
	b.WriteString(`\A(?s:`)
	for i := 0; i < len(pattern); {
		r, n := utf8.DecodeRuneInString(pattern[i:])
		switch r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '\\':
			if i+n == len(pattern) {
				return nil, errors.New(`a pattern that ends in '\'`)
			}
			e, m := utf8.DecodeRuneInString(pattern[i+n:])
			b.WriteString(regexp.QuoteMeta(string(e)))
			n += m
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end == 0 && i+2 < len(pattern) {
				// "[]...]": a leading ']' is a member.
				end = 1 + strings.IndexByte(pattern[i+2:], ']')
				if end == 0 {
					end = -1
				}
			}
			if end < 0 {
				return nil, errors.New("a '[' with no ']'")
			}
			class := pattern[i+1 : i+1+end]
			neg := strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^")
			if neg {
				class = class[1:]
			}
			if class == "" {
				return nil, errors.New("an empty class []")
			}
			b.WriteByte('[')
			if neg {
				b.WriteByte('^')
			}
			for _, c := range class {
				if c == '-' {
					b.WriteByte('-') // a range, as in a regexp class
				} else {
					b.WriteString(regexp.QuoteMeta(string(c)))
				}
			}
			b.WriteByte(']')
			n = end + 2
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
		i += n
	}
	b.WriteString(`)\z`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, errors.New("a malformed class")
	}
	return &Glob{pattern: pattern, re: re}, nil
}

// Match says whether name, whole, matches.
func (g *Glob) Match(name string) bool { return g.re.MatchString(name) }

// String is the pattern as written.
func (g *Glob) String() string { return g.pattern }

// Clean says whether name can be matched cleanly: printable ASCII, no
// space. A name of other characters (a Cyrillic 'е' for 'e', a zero-width
// joiner, a control character) could read as one that a pattern names
// while matching none, so policies refuse it.
func Clean(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) || r == ' ' {
			return false
		}
	}
	return true
}

// Set is patterns to match a name against.
type Set []*Glob

// CompileAll compiles patterns; the error names the first bad one.
func CompileAll(patterns []string) (Set, error) {
	s := make(Set, 0, len(patterns))
	for _, p := range patterns {
		g, err := Compile(p)
		if err != nil {
			return nil, &Error{Pattern: p, Why: err.Error()}
		}
		s = append(s, g)
	}
	return s, nil
}

// Match returns the first pattern that name matches, or nil.
func (s Set) Match(name string) *Glob {
	for _, g := range s {
		if g.Match(name) {
			return g
		}
	}
	return nil
}

// Error is a pattern that does not compile.
type Error struct{ Pattern, Why string }

func (e *Error) Error() string { return "pattern " + quote(e.Pattern) + " is " + e.Why }

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
