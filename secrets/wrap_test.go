package secrets

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// widths are the line widths of wrapped base64 that servers use: GitHub's
// API, PEM, MIME.
var widths = []int{60, 64, 76}

var encodings = map[string]*base64.Encoding{
	"std": base64.StdEncoding, "rawstd": base64.RawStdEncoding,
	"url": base64.URLEncoding, "rawurl": base64.RawURLEncoding,
}

// TestReverseWrapped is the attack: the code stores its placeholder
// upstream, the proxy sends the value in its stead, and the server returns
// the stored document base64-encoded and wrapped. The code chose where the
// value sits in the document, so the line breaks may fall anywhere in the
// value's encoding. Whole, redacted and streamed (a byte at a time, and in
// random pieces), the value comes back as its placeholder, each line break
// where it was.
func TestReverseWrapped(t *testing.T) {
	s := testSet(t)
	r := rand.New(rand.NewPCG(6, 6))
	doc := make([]byte, 200)
	for i := range doc {
		doc[i] = byte(r.IntN(256))
	}
	for _, width := range widths {
		for _, brk := range lineBreaks {
			for encName, enc := range encodings {
				for name, v := range values {
					// From the offsets 0 to 3/4 of a line (and a group
					// more), the value's first character falls on every
					// column that a byte's can (not the last of a group,
					// so never the last of these lines: the narrow forms
					// in TestReverseForms break there).
					for off := 0; off <= width*3/4+3; off++ {
						pre, suf := doc[:off], doc[off:off+[]int{0, 1, 2, 40}[off%4]]
						in := wrap(enc.EncodeToString(cat(pre, v, suf)), width, brk)
						want := wrap(enc.EncodeToString(cat(pre, ph(s, name), suf)), width, brk)
						where := fmt.Sprintf("%s %s, width %d, %q, offset %d", encName, name, width, brk, off)
						checkWrapped(t, s, r, []byte(in), want, v, off%5 == 0, where)
					}
				}
			}
		}
	}
}

// checkWrapped transforms in whole, redacted, streamed and in a header:
// each gives want, which keeps in's length and lines, and leaves no trace
// of v.
func checkWrapped(t *testing.T, s *Set, r *rand.Rand, in []byte, want string, v []byte, oneByte bool, where string) {
	t.Helper()
	out, use := s.Reverse(in)
	switch {
	case len(out) != len(in):
		t.Fatalf("%s: %d bytes became %d", where, len(in), len(out))
	case lines(out) != lines(in):
		t.Fatalf("%s: the lines of %q became %q", where, in, out)
	case string(out) != want:
		t.Fatalf("%s: %q became %q, want %q", where, in, out, want)
	case len(use.Replaced) != 1:
		t.Fatalf("%s: replaced %q", where, use.Replaced)
	}
	if l := quickLeak(flatten(out), v); l != "" {
		t.Fatalf("%s: the value is left as %q in %q", where, l, out)
	}
	if got := s.Redact(in); !bytes.Equal(got, out) {
		t.Fatalf("%s: Redact differs from Reverse", where)
	}
	if !bytes.ContainsAny(in, "\r\n") { // a head holds the escaped breaks only
		h := http.Header{"X-Echo": {string(in)}}
		if s.ReverseHeader(h); h.Get("X-Echo") != string(out) {
			t.Fatalf("%s: ReverseHeader differs from Reverse", where)
		}
	}
	if got, _ := streamReverse(s, &chunks{t: in, cut: randomCuts(r, 16)}); !bytes.Equal(got, out) {
		t.Fatalf("%s: streamed in pieces, %q", where, got)
	}
	if oneByte {
		if got, _ := streamReverse(s, &chunks{t: in, cut: func(int) int { return 1 }}); !bytes.Equal(got, out) {
			t.Fatalf("%s: streamed a byte at a time, %q", where, got)
		}
	}
}

// lines is the shape of a wrapped text: where its line breaks are.
func lines(t []byte) string {
	var b []byte
	for j := 0; j < len(t); j++ {
		if k := lineBreak(t[j:]); k > 0 {
			b = append(b, t[j:j+k]...)
			j += k - 1
			continue
		}
		b = append(b, '.')
	}
	return string(b)
}

// flatten is a text without its line breaks, of any kind: what a decoder
// that skips them reads.
func flatten(t []byte) []byte {
	return []byte(strings.NewReplacer(`\r`, "", `\n`, "", "\r", "", "\n", "").Replace(string(t)))
}

// TestGitHubContents is the attack as GitHub's contents API serves it: the
// file's base64 in a JSON string, in lines of 60 characters, each ended by
// an escaped newline.
func TestGitHubContents(t *testing.T) {
	s := testSet(t)
	v := values["GITHUB"]
	file := []byte("# config\ntoken: " + string(v) + "\nretries: 3\n")
	body := func(f []byte) string {
		return `{"name":"config.yml","content":"` + wrap(base64.StdEncoding.EncodeToString(f), 60, `\n`) + `","encoding":"base64"}`
	}
	for off := range 60 {
		f := append(bytes.Repeat([]byte{'#'}, off), file...)
		in := body(f)
		want := body(bytes.Replace(f, v, ph(s, "GITHUB"), 1))
		r := rand.New(rand.NewPCG(uint64(off), 7))
		checkWrapped(t, s, r, []byte(in), want, v, true, fmt.Sprintf("offset %d", off))
	}
}

// TestWrappedUnrelated: wrapped base64 without a value, with near misses
// of each (cut short, a byte changed), passes byte for byte.
func TestWrappedUnrelated(t *testing.T) {
	s := testSet(t)
	r := rand.New(rand.NewPCG(8, 8))
	var data []byte
	for name, v := range values {
		for _, w := range [][]byte{v, ph(s, name)} {
			junk := make([]byte, 1+r.IntN(50))
			for i := range junk {
				junk[i] = byte(r.IntN(256))
			}
			x := slices.Clone(w)
			x[len(x)/2] ^= 0x01
			data = slices.Concat(data, junk, w[:len(w)-1], junk, w[1:], junk, x)
		}
	}
	for _, width := range widths {
		for _, brk := range lineBreaks {
			for _, enc := range encodings {
				in := []byte(wrap(enc.EncodeToString(data), width, brk))
				if out, use := s.Reverse(in); !bytes.Equal(out, in) || use.Replaced != nil {
					t.Fatalf("width %d, %q: a text without values changed: %+v", width, brk, use)
				}
				if out, _ := streamReverse(s, &chunks{t: in, cut: randomCuts(r, 100)}); !bytes.Equal(out, in) {
					t.Fatalf("width %d, %q: streamed, a text without values changed", width, brk)
				}
			}
		}
	}
}

// TestMatchWrapped: the shape of a wrapped form. A line break may come
// after any character, but not before the first or two in a row; one kind
// of break throughout; and the lines between two breaks all one length.
func TestMatchWrapped(t *testing.T) {
	v := []byte("0123456789abcdef0123")
	enc := base64.RawStdEncoding.EncodeToString(v) // 27 characters
	s, err := build(map[string][]byte{"V": v}, seeded(9))
	if err != nil {
		t.Fatal(err)
	}
	at := func(brk string, cuts ...int) string {
		var b strings.Builder
		last := 0
		for _, c := range cuts {
			b.WriteString(enc[last:c] + brk)
			last = c
		}
		return b.String() + enc[last:]
	}
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"one line", enc, true},
		{"one break", at("\n", 13), true},
		{"after the first", at("\r\n", 1), true},
		{"before the last", at(`\n`, 26), true},
		{"even lines", at(`\r\n`, 3, 10, 17, 24), true},
		{"a line each", at("\n", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26), true},
		{"uneven lines", at("\n", 3, 10, 18), false},
		{"two kinds", enc[:5] + "\n" + enc[5:10] + "\r\n" + enc[10:], false},
		{"blank line", at("\n\n", 13), false},
		{"a lone CR", at("\r", 13), false},
		{"a space", at(" ", 13), false},
		{"before the first", "\n" + enc, false},
	}
	for _, c := range cases {
		n := s.match(matcher{0, b64enc, 0}, value, []byte(c.in+"\n!"))
		if c.ok && n != len(c.in) || !c.ok && n != 0 {
			t.Errorf("%s: %q matched %d bytes", c.name, c.in, n)
		}
	}
}
