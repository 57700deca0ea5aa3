package secrets

import (
	"io"
	"sync"
)

// replacer is one substitution's state: it finds one side's text in any
// form and writes the other side's, leftmost first and, of the matches at
// one place, the longest.
type replacer struct {
	set   *Set
	side  int    // the side found: placeholder (forward) or value (reverse)
	allow []bool // by secret: swap what was found; nil swaps all
	esc   bool   // percent-encode what is written as itself (into a URL)
	cands *[256][]matcher
	// alpha is the base64 alphabet in use just before the next byte, as
	// far as the text tells ('+' standard, '-' URL-safe, 0 unknown): a
	// match whose own characters do not tell is written in it.
	alpha byte

	mu       sync.Mutex
	replaced []bool
	refused  []bool
}

func (s *Set) replacer(side int, allow []bool) *replacer {
	return &replacer{
		set: s, side: side, allow: allow, cands: s.cands[side],
		replaced: make([]bool, len(s.secrets)),
		refused:  make([]bool, len(s.secrets)),
	}
}

// run transforms src onto dst and says how much of src it used. Unless eof,
// it stops at a byte that may begin a match but is followed by less than
// the longest match: the caller keeps the rest and calls again with more.
// The output depends only on the text, never on where it was cut.
func (r *replacer) run(dst, src []byte, eof bool) ([]byte, int) {
	window := r.set.window
	firsts := r.set.firsts[r.side]
	i := 0
	for i < len(src) {
		j := i
		for j+1 < len(src) && !firsts.all.has(src[j], src[j+1]) {
			j++
		}
		if j+1 < len(src) && !firsts.plain.has(src[j], src[j+1]) {
			j = firsts.next(src, j) // a line break's pair: most begin nothing
		}
		if j+1 == len(src) && len(r.cands[src[j]]) == 0 {
			j++ // the last byte, and it begins nothing
		}
		if j > i {
			dst = append(dst, src[i:j]...)
			r.note(src[i:j])
			i = j
			continue
		}
		if !eof && len(src)-i < window {
			break
		}
		var best matcher
		n := 0
		for _, m := range r.cands[src[i]] {
			if k := r.set.match(m, r.side, src[i:]); k > n {
				best, n = m, k
			}
		}
		if n == 0 {
			dst = append(dst, src[i])
			r.note(src[i : i+1])
			i++
			continue
		}
		span := src[i : i+n]
		if r.allow == nil || r.allow[best.sec] {
			dst = r.set.write(dst, best, r.side, span, r.alphabet(span, src[i+n:min(len(src), i+window)]), r.esc)
			r.mark(r.replaced, best.sec)
		} else {
			dst = append(dst, span...)
			r.mark(r.refused, best.sec)
		}
		r.note(span)
		i += n
	}
	return dst, i
}

// alphabet is the base64 alphabet to write a match in: the one its own
// characters use, else the one of the characters after it, else before it,
// else the standard one. Writing the other would not reveal anything, only
// spoil the text for its reader.
func (r *replacer) alphabet(span, after []byte) string {
	if a := evidence(span); a != 0 {
		return pick(a)
	}
	for _, c := range after {
		if a := evidence([]byte{c}); a != 0 {
			return pick(a)
		}
		if b64[c] < 0 {
			break
		}
	}
	return pick(r.alpha)
}

func evidence(t []byte) byte {
	for _, c := range t {
		switch c {
		case '+', '/':
			return '+'
		case '-', '_':
			return '-'
		}
	}
	return 0
}

func pick(a byte) string {
	if a == '-' {
		return urlAlphabet
	}
	return stdAlphabet
}

// note moves alpha past t: the last character that tells an alphabet, or
// unknown after anything that ends a base64 text.
func (r *replacer) note(t []byte) {
	for k := len(t) - 1; k >= 0; k-- {
		c := t[k]
		if a := evidence(t[k : k+1]); a != 0 {
			r.alpha = a
			return
		}
		if b64[c] < 0 {
			r.alpha = 0
			return
		}
	}
}

func (r *replacer) mark(set []bool, i int) {
	r.mu.Lock()
	set[i] = true
	r.mu.Unlock()
}

func (r *replacer) use() Use {
	r.mu.Lock()
	defer r.mu.Unlock()
	var u Use
	for i, e := range r.set.secrets {
		if r.replaced[i] {
			u.Replaced = append(u.Replaced, e.name)
		}
		if r.refused[i] {
			u.Refused = append(u.Refused, e.name)
		}
	}
	return u
}

// chunk is how much a Reader asks of its source at once. A Reader holds at
// most chunk plus the window (up to seven times the longest value), twice
// (in and out).
const chunk = 32 << 10

// Reader is a substitution over a stream: what it reads from its source,
// transformed. A match cut across the source's reads is found as if the
// text came whole. It is not safe for concurrent Reads, but Use may be
// called at any time.
type Reader struct {
	r   *replacer
	src io.Reader
	in  []byte // read from src, not yet transformed
	out []byte // transformed, not yet returned
	off int
	err error
}

// ForwardReader is Forward over a stream.
func (s *Set) ForwardReader(src io.Reader, allow []string) *Reader {
	return s.reader(src, s.replacer(placeholder, s.allowed(allow)))
}

// ReverseReader is Reverse over a stream.
func (s *Set) ReverseReader(src io.Reader) *Reader {
	return s.reader(src, s.replacer(value, nil))
}

func (s *Set) reader(src io.Reader, r *replacer) *Reader {
	return &Reader{r: r, src: src, in: make([]byte, 0, s.window+chunk)}
}

// Read reads transformed bytes. The source's error, io.EOF included, is
// returned once everything before it was; what was held back waiting for
// the rest of a match is released then, as it is.
func (x *Reader) Read(p []byte) (int, error) {
	for x.off == len(x.out) {
		if x.err != nil {
			return 0, x.err
		}
		n, err := x.src.Read(x.in[len(x.in):cap(x.in)])
		x.in = x.in[:len(x.in)+n]
		if err != nil {
			x.err = err
		}
		if n == 0 && err == nil {
			continue
		}
		out, used := x.r.run(x.out[:0], x.in, x.err != nil)
		x.out, x.off = out, 0
		// What is kept is shorter than the window, so the next read has
		// room for at least a chunk.
		x.in = x.in[:copy(x.in, x.in[used:])]
	}
	n := copy(p, x.out[x.off:])
	x.off += n
	return n, nil
}

// Use is what the substitution met so far.
func (x *Reader) Use() Use { return x.r.use() }
