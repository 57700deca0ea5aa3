package cond

import (
	"errors"
	"fmt"

	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// CEL's ==, != and in compare values of any two types, and say false (or,
// for !=, true) when the types differ: args.force != true holds for
// {"force": "true"}, which a server may read as true. A condition is the
// operator's guard, so a comparison of two types is an error instead, and
// the call is refused. Numbers are one type (JSON has one kind of
// number), and null compares with anything (a value that is absent).

// strict replaces the comparisons of a program's plan with strictCall.
func strict(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	if call, ok := i.(interpreter.InterpretableCall); ok {
		switch call.Function() {
		case operators.Equals, operators.NotEquals, operators.In:
			return &strictCall{InterpretableCall: call}, nil
		}
	}
	return i, nil
}

// strictCall is a comparison that errs when its two sides differ in type.
type strictCall struct{ interpreter.InterpretableCall }

func (c *strictCall) Eval(a interpreter.Activation) ref.Val {
	return interpreter.EvalActivation(a, c.Exec)
}

func (c *strictCall) Exec(f *interpreter.ExecutionFrame) ref.Val {
	args := c.Args()
	l := args[0].Exec(f)
	if types.IsUnknownOrError(l) {
		return l
	}
	r := args[1].Exec(f)
	if types.IsUnknownOrError(r) {
		return r
	}
	var res ref.Val
	switch c.Function() {
	case operators.Equals, operators.NotEquals:
		if err := sameType(l, r, 0); err != nil {
			return types.WrapErr(err)
		}
		res = types.Equal(l, r)
		if c.Function() == operators.NotEquals {
			res = types.Bool(res != types.True)
		}
	default: // in
		container, ok := r.(traits.Container)
		if !ok {
			return types.MaybeNoSuchOverloadErr(r)
		}
		if err := within(l, r); err != nil {
			return types.WrapErr(err)
		}
		res = container.Contains(l)
	}
	if costs := f.CostTracker(); costs != nil {
		costs.EvalBinary(f, c.ID(), c, l, r, res)
	}
	return res
}

// within checks that x has the type of the elements of the list, or the
// keys of the map, that in looks for it in.
func within(x, container ref.Val) error {
	it, ok := container.(traits.Iterable)
	if !ok {
		return nil
	}
	for i := it.Iterator(); i.HasNext() == types.True; {
		if err := sameType(x, i.Next(), 0); err != nil {
			return err
		}
	}
	return nil
}

// maxNesting bounds how deeply sameType follows lists and maps.
const maxNesting = 100

// sameType says why a and b cannot be compared, or nil; lists of one
// length and maps are compared element by element.
func sameType(a, b ref.Val, depth int) error {
	ka, kb := kind(a), kind(b)
	switch {
	case ka == "null" || kb == "null":
		return nil
	case ka != kb:
		return fmt.Errorf("the condition compares %s with %s: an argument has another type than the condition expects", article(ka), article(kb))
	case depth > maxNesting:
		return errors.New("the condition compares values nested too deeply")
	}
	switch a := a.(type) {
	case traits.Lister:
		bl := b.(traits.Lister)
		if a.Size() != bl.Size() {
			return nil
		}
		for i, j := a.Iterator(), bl.Iterator(); i.HasNext() == types.True && j.HasNext() == types.True; {
			if err := sameType(i.Next(), j.Next(), depth+1); err != nil {
				return err
			}
		}
	case traits.Mapper:
		bm := b.(traits.Mapper)
		for i := a.Iterator(); i.HasNext() == types.True; {
			k := i.Next()
			if v, ok := bm.Find(k); ok {
				if err := sameType(a.Get(k), v, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func kind(v ref.Val) string {
	switch v.Type() {
	case types.IntType, types.UintType, types.DoubleType:
		return "number"
	case types.NullType:
		return "null"
	case types.StringType:
		return "string"
	case types.BoolType:
		return "bool"
	case types.ListType:
		return "list"
	case types.MapType:
		return "map"
	}
	return v.Type().TypeName()
}

func article(kind string) string {
	switch kind {
	case "number", "string", "bool", "list", "map":
		return "a " + kind
	}
	return kind
}
