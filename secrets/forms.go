package secrets

import "slices"

// The forms a secret's text may take on the wire. Each form matches the
// text to find at the start of a byte slice and writes the other side's
// text in the same form, the same length, and as far as it can tell the
// same letter case and alphabet.

type form uint8

const (
	verbatim form = iota
	percent       // any byte may be %XX (either case), a space may be '+'
	hexed         // two hex digits per byte, either case
	b64enc        // standard or URL-safe, at alignment matcher.align
	jsonic        // inside a JSON string: any byte may be \u00XX, some \/, \n...
)

// A matcher is one form of one secret.
type matcher struct {
	sec   int
	form  form
	align int
}

const (
	stdAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	urlAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	upperHex    = "0123456789ABCDEF"
	lowerHex    = "0123456789abcdef"
)

// b64 decodes a character of either base64 alphabet; -1 for any other.
var b64 = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := range 64 {
		t[stdAlphabet[i]] = int8(i)
		t[urlAlphabet[i]] = int8(i)
	}
	return t
}()

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func unhex2(a, b byte) (byte, bool) {
	x, ok1 := unhex(a)
	y, ok2 := unhex(b)
	return x<<4 | y, ok1 && ok2
}

// b64Bits are, for data placed at byte alignment a (0, 1 or 2) of a base64
// group, the characters that the data touches: which of their 6 bits come
// from the data (mask) and what those bits are. The first and last
// characters may mix the data with its neighbours; keeping the neighbours'
// bits and swapping only the data's keeps the surrounding text valid and
// decodes to exactly the other side.
func b64Bits(d []byte, a int) (mask, bits []byte) {
	start, end := 8*a, 8*a+8*len(d)
	for j := start / 6; 6*j < end; j++ {
		var m, v byte
		for k := range 6 {
			bit := 6*j + k
			m, v = m<<1, v<<1
			if bit >= start && bit < end {
				off := bit - start
				m |= 1
				v |= d[off/8] >> (7 - off%8) & 1
			}
		}
		mask, bits = append(mask, m), append(bits, v)
	}
	return mask, bits
}

// starts are the pairs of bytes with which a form of the side's text may
// begin. Every value and placeholder has at least MinLen bytes, so every
// form has at least two.
func (s *Set) starts(m matcher, side int) [][2]byte {
	e := &s.secrets[m.sec]
	w0, w1 := e.text[side][0], e.text[side][1]
	var out [][2]byte
	both := func(as, bs []byte) {
		for _, a := range as {
			for _, b := range bs {
				out = append(out, [2]byte{a, b})
			}
		}
	}
	hexes := func(b byte) []byte { return []byte{upperHex[b>>4], lowerHex[b>>4]} }
	switch m.form {
	case verbatim:
		both([]byte{w0}, []byte{w1})
	case percent:
		// Each of the first two bytes as itself, as %XX, or as '+'.
		firsts, seconds := []byte{w0}, []byte{w1, '%'}
		if w0 == ' ' {
			firsts = append(firsts, '+')
		}
		if w1 == ' ' {
			seconds = append(seconds, '+')
		}
		both(firsts, seconds)
		both([]byte{'%'}, hexes(w0))
	case hexed:
		both(hexes(w0), []byte{upperHex[w0&15], lowerHex[w0&15]})
	case jsonic:
		both([]byte{w0}, []byte{w1, '\\'})
		second := []byte{'u'}
		if e := jsonEscapes[w0]; e != 0 {
			second = append(second, e)
		}
		both([]byte{'\\'}, second)
	case b64enc:
		mask, bits := e.mask[m.align], e.bits[m.align][side]
		chars := func(i int) []byte {
			var cs []byte
			for c := range 256 {
				if d := b64[c]; d >= 0 && byte(d)&mask[i] == bits[i] {
					cs = append(cs, byte(c))
				}
			}
			return cs
		}
		both(chars(0), chars(1))
	}
	return out
}

// match is the length of m's form of the side's text at the start of t, or 0.
func (s *Set) match(m matcher, side int, t []byte) int {
	e := &s.secrets[m.sec]
	want := e.text[side]
	switch m.form {
	case verbatim:
		if len(t) >= len(want) && string(t[:len(want)]) == string(want) {
			return len(want)
		}
	case percent:
		return matchPercent(t, want, nil)
	case jsonic:
		return matchJSON(t, want, nil)
	case hexed:
		if len(t) < 2*len(want) {
			return 0
		}
		for i, w := range want {
			if d, ok := unhex2(t[2*i], t[2*i+1]); !ok || d != w {
				return 0
			}
		}
		return 2 * len(want)
	case b64enc:
		mask, bits := e.mask[m.align], e.bits[m.align][side]
		if len(t) < len(mask) {
			return 0
		}
		for i, mk := range mask {
			if d := b64[t[i]]; d < 0 || byte(d)&mk != bits[i] {
				if d < 0 { // not a character: a line break?
					return matchWrapped(t, mask, bits, i)
				}
				return 0
			}
		}
		return len(mask)
	}
	return 0
}

// matchWrapped is the base64 form wrapped across lines, matched from the
// first byte that is not a character, t[i]: it must be a line break, and
// it may be followed by more. A break
// may come between any two characters, the same break throughout, and the
// lines between two breaks all one length. The first break may come
// after any character, as the text may begin its lines before the form
// does; no width is assumed (MIME's is 76, PEM's 64, GitHub's 60), since
// the bits alone make a match.
func matchWrapped(t, mask, bits []byte, i int) int {
	var brk []byte      // the line break in use, once one is met
	line, width := i, 0 // characters since the last break; on a whole line
	for j := i; ; {
		if i == len(mask) {
			return j
		}
		if j == len(t) {
			return 0
		}
		if d := b64[t[j]]; d >= 0 {
			if byte(d)&mask[i] != bits[i] {
				return 0
			}
			i, j, line = i+1, j+1, line+1
			continue
		}
		k := lineBreak(t[j:])
		if k == 0 || line == 0 {
			return 0
		}
		if brk != nil { // the line that ends here is a whole one
			if string(t[j:j+k]) != string(brk) || width != 0 && line != width {
				return 0
			}
			width = line
		}
		brk, line, j = t[j:j+k], 0, j+k
	}
}

// lineBreak is the length of the line break at the start of t, or 0: "\n"
// or "\r\n", as it is or escaped inside a JSON string (GitHub's contents
// API sends its base64 so, in lines of 60 characters).
func lineBreak(t []byte) int {
	switch {
	case len(t) >= 1 && t[0] == '\n':
		return 1
	case len(t) >= 2 && (t[0] == '\r' && t[1] == '\n' || t[0] == '\\' && t[1] == 'n'):
		return 2
	case len(t) >= 4 && t[0] == '\\' && t[1] == 'r' && t[2] == '\\' && t[3] == 'n':
		return 4
	}
	return 0
}

// matchPercent matches want percent-encoded at the start of t, any byte of
// it either as itself or as %XX (and a space as '+'). Where both could be,
// %XX wins, as in a decoder (the WHATWG URL standard's percent-decode; a
// strict decoder agrees wherever it accepts the text): a value holding '%'
// sent undecoded is the verbatim form's to find. With enc set, it also
// records which bytes of want were %XX.
func matchPercent(t, want, enc []byte) int {
	j := 0
	for i, w := range want {
		if j+3 <= len(t) && t[j] == '%' {
			if d, ok := unhex2(t[j+1], t[j+2]); ok && d == w {
				if enc != nil {
					enc[i] = 1
				}
				j += 3
				continue
			}
		}
		if j < len(t) && t[j] == w {
			j++
			continue
		}
		if j < len(t) && w == ' ' && t[j] == '+' {
			j++
			continue
		}
		return 0
	}
	return j
}

// jsonEscapes are JSON's two-byte escapes, by the byte they stand for.
var jsonEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

// matchJSON matches want inside a JSON string at the start of t: any byte
// of it as itself, as \u00XX (either case), or as its two-byte escape;
// preferring escapes, as matchPercent does. With width set, it also
// records how many bytes of t each byte of want took (1, 2 or 6).
func matchJSON(t, want, width []byte) int {
	j := 0
	for i, w := range want {
		k := 0
		switch {
		case j+2 <= len(t) && t[j] == '\\' && jsonEscapes[w] != 0 && t[j+1] == jsonEscapes[w]:
			k = 2
		case j+6 <= len(t) && t[j] == '\\' && t[j+1] == 'u' && t[j+2] == '0' && t[j+3] == '0':
			if d, ok := unhex2(t[j+4], t[j+5]); ok && d == w && w < 0x80 { // above, a code point, not a byte
				k = 6
			}
		}
		if k == 0 && j < len(t) && t[j] == w {
			k = 1
		}
		if k == 0 {
			return 0
		}
		if width != nil {
			width[i] = byte(k)
		}
		j += k
	}
	return j
}

// write appends to dst the other side's text in the form m found as span.
// alpha is the base64 alphabet to write. With esc, a byte written as itself
// is percent-encoded unless it is unreserved in a URL.
func (s *Set) write(dst []byte, m matcher, side int, span []byte, alpha string, esc bool) []byte {
	e := &s.secrets[m.sec]
	other := e.text[1-side]
	switch m.form {
	case verbatim:
		for _, o := range other {
			dst = lit(dst, o, esc)
		}
		return dst
	case percent:
		enc := make([]byte, len(other))
		matchPercent(span, e.text[side], enc)
		j := 0
		for i, o := range other {
			if enc[i] == 0 {
				// Itself, or a '+' for a space: only a value holds a
				// space, and its placeholder is alphanumeric.
				dst = lit(dst, o, esc)
				j++
				continue
			}
			digits := upperHex
			if lowerLetters(span[j+1 : j+3]) {
				digits = lowerHex
			}
			dst = append(dst, '%', digits[o>>4], digits[o&15])
			j += 3
		}
		return dst
	case jsonic:
		width := make([]byte, len(other))
		matchJSON(span, e.text[side], width)
		j := 0
		for i, o := range other {
			switch width[i] {
			case 1:
				dst = lit(dst, o, esc)
			case 2:
				// A short escape (\/ for '/'...). None stands for a
				// letter or digit, and a placeholder has nothing else:
				// its character twice keeps the length and the string
				// valid, though it no longer reads as the placeholder.
				dst = append(dst, o, o)
			case 6:
				digits := lowerHex
				if upperLetters(span[j+2:j+6]) && !lowerLetters(span[j+2:j+6]) {
					digits = upperHex
				}
				dst = append(dst, '\\', 'u', '0', '0', digits[o>>4], digits[o&15])
			}
			j += int(width[i])
		}
		return dst
	case hexed:
		digits := lowerHex
		if upperLetters(span) {
			digits = upperHex
		}
		for _, o := range other {
			dst = append(dst, digits[o>>4], digits[o&15])
		}
		return dst
	}
	// base64: each character takes the other side's bits, and each line
	// break stays where it was.
	mask, bits := e.mask[m.align], e.bits[m.align][1-side]
	for i, j := 0, 0; j < len(span); {
		if k := lineBreak(span[j:]); k > 0 {
			dst = append(dst, span[j:j+k]...)
			j += k
			continue
		}
		dst = lit(dst, alpha[byte(b64[span[j]])&^mask[i]|bits[i]], esc)
		i, j = i+1, j+1
	}
	return dst
}

// lit appends b, percent-encoded if esc is set and b is not unreserved in a
// URL (RFC 3986: letters, digits, - . _ ~).
func lit(dst []byte, b byte, esc bool) []byte {
	if esc && !unreserved(b) {
		return append(dst, '%', upperHex[b>>4], upperHex[b&15])
	}
	return append(dst, b)
}

func unreserved(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return b == '-' || b == '.' || b == '_' || b == '~'
}

func lowerLetters(t []byte) bool {
	for _, c := range t {
		if 'a' <= c && c <= 'f' {
			return true
		}
	}
	return false
}

func upperLetters(t []byte) bool {
	for _, c := range t {
		if 'A' <= c && c <= 'F' {
			return true
		}
	}
	return false
}

// index computes the base64 bits of both sides, the window and the
// candidate matchers by first byte, once the placeholders are drawn.
func (s *Set) index() {
	s.window = 0
	for i := range s.secrets {
		e := &s.secrets[i]
		// The longest forms: \u00XX in JSON for each byte, or base64
		// with a JSON-escaped "\r\n" (4 bytes) after each character but
		// the last.
		s.window = max(s.window, 6*len(e.text[value]))
		for a := range 3 {
			var vb, pb []byte
			e.mask[a], vb = b64Bits(e.text[value], a)
			_, pb = b64Bits(e.text[placeholder], a)
			e.bits[a] = [2][]byte{value: vb, placeholder: pb}
			s.window = max(s.window, 5*len(e.mask[a])-4)
		}
	}
	for side := range 2 {
		t, f := new([256][]matcher), new(firsts)
		for i := range s.secrets {
			ms := []matcher{{i, verbatim, 0}, {i, percent, 0}, {i, jsonic, 0}, {i, hexed, 0}, {i, b64enc, 0}, {i, b64enc, 1}, {i, b64enc, 2}}
			for _, m := range ms {
				for _, ab := range s.starts(m, side) {
					if !slices.Contains(t[ab[0]], m) {
						t[ab[0]] = append(t[ab[0]], m)
					}
					f.plain.add(ab[0], ab[1])
				}
			}
		}
		// A wrapped base64 form may break its line right after its
		// first character.
		f.all = f.plain
		for c, ms := range t {
			if slices.ContainsFunc(ms, func(m matcher) bool { return m.form == b64enc }) {
				for _, b := range []byte("\n\r\\") {
					f.all.add(byte(c), b)
				}
			}
		}
		s.cands[side], s.firsts[side] = t, f
	}
}

// pairs is a set of two-byte sequences: the bit of (a, b) is bit b%64 of
// word a×4 + b/64.
type pairs [256 * 4]uint64

func (p *pairs) add(a, b byte) {
	p[int(a)<<2|int(b)>>6] |= 1 << (b & 63)
}

func (p *pairs) has(a, b byte) bool {
	return p[int(a)<<2|int(b)>>6]&(1<<(b&63)) != 0
}

// firsts are the pairs of bytes that may begin a match: all of them, and
// plain, all but those that a line break makes (a base64 form wrapped
// right after its first character begins with it and the break's first
// byte). Those are common in text (a letter ending a line) and most begin
// nothing: the character after the break must make a plain pair too.
type firsts struct {
	all, plain pairs
}

// next is the first place in t from j on where a match may begin, or the
// last byte if none may before. A text cut too short to tell may begin
// one there: the matchers decide, when the rest has come. The replacer
// runs the first loop itself and calls next only at a line break's pair:
// a call at every pair cost 5% more where every byte is one.
func (f *firsts) next(t []byte, j int) int {
	for {
		for j+1 < len(t) && !f.all.has(t[j], t[j+1]) {
			j++
		}
		if j+1 >= len(t) || f.plain.has(t[j], t[j+1]) || len(t)-j < 6 { // a character, a break of 4, a character
			return j
		}
		if k := lineBreak(t[j+1:]); k > 0 && f.plain.has(t[j], t[j+1+k]) {
			return j
		}
		j++
	}
}
