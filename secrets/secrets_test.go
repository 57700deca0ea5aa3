package secrets

import (
	"bytes"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// values cover every length modulo 3 (each base64 alignment ends
// differently), punctuation, spaces, '%' and binary bytes.
var values = map[string][]byte{
	"GITHUB":  []byte("ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
	"SYMBOLS": []byte("s3cr3t/Tok+en=9?&x"),
	"SPACE":   []byte("hello world 1234"),
	"PERCENT": []byte("a%41b%zz%25c"),
	"BINARY":  []byte("\x00\xff\xfe bin\x10\x80\x7f"),
	"SHORT":   []byte("abcdefgh"),
	"NINE":    []byte("zyxwvu/ts"),
	"TEN":     []byte("0123456789"),
}

func testSet(t testing.TB) *Set {
	t.Helper()
	s, err := build(values, seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ph(s *Set, name string) []byte {
	p, _ := s.Placeholder(name)
	return []byte(p)
}

func TestNewRefuses(t *testing.T) {
	cases := []struct {
		name   string
		values map[string][]byte
		want   string
	}{
		{"short", map[string][]byte{"TOKEN": []byte("hunter2")}, `secret "TOKEN" is shorter than 8 bytes`},
		{"empty", map[string][]byte{"TOKEN": nil}, `secret "TOKEN" is shorter than 8 bytes`},
		{"long", map[string][]byte{"TOKEN": bytes.Repeat([]byte("k"), MaxLen+1)}, `secret "TOKEN" is longer than 4096 bytes`},
		{"noname", map[string][]byte{"": []byte("abcdefghij")}, "a secret has no name"},
		{"same", map[string][]byte{"A": []byte("abcdefghij"), "B": []byte("abcdefghij")}, `secrets "A" and "B" have the same value`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.values)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, want an error with %q", err, c.want)
			}
			for _, v := range c.values {
				if len(v) > 0 && strings.Contains(err.Error(), string(v)) {
					t.Fatalf("the error %q shows the value", err)
				}
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	a, err := New(values)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(values)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for name, v := range values {
		p, ok := a.Placeholder(name)
		if !ok {
			t.Fatalf("no placeholder for %s", name)
		}
		if len(p) != len(v) {
			t.Errorf("%s: placeholder of %d bytes for a value of %d", name, len(p), len(v))
		}
		if strings.Trim(p, alnum) != "" {
			t.Errorf("%s: placeholder %q is not alphanumeric", name, p)
		}
		if seen[p] {
			t.Errorf("%s: placeholder %q is another secret's", name, p)
		}
		seen[p] = true
		for _, w := range values {
			if l := leak([]byte(p), w); l != "" {
				t.Errorf("%s: placeholder %q holds a value as %q", name, p, l)
			}
		}
		if q, _ := b.Placeholder(name); q == p {
			t.Errorf("%s: two executions drew the same placeholder", name)
		}
	}
	if _, ok := a.Placeholder("NONE"); ok {
		t.Error("a placeholder for a secret that does not exist")
	}
	if got := a.Names(); !slices.IsSorted(got) || len(got) != len(values) {
		t.Errorf("Names = %q", got)
	}
}

// edges are what surrounds a form inside a longer text of the same
// encoding: every length up to 3 gives every base64 alignment and padding.
var edges = [][]byte{nil, []byte("x"), []byte("\xfe\x01"), []byte("ab/"), []byte("{\"k\":\"Bearer ")}

// TestReverseForms: a value echoed in any form, at any alignment, comes
// back as its placeholder in that form, the rest of the text intact.
func TestReverseForms(t *testing.T) {
	s := testSet(t)
	for name, v := range values {
		p := ph(s, name)
		for form, enc := range forms {
			for _, pre := range edges {
				for _, suf := range edges {
					if !jsonable(form, cat(pre, v, suf)) {
						continue
					}
					in := enc(pre, v, suf)
					out, use := s.Reverse([]byte(in))
					d, err := decoders[form](string(out))
					switch {
					case len(out) != len(in):
						t.Errorf("%s %s: %d bytes became %d", name, form, len(in), len(out))
					case err != nil || exact(form, v) && !bytes.Equal(d, cat(pre, p, suf)):
						t.Errorf("%s %s %q: %q decodes to %q (%v), want %q", name, form, in, out, d, err, cat(pre, p, suf))
					case !slices.Equal(use.Replaced, []string{name}):
						t.Errorf("%s %s: replaced %q", name, form, use.Replaced)
					}
					if l := leak(out, v); l != "" {
						t.Errorf("%s %s %q: the value is left as %q", name, form, out, l)
					}
					if (form == "url" || form == "rawurl") && strings.ContainsAny(in, "-_") && bytes.ContainsAny(out, "+/") {
						t.Errorf("%s %s: URL-safe %q became %q", name, form, in, out)
					}
					if (form == "std" || form == "rawstd") && strings.ContainsAny(in, "+/") && bytes.ContainsAny(out, "-_") {
						t.Errorf("%s %s: standard %q became %q", name, form, in, out)
					}
				}
			}
		}
	}
}

// TestAlphabet: a base64 form whose own characters do not tell the
// alphabet is written in the one of the text around it. This matters on the
// way out: a placeholder's base64 never holds '+', '/', '-' or '_' (six bits
// of ASCII letters and digits are never five ones in a row), a value's often
// does.
func TestAlphabet(t *testing.T) {
	s := testSet(t)
	for name := range values {
		for _, pre := range edges {
			for _, c := range []struct {
				form, mark, not string
			}{{"rawurl", "_", "+/"}, {"rawstd", "/", "-_"}} {
				enc := forms[c.form](pre, ph(s, name), nil)
				for _, in := range []string{c.mark + enc + " ", " " + enc + c.mark, c.mark + "\n" + enc + c.mark} {
					if out, _ := s.Forward([]byte(in), []string{name}); bytes.ContainsAny(out, c.not) {
						t.Errorf("%s: %q became %q", name, in, out)
					}
				}
			}
		}
	}
}

// TestForwardForms: a placeholder in any form (Basic authentication is
// base64) becomes the real value in that form, for an allowed secret only.
func TestForwardForms(t *testing.T) {
	s := testSet(t)
	for name, v := range values {
		p := ph(s, name)
		for form, enc := range forms {
			for _, pre := range edges {
				if !jsonable(form, cat(pre, v)) {
					continue
				}
				in := enc(pre, p, []byte("\n"))
				out, use := s.Forward([]byte(in), []string{name, "UNKNOWN"})
				if form == "query" || form == "path" || form == "json" || form == "jsonslash" {
					// The placeholder is alphanumeric, so these left it
					// as it is; the value is written as it is too.
					if want := strings.Replace(in, string(p), string(v), 1); string(out) != want {
						t.Errorf("%s %s %q: %q, want %q", name, form, in, out, want)
					}
				} else if d, err := decoders[form](string(out)); err != nil || !bytes.Equal(d, cat(pre, v, []byte("\n"))) || len(out) != len(in) {
					t.Errorf("%s %s %q: %q decodes to %q (%v)", name, form, in, out, d, err)
				}
				if !slices.Equal(use.Replaced, []string{name}) || use.Refused != nil {
					t.Errorf("%s %s: %+v", name, form, use)
				}
				var others []string
				for n := range values {
					if n != name {
						others = append(others, n)
					}
				}
				out, use = s.Forward([]byte(in), others)
				if string(out) != in || use.Replaced != nil || !slices.Equal(use.Refused, []string{name}) {
					t.Errorf("%s %s to another host: %q, %+v", name, form, out, use)
				}
			}
		}
	}
}

// TestUnrelated: a text with no secret in it passes unchanged, including
// near misses: a value or placeholder cut short, or with a byte changed.
func TestUnrelated(t *testing.T) {
	s := testSet(t)
	var in []byte
	for name, v := range values {
		for _, t := range [][]byte{v, ph(s, name)} {
			for form, enc := range forms {
				_ = form
				in = append(in, enc(nil, t[:len(t)-1], nil)...)
				in = append(in, ' ')
				in = append(in, enc(nil, t[1:], nil)...)
				in = append(in, ' ')
				w := slices.Clone(t)
				w[len(w)/2] ^= 0x40
				in = append(in, enc(nil, w, nil)...)
				in = append(in, '\n')
			}
		}
	}
	if out, use := s.Reverse(in); !bytes.Equal(out, in) || use.Replaced != nil {
		t.Errorf("reverse changed a text without values: %+v", use)
	}
	all := s.Names()
	if out, use := s.Forward(in, all); !bytes.Equal(out, in) || use.Replaced != nil {
		t.Errorf("forward changed a text without placeholders: %+v", use)
	}
}

// text is a text holding the forms of values, for the streaming tests.
func sample(s *Set) []byte {
	var b []byte
	for i, name := range s.Names() {
		v := s.secrets[i].text[value]
		for _, form := range []string{"verbatim", "std", "rawurl", "hex", "query", "percentall", "narrow"} {
			b = append(b, forms[form](edges[i%len(edges)], v, edges[(i+1)%len(edges)])...)
			b = append(b, " : "...)
		}
		b = append(b, ph(s, name)...)
		b = append(b, '\n')
	}
	return b
}

func stream(s *Set, src io.Reader, forward bool) ([]byte, Use) {
	if forward {
		return streamForward(s, src, []string{"GITHUB", "SPACE"})
	}
	return streamReverse(s, src)
}

func streamForward(s *Set, src io.Reader, allow []string) ([]byte, Use) {
	return readAll(s.ForwardReader(src, allow))
}

func streamReverse(s *Set, src io.Reader) ([]byte, Use) {
	return readAll(s.ReverseReader(src))
}

// readAll reads one byte at a time: the reader must hold back and release
// its output correctly whatever the size asked.
func readAll(r *Reader) ([]byte, Use) {
	out, err := io.ReadAll(iotest.OneByteReader(r))
	if err != nil {
		panic(err)
	}
	return out, r.Use()
}

// TestSplits: a match cut at any place, once or twice, is found as if the
// text came whole.
func TestSplits(t *testing.T) {
	s := testSet(t)
	in := sample(s)
	for _, forward := range []bool{false, true} {
		var want []byte
		var wantUse Use
		if forward {
			want, wantUse = s.Forward(in, []string{"GITHUB", "SPACE"})
		} else {
			want, wantUse = s.Reverse(in)
		}
		for k := range len(in) + 1 {
			src := io.MultiReader(bytes.NewReader(in[:k]), bytes.NewReader(in[k:]))
			got, use := stream(s, src, forward)
			if !bytes.Equal(got, want) || !slices.Equal(use.Replaced, wantUse.Replaced) || !slices.Equal(use.Refused, wantUse.Refused) {
				t.Fatalf("forward %v, cut at %d: the output differs", forward, k)
			}
		}
	}
	// Every pair of cuts, on the forms of one value.
	v := values["SYMBOLS"]
	var small []byte
	for _, form := range []string{"verbatim", "std", "url", "hex", "query", "narrow"} {
		small = append(small, forms[form]([]byte("a"), v, nil)...)
	}
	want, _ := s.Reverse(small)
	for i := range len(small) + 1 {
		for j := i; j <= len(small); j++ {
			src := io.MultiReader(bytes.NewReader(small[:i]), bytes.NewReader(small[i:j]), bytes.NewReader(small[j:]))
			if got, _ := stream(s, src, false); !bytes.Equal(got, want) {
				t.Fatalf("cut at %d and %d: the output differs", i, j)
			}
		}
	}
}

// TestLargeBody: values deep inside a 1 MiB body, around the Reader's own
// chunk boundaries, streamed in random pieces with bounded memory.
func TestLargeBody(t *testing.T) {
	s := testSet(t)
	r := rand.New(rand.NewPCG(2, 2))
	body := make([]byte, 1<<20)
	for i := range body {
		body[i] = " abcdefghijklmnopqrstuvwxyz{}\":,0123456789\n"[r.IntN(43)]
	}
	type put struct {
		at   int
		name string
		form string
		enc  []byte
	}
	var puts []put
	at := []int{1000, chunk - 5, 2*chunk - 30, 300 << 10, 700 << 10, len(body) - 200}
	names := s.Names()
	fs := []string{"verbatim", "std", "rawurl", "hex", "HEX", "query", "path", "percentlow"}
	for k, a := range at {
		name := names[k%len(names)]
		form := fs[k%len(fs)]
		enc := []byte(forms[form]([]byte("q"), values[name], nil))
		copy(body[a:], enc)
		puts = append(puts, put{a, name, form, enc})
	}
	want, _ := s.Reverse(body)
	x := s.ReverseReader(&chunks{t: body, cut: randomCuts(r, 100<<10)})
	got, err := io.ReadAll(x)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the streamed output differs from the whole one")
	}
	if c := cap(x.in); c != s.window+chunk {
		t.Errorf("the reader grew its buffer to %d bytes", c)
	}
	for _, p := range puts {
		d, err := decoders[p.form](string(got[p.at : p.at+len(p.enc)]))
		if err != nil || !bytes.Equal(d, cat([]byte("q"), ph(s, p.name))) {
			t.Errorf("%s %s at %d: decodes to %q", p.name, p.form, p.at, d)
		}
	}
	for name, v := range values {
		if l := quickLeak(got, v); l != "" {
			t.Errorf("%s left as %q", name, l)
		}
	}
	// Nothing else changed.
	for i := range body {
		inside := false
		for _, p := range puts {
			inside = inside || i >= p.at && i < p.at+len(p.enc)
		}
		if !inside && got[i] != body[i] {
			t.Fatalf("byte %d changed", i)
		}
	}
}

// TestProperties: random texts with values in random forms, random
// filler and random cuts: the stream equals the whole transform, keeps the
// length, swaps every value and changes nothing else.
func TestProperties(t *testing.T) {
	s := testSet(t)
	names := s.Names()
	formNames := slices.Sorted(func(yield func(string) bool) {
		for f := range forms {
			if !yield(f) {
				return
			}
		}
	})
	runs := 100
	if testing.Short() {
		runs = 20
	}
	for run := range runs {
		r := rand.New(rand.NewPCG(uint64(run), 3))
		type seg struct {
			from, to int
			form     string
			pre, suf []byte
			name     string
			isFiller bool
		}
		var in []byte
		var segs []seg
		for range 1 + r.IntN(12) {
			filler := make([]byte, r.IntN(40))
			for i := range filler {
				filler[i] = byte(r.IntN(256))
			}
			segs = append(segs, seg{from: len(in), to: len(in) + len(filler), isFiller: true})
			in = append(in, filler...)
			name := names[r.IntN(len(names))]
			form := formNames[r.IntN(len(formNames))]
			pre, suf := edges[r.IntN(len(edges))], edges[r.IntN(len(edges))]
			if !jsonable(form, cat(pre, values[name], suf)) || !exact(form, values[name]) {
				form = "verbatim"
			}
			enc := forms[form](pre, values[name], suf)
			segs = append(segs, seg{from: len(in), to: len(in) + len(enc), form: form, pre: pre, suf: suf, name: name})
			in = append(in, enc...)
		}
		want, _ := s.Reverse(in)
		got, _ := stream(s, &chunks{t: in, cut: randomCuts(r, 64)}, false)
		if !bytes.Equal(got, want) {
			t.Fatalf("run %d: the stream differs from the whole transform", run)
		}
		for _, g := range segs {
			part := got[g.from:g.to]
			if g.isFiller {
				if !bytes.Equal(part, in[g.from:g.to]) {
					t.Fatalf("run %d: filler %q became %q", run, in[g.from:g.to], part)
				}
				continue
			}
			if d, err := decoders[g.form](string(part)); err != nil || !bytes.Equal(d, cat(g.pre, ph(s, g.name), g.suf)) {
				t.Fatalf("run %d: %s %s %q became %q", run, g.name, g.form, in[g.from:g.to], part)
			}
		}
		for name, v := range values {
			if l := leak(got, v); l != "" {
				t.Fatalf("run %d: %s left as %q", run, name, l)
			}
		}
		// And back: forward with every secret allowed restores every value.
		back, _ := s.Forward(got, names)
		for _, g := range segs {
			if g.isFiller {
				continue
			}
			if d, err := decoders[g.form](string(back[g.from:g.to])); err != nil || !bytes.Equal(d, cat(g.pre, values[g.name], g.suf)) {
				t.Fatalf("run %d: %s %s did not come back", run, g.name, g.form)
			}
		}
	}
}

// TestNested: of two values one inside the other, the longer is found
// where both are.
func TestNested(t *testing.T) {
	s, err := New(map[string][]byte{"SHORT": []byte("abcdefgh"), "LONG": []byte("abcdefghi")})
	if err != nil {
		t.Fatal(err)
	}
	out, use := s.Reverse([]byte("abcdefghi abcdefgh"))
	if want := string(ph(s, "LONG")) + " " + string(ph(s, "SHORT")); string(out) != want || len(use.Replaced) != 2 {
		t.Errorf("Reverse = %q %+v, want %q", out, use, want)
	}
}

func TestRedact(t *testing.T) {
	s := testSet(t)
	msg := "upstream said: invalid token " + string(values["GITHUB"]) + " (" + forms["std"](nil, values["SYMBOLS"], nil) + ")"
	got := s.RedactString(msg)
	want := "upstream said: invalid token " + string(ph(s, "GITHUB")) + " (" + forms["std"](nil, ph(s, "SYMBOLS"), nil) + ")"
	if got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

// TestEmpty: a set without secrets changes nothing.
func TestEmpty(t *testing.T) {
	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	in := sample(testSet(t))
	if out, _ := stream(s, bytes.NewReader(in), false); !bytes.Equal(out, in) {
		t.Error("an empty set changed a text")
	}
	if out, _ := s.Forward(in, nil); !bytes.Equal(out, in) {
		t.Error("an empty set changed a text")
	}
}
