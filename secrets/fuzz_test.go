package secrets

import (
	"bytes"
	"testing"
)

func seeds(f *testing.F, s *Set) {
	f.Add(sample(s), uint8(7), uint8(0xff))
	for _, name := range s.Names() {
		for form, enc := range forms {
			f.Add([]byte(enc([]byte("x"), values[name], []byte("yz"))), uint8(len(form)), uint8(len(name)))
			f.Add([]byte(enc([]byte("ab"), ph(s, name), nil)), uint8(len(form)), uint8(len(name)))
		}
	}
}

// check is what both directions promise for any text: the same length, the
// same output however the text is cut, and changes only inside a form of
// the text they look for (found by the oracle, not by the code).
// maxFuzz bounds a fuzzed text: the oracle is slow, and the code's paths
// are all reached well under it.
const maxFuzz = 4 << 10

func check(t *testing.T, s *Set, in, out []byte, cut uint8, streamed func(*chunks) []byte, found [][]byte) {
	if len(out) != len(in) {
		t.Fatalf("%d bytes became %d", len(in), len(out))
	}
	n := 1 + int(cut)
	if got := streamed(&chunks{t: in, cut: func(int) int { return n }}); !bytes.Equal(got, out) {
		t.Fatalf("cut every %d bytes: %q, whole: %q", n, got, out)
	}
	covered := make([]bool, len(in))
	for _, w := range found {
		for _, sp := range spans(in, w) {
			for i := sp.from; i < sp.to; i++ {
				covered[i] = true
			}
		}
	}
	for i := range in {
		if in[i] != out[i] && !covered[i] {
			t.Fatalf("byte %d changed outside any form: %q became %q", i, in, out)
		}
	}
}

// FuzzReverse: no real value escapes in any form, nothing else changes,
// never a panic.
func FuzzReverse(f *testing.F) {
	s := testSet(f)
	seeds(f, s)
	var vs [][]byte
	for _, e := range s.secrets {
		vs = append(vs, e.text[value])
	}
	f.Fuzz(func(t *testing.T, in []byte, cut, _ uint8) {
		in = in[:min(len(in), maxFuzz)]
		out, _ := s.Reverse(in)
		check(t, s, in, out, cut, func(c *chunks) []byte { got, _ := streamReverse(s, c); return got }, vs)
		for name, v := range values {
			if l := leak(out, v); l != "" {
				t.Fatalf("%s escaped as %q in %q", name, l, out)
			}
		}
	})
}

// FuzzForward: only the allowed secrets' values are written, only where
// their placeholders were; the others' placeholders stay; never a panic.
func FuzzForward(f *testing.F) {
	s := testSet(f)
	seeds(f, s)
	f.Fuzz(func(t *testing.T, in []byte, cut, mask uint8) {
		in = in[:min(len(in), maxFuzz)]
		var allow []string
		var phs [][]byte
		for i, e := range s.secrets {
			if mask>>i&1 == 1 {
				allow = append(allow, e.name)
				phs = append(phs, e.text[placeholder])
			}
		}
		out, _ := s.Forward(in, allow)
		check(t, s, in, out, cut, func(c *chunks) []byte { got, _ := streamForward(s, c, allow); return got }, phs)
		for i, e := range s.secrets {
			if mask>>i&1 == 0 && leak(in, e.text[value]) == "" {
				if l := leak(out, e.text[value]); l != "" {
					t.Fatalf("%s was written as %q to a host it may not go to", e.name, l)
				}
			}
		}
	})
}
