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

// TestStrictComparisons: a comparison of two types is an error, not false
// (nor true for !=): the attack {"force": "true"} on a guard
// x.force != true must refuse the call, not pass it.
func TestStrictComparisons(t *testing.T) {
	for _, tc := range []struct {
		expr string
		x    map[string]any
		want bool
		err  string // "" for none
	}{
		{`x.force != true`, map[string]any{"force": "true"}, false, "compares a string with a bool"},
		{`x.force != true`, map[string]any{"force": false}, true, ""},
		{`x.force == true`, map[string]any{"force": 1}, false, "compares a number with a bool"},
		{`x.id == 2`, map[string]any{"id": 2.0}, true, ""}, // numbers are one type
		{`x.id != 2`, map[string]any{"id": int64(3)}, true, ""},
		{`x.owner != "victim"`, map[string]any{"owner": nil}, true, ""}, // null compares with anything
		{`x.owner in ["acme", "beta"]`, map[string]any{"owner": 1}, false, "compares a number with a string"},
		{`!(x.owner in ["root"])`, map[string]any{"owner": []any{"root"}}, false, "compares a list with a string"},
		{`x.owner in ["acme", "beta"]`, map[string]any{"owner": "beta"}, true, ""},
		{`x.tags == ["a"]`, map[string]any{"tags": []any{true}}, false, "compares a bool with a string"},
		{`x.o != {"k": "v"}`, map[string]any{"o": map[string]any{"k": false}}, false, "compares a bool with a string"},
		{`x.o == {"k": "v"}`, map[string]any{"o": map[string]any{"k": "v"}}, true, ""},
		{`x.n in {"1": "v"}`, map[string]any{"n": 1}, false, "compares a number with a string"},
		{`[x.a, x.b].exists(e, e == "admin")`, map[string]any{"a": "user", "b": "admin"}, true, ""},
		{`[x.a].all(e, e != "admin")`, map[string]any{"a": true}, false, "compares a bool with a string"},
	} {
		c, err := testEnv.Compile(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got, err := c.Holds(map[string]any{"x": tc.x})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s over %v: %v", tc.expr, tc.x, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s over %v: %v, %v; want an error with %q", tc.expr, tc.x, got, err, tc.err)
		case got != tc.want:
			t.Errorf("%s over %v: %v, want %v", tc.expr, tc.x, got, tc.want)
		}
	}
}
