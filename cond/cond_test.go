package cond

import (
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
)

var testEnv = NewEnv(cel.Variable("x", cel.MapType(cel.StringType, cel.DynType)))

// A condition loads only if it is one (a bool), type-checks, and cannot
// cost past the limit; its errors say where.
func TestCompile(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`x.a == 1 &&`, "column 12: Syntax error"},
		{`x.a`, "is a dyn, not a condition"},
		{`y == 1`, "undeclared reference to 'y'"},
		{`x.l.all(a, x.l.all(b, x.l.all(c, a == b && b == c)))`, "more than the 1000000 a condition may"},
	} {
		_, err := testEnv.Compile(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.expr, err, c.want)
		}
	}
}

// Holds fails closed: a missing field or a value of another type is an
// error, never a yes.
func TestHolds(t *testing.T) {
	c, err := testEnv.Compile(`x.n < 5`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		x    map[string]any
		want bool
		err  bool
	}{
		{map[string]any{"n": 4}, true, false},
		{map[string]any{"n": 5}, false, false},
		{map[string]any{}, false, true},
		{map[string]any{"n": "4"}, false, true},
	} {
		got, err := c.Holds(map[string]any{"x": tc.x})
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("x = %v: %v, %v; want %v, error %v", tc.x, got, err, tc.want, tc.err)
		}
	}
}
