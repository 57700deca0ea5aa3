package toolargs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, json string }{
		{``, `{}`},
		{` null `, `{}`},
		{`{}`, `{}`},
		{` { "b" : 1 , "a" : [ true, false, null, "x" ] } `, `{"b":1,"a":[true,false,null,"x"]}`},
		{`{"n":-0,"f":1.50,"e":1e2,"x":2E-3,"z":-0.0,"big":1e21}`, `{"n":0,"f":1.5,"e":100.0,"x":0.002,"z":-0.0,"big":1e+21}`},
		{`{"max":9007199254740992,"min":-9007199254740992,"pow":1152921504606846976}`, `{"max":9007199254740992,"min":-9007199254740992,"pow":1152921504606846976}`},
		{`{"s":"\u0041\/\"\\\n\t\u0001é\ud83d\ude00"}`, "{\"s\":\"A/\\\"\\\\\\n\\t\\u0001é\U0001F600\"}"},
		{`{"o":{"a":{},"b":[]}}`, `{"o":{"a":{},"b":[]}}`},
	} {
		a, err := Parse([]byte(c.in))
		if err != nil {
			t.Errorf("Parse(%s): %v", c.in, err)
			continue
		}
		if got := string(a.JSON()); got != c.json {
			t.Errorf("Parse(%s).JSON() = %s, want %s", c.in, got, c.json)
		}
	}
}

// TestRefuses: each input is one that two decoders may read as two
// different values, or that is not one JSON object.
func TestRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"owner":"victim","owner":"acme"}`, `the key "owner" twice`},
		{`{"Owner":"victim","owner":"acme"}`, `the keys "Owner" and "owner", which differ only in case`},
		{`{"kind":"x","\u212aind":"evil"}`, `differ only in case`}, // the Kelvin sign folds to k
		{`{"o":{"a":1,"a":2}}`, `the key "a" twice`},
		{`{"id":9007199254740993}`, `the integer 9007199254740993, past 2^53`},
		{`{"id":-9223372036854775807}`, `past 2^53`},
		{`{"id":123456789012345678901234567890}`, `past 2^53`},
		{`{"f":1e400}`, `which no float can hold`},
		{`{"s":"\ud800"}`, `half of a surrogate pair`},
		{`{"s":"\udc00\ud800"}`, `half of a surrogate pair`},
		{`{"s":"\ud800\u0041"}`, `half of a surrogate pair`},
		{"{\"s\":\"\xff\"}", `not valid UTF-8`},
		{"{\"s\":\"\x01\"}", `control character`},
		{`{"s":"\x41"}`, `\x is not JSON`},
		{`[1]`, `must be a JSON object`},
		{`"x"`, `must be a JSON object`},
		{`{} {}`, `nothing after it`},
		{`{"a":01}`, `',' or '}' is missing`},
		{`{"a":1,}`, `a key (a string) is missing`},
		{`{"a":[1,]}`, `unexpected ']'`},
		{`{"a":+1}`, `unexpected '+'`},
		{`{"a":1e}`, `no digits in its exponent`},
		{`{"a":tru}`, `unexpected 't'`},
		{`{"a":"x`, `does not end`},
		{`{"a":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `}`, `deeper than 64`},
	} {
		_, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%.60s) = %v, want an error with %q", c.in, err, c.want)
		}
	}
}

func TestExact(t *testing.T) {
	for n, want := range map[int64]bool{
		1 << 53: true, 1<<53 + 1: false, 1<<53 + 2: true, -(1<<53 + 1): false,
		1 << 62: true, 1<<62 + 1<<10: true, 1<<62 + 1<<9: false, 1<<62 + 1: false, -1 << 63: true, 1<<63 - 1: false,
	} {
		if got := exact(n); got != want {
			t.Errorf("exact(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestMap(t *testing.T) {
	a, err := Parse([]byte(`{"n":3,"f":3.5,"l":[{"k":null}],"s":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": int64(3), "f": 3.5, "l": []any{map[string]any{"k": nil}}, "s": "x"}
	if got := a.Map(); !reflect.DeepEqual(got, want) {
		t.Errorf("Map() = %#v, want %#v", got, want)
	}
}

// FuzzParse: whatever Parse accepts, encoding/json reads as the same
// value, from the input and from JSON(); and JSON() parses to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":[1.5,"\u00e9",null,{"b":true}]}`, `{"a":"\ud83d\ude00"}`, `{"A":1,"a":2}`, `{"n":1e2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := Parse(in)
		if err != nil {
			return
		}
		out := a.JSON()
		b, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(JSON()) of %q: %v", out, err)
		}
		if again := b.JSON(); !bytes.Equal(again, out) {
			t.Fatalf("JSON() is not stable: %q, then %q", out, again)
		}
		var fromIn, fromOut any
		if len(bytes.TrimSpace(in)) == 0 {
			return
		}
		if err := json.Unmarshal(in, &fromIn); err != nil {
			t.Fatalf("encoding/json refuses %q, which Parse accepts: %v", in, err)
		}
		if err := json.Unmarshal(out, &fromOut); err != nil {
			t.Fatalf("encoding/json refuses %q: %v", out, err)
		}
		if fromIn == nil {
			fromIn = map[string]any{}
		}
		if !reflect.DeepEqual(fromIn, fromOut) {
			t.Fatalf("encoding/json reads %q as %v, and its JSON() %q as %v", in, fromIn, out, fromOut)
		}
	})
}

// The cost of decoding a call's arguments strictly and re-encoding them,
// against encoding/json's decoding into a map (what a rule's arguments
// cost before), in the same run: a typical call, and a 1 MiB one.
func BenchmarkParse(b *testing.B) {
	small := []byte(`{"owner": "acme", "repo": "crucible", "title": "A bug", "labels": ["bug", "p1"], "number": 42, "draft": false}`)
	big := []byte(`{"path": "/data/x.csv", "content": "` + strings.Repeat("a,b,c\\n", 1<<20/7) + `"}`)
	for _, c := range []struct {
		name string
		in   []byte
	}{{"small", small}, {"1MiB", big}} {
		b.Run(c.name+"/toolargs", func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				a, err := Parse(c.in)
				if err != nil {
					b.Fatal(err)
				}
				_ = a.JSON()
			}
		})
		b.Run(c.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				var m map[string]any
				if err := json.Unmarshal(c.in, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
