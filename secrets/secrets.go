// Package secrets keeps real credentials out of the sandbox. Each secret gets
// a placeholder per execution, which is what the code sees; the egress proxy
// swaps the placeholder for the real value on the way out (only for the
// secret's own hosts) and the real value back into the placeholder on the way
// in, in every form a server may echo it. Redact is the last line of defence
// for everything else that leaves Crucible.
//
// It is mechanism only: it knows nothing of the config file, of hosts or of
// the network; the caller says which secrets a destination may receive and
// turns what was refused into violations.
//
// The forms found: verbatim; percent-encoded (any byte as %XX in either
// case, a space as '+', a stray '%' as itself); inside a JSON string
// (\u00XX, \/ and the other short escapes); hex in either case; base64,
// standard or URL-safe, padded or not, at any of the three alignments
// inside a longer base64 text, on one line or wrapped across lines at any
// width (MIME's 76, PEM's 64, GitHub's 60): "\n" or "\r\n", as it is or
// escaped inside a JSON string, between any two characters, the same break
// throughout and the lines between two breaks all one length. What is
// written takes the form, length, line breaks, letter case and (as far as
// the text tells) base64 alphabet of what was found, so every
// transformation but ForwardURL keeps the length: a Content-Length stays
// right in both directions.
//
// Not found: a compressed body (the caller must ask for identity encoding
// or refuse another), a value only partly echoed (a masked "sk-...xyz"),
// other encodings (quoted-printable, HTML entities, UTF-16, a non-ASCII
// byte as a JSON code point) and encodings of encodings, among them base64
// inside a JSON string with '/' escaped as \/, or wrapped with breaks
// other than the above (spaces, indentation, \u000a).
package secrets

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Bounds of a secret's value. A value shorter than MinLen is refused: its
// placeholder would be guessable, and its encodings would turn up by chance
// in ordinary text. MaxLen bounds what a stream holds back while it waits
// to see whether a match completes (up to seven bytes per value byte).
const (
	MinLen = 8
	MaxLen = 4096
)

// Set is the secrets of one execution, each with its placeholder. It is
// safe for concurrent use; its Readers are not.
type Set struct {
	secrets []secret // sorted by name
	window  int      // the longest text any form of any secret may take
	// For each side found: the matchers by the text's first byte, and the
	// pairs of bytes that may begin a match (most bytes of a text begin
	// none, and one lookup tells).
	cands  [2]*[256][]matcher
	firsts [2]*firsts
}

type secret struct {
	name string
	text [2][]byte // the real value and its placeholder, by side
	// For base64 at each alignment: which bits of each character the
	// secret fills (the same for both sides), and their values by side.
	mask [3][]byte
	bits [3][2][]byte
}

// Sides of a secret: what reverse substitution finds, and what forward
// substitution finds.
const (
	value       = 0
	placeholder = 1
)

// New makes placeholders for the secrets, a map of name to real value. The
// errors name a secret, never a value.
func New(values map[string][]byte) (*Set, error) {
	return build(values, token)
}

// build is New with the placeholders drawn by draw (the tests' are
// reproducible).
func build(values map[string][]byte, draw func(n int) []byte) (*Set, error) {
	s := &Set{}
	for name, v := range values {
		switch {
		case name == "":
			return nil, errors.New("secrets: a secret has no name")
		case len(v) < MinLen:
			return nil, fmt.Errorf("secrets: secret %q is shorter than %d bytes, too short to replace safely", name, MinLen)
		case len(v) > MaxLen:
			return nil, fmt.Errorf("secrets: secret %q is longer than %d bytes", name, MaxLen)
		}
		s.secrets = append(s.secrets, secret{name: name, text: [2][]byte{value: slices.Clone(v)}})
	}
	slices.SortFunc(s.secrets, func(a, b secret) int { return strings.Compare(a.name, b.name) })
	for i := range s.secrets {
		for j := range i {
			if string(s.secrets[i].text[value]) == string(s.secrets[j].text[value]) {
				// One value with two placeholders could not be turned back.
				return nil, fmt.Errorf("secrets: secrets %q and %q have the same value", s.secrets[j].name, s.secrets[i].name)
			}
		}
	}
	// A clash (a placeholder inside a value or another placeholder, in any
	// form) is astronomically unlikely for random placeholders of at least
	// MinLen bytes; drawing again makes it impossible rather than unlikely.
	for range 100 {
		for i := range s.secrets {
			s.secrets[i].text[placeholder] = draw(len(s.secrets[i].text[value]))
		}
		s.index()
		if !s.clash() {
			return s, nil
		}
	}
	return nil, errors.New("secrets: could not draw distinct placeholders")
}

// Placeholder is what the code sees instead of the named secret.
func (s *Set) Placeholder(name string) (string, bool) {
	for _, e := range s.secrets {
		if e.name == name {
			return string(e.text[placeholder]), true
		}
	}
	return "", false
}

// Names are the secrets' names, sorted.
func (s *Set) Names() []string {
	names := make([]string, len(s.secrets))
	for i, e := range s.secrets {
		names[i] = e.name
	}
	return names
}

// alnum is the placeholders' alphabet: a placeholder looks like a token, is
// the same in every URL and header, and reveals nothing of the value but its
// length (keeping the value's shape, such as a "sk-" prefix, would reveal
// where its punctuation is).
const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func token(n int) []byte {
	t := make([]byte, 0, n)
	var b [64]byte
	for len(t) < n {
		rand.Read(b[:]) // never fails (crypto/rand documents it)
		for _, c := range b {
			// 248 = 4×62: dropping the rest keeps every character equally likely.
			if c < 248 && len(t) < n {
				t = append(t, alnum[c%62])
			}
		}
	}
	return t
}

// clash reports whether some secret's value or placeholder holds, in any
// form, another's or the other side of its own.
func (s *Set) clash() bool {
	all := make([]bool, len(s.secrets))
	for i := range all {
		all[i] = true
	}
	for _, e := range s.secrets {
		// A placeholder finds only itself, and no value hides in it.
		if _, u := s.transform(placeholder, all, e.text[placeholder]); len(u.Replaced) != 1 || u.Replaced[0] != e.name {
			return true
		}
		if _, u := s.transform(value, all, e.text[placeholder]); len(u.Replaced) != 0 {
			return true
		}
		// No placeholder hides in a value.
		if _, u := s.transform(placeholder, all, e.text[value]); len(u.Replaced) != 0 {
			return true
		}
	}
	return false
}

// Use is what a substitution met, by secret name, sorted.
type Use struct {
	// Replaced: the secrets whose text was swapped (forward: the real value
	// was written; reverse: a real value was turned back).
	Replaced []string
	// Refused: forward only, the secrets whose placeholder was found but
	// may not go to this destination; it was left as it was.
	Refused []string
}

// Forward replaces, in b, the placeholders of the secrets named in allow by
// their real values. Placeholders of other secrets are left as they are and
// reported as Refused.
func (s *Set) Forward(b []byte, allow []string) ([]byte, Use) {
	return s.transform(placeholder, s.allowed(allow), b)
}

// Reverse turns every real value in b, in every form it knows, back into
// its placeholder.
func (s *Set) Reverse(b []byte) ([]byte, Use) {
	return s.transform(value, nil, b)
}

// Redact is the last line of defence for what Crucible returns (output,
// results, error messages): every real value becomes its placeholder, in
// the same form. The placeholder rather than a marker, because the code
// already knows it (nothing new is revealed), the length and encoding stay
// valid, and the same secret reads the same everywhere.
func (s *Set) Redact(b []byte) []byte {
	out, _ := s.Reverse(b)
	return out
}

// RedactString is Redact for a string.
func (s *Set) RedactString(t string) string {
	return string(s.Redact([]byte(t)))
}

func (s *Set) allowed(names []string) []bool {
	allow := make([]bool, len(s.secrets))
	for i, e := range s.secrets {
		allow[i] = slices.Contains(names, e.name)
	}
	return allow
}

func (s *Set) transform(side int, allow []bool, b []byte) ([]byte, Use) {
	r := s.replacer(side, allow)
	out, _ := r.run(make([]byte, 0, len(b)), b, true)
	return out, r.use()
}
