package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
)

// The oracle finds a text's forms the slow, obvious way, with the standard
// library's decoders, so that the tests do not trust the code they test.

type span struct{ from, to int }

// spans are every place where t holds v in a form the package promises to
// find: verbatim, hex, percent-encoded, inside a JSON string, base64 at any
// alignment, on one line or wrapped.
func spans(t, v []byte) []span {
	var out []span
	n := len(v)
	for j := range t {
		add := func(k int) { out = append(out, span{j, j + k}) }
		if bytes.HasPrefix(t[j:], v) {
			add(n)
		}
		if j+2*n <= len(t) {
			if d, err := hex.DecodeString(string(t[j : j+2*n])); err == nil && bytes.Equal(d, v) {
				add(2 * n)
			}
		}
		if c := t[j]; c == v[0] || c == '+' && v[0] == ' ' || c == '%' && j+3 <= len(t) && unescapes(t[j:j+3], v[0]) {
			for k := n; k <= 3*n && j+k <= len(t); k++ {
				if d := percentDecode(t[j:j+k], false); d == string(v) {
					add(k)
				} else if d := percentDecode(t[j:j+k], true); d == string(v) {
					add(k)
				}
			}
		}
		if c := t[j]; c == v[0] || c == '\\' {
			for k := n; k <= 6*n && j+k <= len(t); k++ {
				var d string
				if json.Unmarshal([]byte(`"`+string(t[j:j+k])+`"`), &d) == nil && d == string(v) {
					add(k)
				}
			}
		}
		for a := range 3 {
			// The characters that hold v at alignment a, decoded in
			// place: pad the front of the group and the end.
			first, last := 8*a/6, (8*a+8*n+5)/6
			chars, k := unwrap(t[j:], last-first)
			if k == 0 {
				continue
			}
			s := strings.Repeat("A", first) + chars
			s = strings.NewReplacer("-", "+", "_", "/").Replace(s)
			s += strings.Repeat("A", (4-len(s)%4)%4)
			d, err := base64.StdEncoding.DecodeString(s)
			if err == nil && len(d) >= a+n && bytes.Equal(d[a:a+n], v) {
				add(k)
			}
		}
	}
	return out
}

// lineBreaks are the line breaks that the package promises to find in
// wrapped base64: as they are, or escaped inside a JSON string.
var lineBreaks = []string{"\n", "\r\n", `\n`, `\r\n`}

// unwrap is the first n base64 characters of t, on one line or wrapped:
// broken by one of lineBreaks throughout, the lines between two breaks all
// one length; and how many bytes of t they take, 0 if t does not begin so.
func unwrap(t []byte, n int) (string, int) {
	t = t[:min(len(t), 5*n)] // no form is longer
	for _, brk := range lineBreaks {
		lines := strings.Split(string(t), brk)
		chars := ""
		for i, l := range lines {
			l = l[:min(len(l), n-len(chars))]
			if l == "" || strings.Trim(l, stdAlphabet+"-_") != "" {
				break
			}
			chars += l
			if len(chars) == n {
				return chars, n + i*len(brk)
			}
			if i > 1 && len(l) != len(lines[1]) {
				break
			}
		}
	}
	return "", 0
}

func unescapes(t []byte, b byte) bool {
	return percentDecode(t, false) == string([]byte{b})
}

// percentDecode is the WHATWG URL standard's percent-decode (a '%' not
// followed by two hex digits is itself, as browsers and many servers
// read it), with form set also application/x-www-form-urlencoded's '+'.
func percentDecode(t []byte, form bool) string {
	var b []byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c == '%' && i+2 < len(t) && ishex(t[i+1]) && ishex(t[i+2]) {
			d, _ := hex.DecodeString(string(t[i+1 : i+3]))
			b = append(b, d[0])
			i += 2
			continue
		}
		if form && c == '+' {
			c = ' '
		}
		b = append(b, c)
	}
	return string(b)
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// leak says in which form t holds v, or "".
func leak(t, v []byte) string {
	if s := spans(t, v); len(s) > 0 {
		return string(t[s[0].from:s[0].to])
	}
	return ""
}

// quickLeak is leak for large texts: the canonical forms only.
func quickLeak(t, v []byte) string {
	forms := []string{
		string(v), hex.EncodeToString(v), strings.ToUpper(hex.EncodeToString(v)),
		url.QueryEscape(string(v)), url.PathEscape(string(v)),
	}
	for a := range 3 {
		pre := bytes.Repeat([]byte{0}, a)
		first, last := (8*a+5)/6, (8*a+8*len(v))/6 // the characters v alone fills
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			forms = append(forms, enc.EncodeToString(append(pre, v...))[first:last])
		}
	}
	for _, f := range forms {
		if bytes.Contains(t, []byte(f)) {
			return f
		}
	}
	return ""
}

// chunks is a reader that returns its text in the pieces given by cut.
type chunks struct {
	t   []byte
	cut func(rest int) int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.t) == 0 {
		return 0, io.EOF
	}
	n := min(c.cut(len(c.t)), len(p), len(c.t))
	n = max(n, 1)
	copy(p, c.t[:n])
	c.t = c.t[n:]
	return n, nil
}

func randomCuts(r *rand.Rand, max int) func(int) int {
	return func(int) int { return 1 + r.IntN(max) }
}

// seeded draws placeholders from a fixed seed: reproducible sets.
func seeded(seed uint64) func(n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	return func(n int) []byte {
		t := make([]byte, n)
		for i := range t {
			t[i] = alnum[r.IntN(len(alnum))]
		}
		return t
	}
}

// forms are encoders of a text embedded between a prefix and a suffix, in
// every form a server may echo it. Each returns the whole encoded text.
var forms = map[string]func(pre, t, suf []byte) string{
	"verbatim":   func(p, t, s []byte) string { return string(p) + string(t) + string(s) },
	"hex":        func(p, t, s []byte) string { return hex.EncodeToString(cat(p, t, s)) },
	"HEX":        func(p, t, s []byte) string { return strings.ToUpper(hex.EncodeToString(cat(p, t, s))) },
	"query":      func(p, t, s []byte) string { return url.QueryEscape(string(cat(p, t, s))) },
	"path":       func(p, t, s []byte) string { return url.PathEscape(string(cat(p, t, s))) },
	"percentall": func(p, t, s []byte) string { return percentAll(cat(p, t, s), "%%%02X") },
	"percentlow": func(p, t, s []byte) string { return percentAll(cat(p, t, s), "%%%02x") },
	"json":       func(p, t, s []byte) string { return jsonString(cat(p, t, s)) },
	"jsonslash":  func(p, t, s []byte) string { return strings.ReplaceAll(jsonString(cat(p, t, s)), "/", `\/`) },
	"jsonall":    func(p, t, s []byte) string { return jsonAll(cat(p, t, s)) },
	"std":        func(p, t, s []byte) string { return base64.StdEncoding.EncodeToString(cat(p, t, s)) },
	"rawstd":     func(p, t, s []byte) string { return base64.RawStdEncoding.EncodeToString(cat(p, t, s)) },
	"url":        func(p, t, s []byte) string { return base64.URLEncoding.EncodeToString(cat(p, t, s)) },
	"rawurl":     func(p, t, s []byte) string { return base64.RawURLEncoding.EncodeToString(cat(p, t, s)) },
	// Wrapped as MIME, PEM and GitHub's API (inside JSON) do, and narrow
	// enough that every value is broken across lines, several times.
	"mime":    wrapping(base64.StdEncoding, 76, "\r\n"),
	"pem":     wrapping(base64.StdEncoding, 64, "\n"),
	"github":  wrapping(base64.StdEncoding, 60, `\n`),
	"narrow":  wrapping(base64.RawURLEncoding, 5, `\r\n`),
	"narrow1": wrapping(base64.URLEncoding, 1, "\n"),
}

// decoders undo forms (base64 leniently: either alphabet, padded or not).
var decoders = map[string]func(string) ([]byte, error){
	"verbatim":   func(s string) ([]byte, error) { return []byte(s), nil },
	"hex":        func(s string) ([]byte, error) { return hex.DecodeString(s) },
	"HEX":        func(s string) ([]byte, error) { return hex.DecodeString(s) },
	"query":      func(s string) ([]byte, error) { d, err := url.QueryUnescape(s); return []byte(d), err },
	"path":       func(s string) ([]byte, error) { d, err := url.PathUnescape(s); return []byte(d), err },
	"percentall": func(s string) ([]byte, error) { d, err := url.PathUnescape(s); return []byte(d), err },
	"percentlow": func(s string) ([]byte, error) { d, err := url.PathUnescape(s); return []byte(d), err },
	"json":       unJSON,
	"jsonslash":  unJSON,
	"jsonall":    unJSON,
	"std":        anyBase64,
	"rawstd":     anyBase64,
	"url":        anyBase64,
	"rawurl":     anyBase64,
	"mime":       unwrapped("\r\n"),
	"pem":        unwrapped("\n"),
	"github":     unwrapped(`\n`),
	"narrow":     unwrapped(`\r\n`),
	"narrow1":    unwrapped("\n"),
}

// wrapping is the form of base64 in lines of width characters, each
// ended by brk.
func wrapping(enc *base64.Encoding, width int, brk string) func(p, t, s []byte) string {
	return func(p, t, s []byte) string { return wrap(enc.EncodeToString(cat(p, t, s)), width, brk) }
}

// wrap breaks a base64 text into lines of width characters, each ended by
// brk, the last one too, as `base64 -w width` writes it.
func wrap(b64 string, width int, brk string) string {
	var b strings.Builder
	for len(b64) > 0 {
		n := min(width, len(b64))
		b.WriteString(b64[:n] + brk)
		b64 = b64[n:]
	}
	return b.String()
}

func unwrapped(brk string) func(string) ([]byte, error) {
	return func(s string) ([]byte, error) { return anyBase64(strings.ReplaceAll(s, brk, "")) }
}

// jsonString is t inside a JSON string, as Go writes it (<, >, & as \u00XX).
func jsonString(t []byte) string {
	b, _ := json.Marshal(string(t))
	return string(b[1 : len(b)-1])
}

// jsonAll is t inside a JSON string, every byte as \u00XX.
func jsonAll(t []byte) string {
	var b strings.Builder
	for _, c := range t {
		fmt.Fprintf(&b, `\u%04x`, c)
	}
	return b.String()
}

func unJSON(s string) ([]byte, error) {
	var d string
	err := json.Unmarshal([]byte(`"`+s+`"`), &d)
	return []byte(d), err
}

// jsonable is whether a text can be in a JSON string as it is: ASCII, so
// that \u00XX is the byte, not a code point.
func jsonable(form string, t []byte) bool {
	if !strings.HasPrefix(form, "json") {
		return true
	}
	for _, c := range t {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// exact is whether form keeps a value's placeholder readable. JSON's \/
// has no two-byte counterpart for a letter: that character is written
// twice, which keeps the length but not the placeholder.
func exact(form string, v []byte) bool {
	return form != "jsonslash" || !bytes.ContainsRune(v, '/')
}

func anyBase64(s string) ([]byte, error) {
	s = strings.NewReplacer("-", "+", "_", "/").Replace(strings.TrimRight(s, "="))
	return base64.RawStdEncoding.DecodeString(s)
}

func percentAll(t []byte, f string) string {
	var b strings.Builder
	for _, c := range t {
		fmt.Fprintf(&b, f, c)
	}
	return b.String()
}

func cat(p ...[]byte) []byte { return bytes.Join(p, nil) }
