// Package toolargs is a tool call's arguments decoded once, strictly, so
// that what a rule judges, what a human is shown and what the server gets
// are one value.
//
// A decoder that differs from the rule's reads other arguments than the
// rule judged: the last of two "owner" keys, the "Owner" that Go's
// encoding/json takes for "owner", the 9007199254740993 that a float
// reads as 9007199254740992. So Parse refuses what two decoders may read
// differently (a key twice, keys that differ only in case, an integer
// past 2^53 that a float cannot hold, text that is not UTF-8 or holds a
// lone surrogate), and the server is sent [Args.JSON], the value
// re-encoded, never the bytes the code wrote.
//
// It is not a general JSON library: it holds a call's arguments, and what
// the bridge needs of them.
package toolargs

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds how deeply arguments nest: more than any tool's schema
// asks for, and far less than would exhaust a stack.
const MaxDepth = 64

// maxExact is the largest integer every JSON decoder reads exactly,
// whether it reads numbers as floats or as integers: 2^53.
const maxExact = 1 << 53

// Args are a call's arguments: a JSON object.
type Args struct {
	obj Object
}

// A value is one of: nil (null), bool, string, int64 (a number written
// without a fraction or an exponent), float64 (one written with them),
// []any, or Object.

// Object is a JSON object, its members in the order they were written.
type Object []Member

// Member is one key of an object, and its value.
type Member struct {
	Key   string
	Value any
}

// Parse decodes raw, which must be one JSON object (empty or null is {}),
// strictly. Its error says what is wrong for the code to correct it.
func Parse(raw []byte) (*Args, error) {
	p := &parser{s: raw}
	p.space()
	if p.i == len(p.s) || p.literal("null") {
		p.space()
		if p.i < len(p.s) {
			return nil, p.errorf("the arguments must be one JSON object")
		}
		return &Args{}, nil
	}
	if p.s[p.i] != '{' {
		return nil, errors.New("the arguments must be a JSON object")
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, p.errorf("the arguments must be one JSON object, with nothing after it")
	}
	return &Args{obj: v.(Object)}, nil
}

// Members are the arguments' keys and values, in the order written.
func (a *Args) Members() Object { return a.obj }

// JSON is the arguments as the server gets them: compact, the keys in
// the order written, each number as the rule read it.
func (a *Args) JSON() []byte {
	var b []byte
	return Append(b, a.obj)
}

// Map is the arguments as a rule's condition reads them: objects as
// map[string]any, arrays as []any, and the other values as they are.
func (a *Args) Map() map[string]any { return plain(a.obj).(map[string]any) }

func plain(v any) any {
	switch v := v.(type) {
	case Object:
		m := make(map[string]any, len(v))
		for _, mb := range v {
			m[mb.Key] = plain(mb.Value)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = plain(x)
		}
		return out
	}
	return v
}

// Append appends v, a value as Parse makes them, to b as JSON.
func Append(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, v)
	case string:
		return AppendString(b, v)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case float64:
		n := len(b)
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
		if !strings.ContainsAny(string(b[n:]), ".e") {
			b = append(b, ".0"...) // still a number written with a fraction
		}
		return b
	case []any:
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = Append(b, x)
		}
		return append(b, ']')
	case Object:
		b = append(b, '{')
		for i, m := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(AppendString(b, m.Key), ':')
			b = Append(b, m.Value)
		}
		return append(b, '}')
	}
	panic(fmt.Sprintf("toolargs: %T is not a value", v))
}

// AppendString appends s, valid UTF-8, as a JSON string: only '"', '\'
// and control characters escaped.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		start = i + 1
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = fmt.Appendf(b, `\u%04x`, c)
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

type parser struct {
	s []byte
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("the arguments are not valid JSON at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *parser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *parser) literal(word string) bool {
	if strings.HasPrefix(string(p.s[p.i:]), word) {
		p.i += len(word)
		return true
	}
	return false
}

func (p *parser) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("the arguments nest deeper than %d levels", MaxDepth)
	}
	p.space()
	if p.i == len(p.s) {
		return nil, p.errorf("a value is missing")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.string()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case p.literal("true"):
		return true, nil
	case p.literal("false"):
		return false, nil
	case p.literal("null"):
		return nil, nil
	}
	return nil, p.errorf("unexpected %q", p.s[p.i])
}

func (p *parser) object(depth int) (any, error) {
	p.i++ // {
	obj := Object{}
	folded := map[string]string{} // each key by its case-folded form
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' && len(obj) == 0 {
			p.i++
			return obj, nil
		}
		if p.i == len(p.s) || p.s[p.i] != '"' {
			return nil, p.errorf("a key (a string) is missing")
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		f := fold(key)
		if other, ok := folded[f]; ok {
			if other == key {
				return nil, fmt.Errorf("the arguments have the key %s twice: servers differ on which one counts, so send it once", quote(key))
			}
			return nil, fmt.Errorf("the arguments have the keys %s and %s, which differ only in case: some servers read them as one key, so send one", quote(other), quote(key))
		}
		folded[f] = key
		p.space()
		if p.i == len(p.s) || p.s[p.i] != ':' {
			return nil, p.errorf("a ':' is missing after a key")
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj = append(obj, Member{Key: key, Value: v})
		p.space()
		switch {
		case p.i < len(p.s) && p.s[p.i] == ',':
			p.i++
		case p.i < len(p.s) && p.s[p.i] == '}':
			p.i++
			return obj, nil
		default:
			return nil, p.errorf("a ',' or '}' is missing")
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	p.i++ // [
	arr := []any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' && len(arr) == 0 {
			p.i++
			return arr, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.space()
		switch {
		case p.i < len(p.s) && p.s[p.i] == ',':
			p.i++
		case p.i < len(p.s) && p.s[p.i] == ']':
			p.i++
			return arr, nil
		default:
			return nil, p.errorf("a ',' or ']' is missing")
		}
	}
}

// string reads a JSON string. Text that is not UTF-8, and a surrogate
// escaped without its pair, are refused: decoders differ on them (Go's
// reads U+FFFD, Python's keeps the lone half).
func (p *parser) string() (string, error) {
	p.i++ // "
	var b strings.Builder
	for {
		// A run of bytes that stand for themselves: a character of
		// several bytes holds none below 0x80, so no run cuts one.
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= 0x20 && p.s[p.i] != '"' && p.s[p.i] != '\\' {
			p.i++
		}
		run := p.s[start:p.i]
		if !utf8.Valid(run) {
			p.i = start
			return "", p.errorf("a string is not valid UTF-8")
		}
		if p.i == len(p.s) {
			return "", p.errorf("a string does not end")
		}
		switch p.s[p.i] {
		case '"':
			p.i++
			if b.Len() == 0 {
				return string(run), nil
			}
			b.Write(run)
			return b.String(), nil
		case '\\':
			b.Write(run)
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
		default:
			return "", p.errorf("a string holds a control character that is not escaped")
		}
	}
}

// escape reads one escape, a surrogate pair as one.
func (p *parser) escape() (rune, error) {
	if p.i+1 >= len(p.s) {
		return 0, p.errorf("a string does not end")
	}
	c := p.s[p.i+1]
	p.i += 2
	if i := strings.IndexByte(`"\/bfnrt`, c); i >= 0 {
		return rune("\"\\/\b\f\n\r\t"[i]), nil
	}
	if c != 'u' {
		return 0, p.errorf("the escape \\%c is not JSON", c)
	}
	r, err := p.hex4()
	if err != nil || !utf16.IsSurrogate(r) {
		return r, err
	}
	if r < 0xdc00 && p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
		p.i += 2
		lo, err := p.hex4()
		if err != nil {
			return 0, err
		}
		if r := utf16.DecodeRune(r, lo); r != unicode.ReplacementChar {
			return r, nil
		}
	}
	return 0, p.errorf("a string escapes half of a surrogate pair without the other half")
}

func (p *parser) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		return 0, p.errorf("a \\u escape is cut short")
	}
	n, err := strconv.ParseUint(string(p.s[p.i:p.i+4]), 16, 16)
	if err != nil {
		return 0, p.errorf("a \\u escape has a digit that is not hexadecimal")
	}
	p.i += 4
	return rune(n), nil
}

// number reads a JSON number: an int64 if it is written without a
// fraction or an exponent, else a float64.
func (p *parser) number() (any, error) {
	start := p.i
	p.take("-")
	if !p.take("0") && !p.digits() {
		return nil, p.errorf("a number has no digits")
	}
	integer := true
	if p.take(".") {
		integer = false
		if !p.digits() {
			return nil, p.errorf("a number has no digits after its '.'")
		}
	}
	if p.take("e") || p.take("E") {
		integer = false
		if !p.take("+") {
			p.take("-")
		}
		if !p.digits() {
			return nil, p.errorf("a number has no digits in its exponent")
		}
	}
	text := string(p.s[start:p.i])
	if integer {
		n, err := strconv.ParseInt(text, 10, 64)
		if err == nil && exact(n) {
			return n, nil
		}
		return nil, fmt.Errorf("the arguments hold the integer %s, past 2^53: servers that read numbers as floats would read another number, so send it as a string", shorten(text))
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("the arguments hold the number %s, which no float can hold", shorten(text))
	}
	return f, nil
}

// exact says whether a float64 holds n exactly, as every decoder then
// reads it alike.
func exact(n int64) bool {
	if n >= -maxExact && n <= maxExact {
		return true
	}
	u := uint64(n)
	if n < 0 {
		u = -u
	}
	return u>>bits.TrailingZeros64(u) < maxExact
}

func (p *parser) take(c string) bool {
	if p.i < len(p.s) && p.s[p.i] == c[0] {
		p.i++
		return true
	}
	return false
}

func (p *parser) digits() bool {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// fold is s with each letter replaced by the least of those it folds to,
// so that two keys fold alike exactly when strings.EqualFold says they are
// equal (as Go's encoding/json matches a key to a field): "K" and the
// Kelvin sign "K" both fold to "K".
func fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// quote is a key as an error shows it: quoted, ASCII, and short.
func quote(key string) string { return strconv.QuoteToASCII(shorten(key)) }

func shorten(s string) string {
	if len(s) <= 40 {
		return s
	}
	return strings.ToValidUTF8(s[:40], "") + "..."
}
