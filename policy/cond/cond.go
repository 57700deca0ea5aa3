// Package cond is the operator's conditions: CEL expressions
// (cel.dev/cel-go) over variables that the caller declares, type-checked
// and their cost estimated when they load, bounded when they run, and
// failing closed: an evaluation that errs is an error, never a yes; so
// is a comparison of two values of different types.
//
// It knows nothing of tools or HTTP: package callrule declares a call's
// variables, package httprule a request's.
package cond

import (
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
)

// CostLimit bounds what one condition may cost, estimated when it loads and
// counted when it runs (in CEL's units: about one per operation, and one
// per byte a string function reads).
const CostLimit = 1_000_000

// maxInput is the size the estimate takes for any variable's string, list
// or map: no larger than the bounds on what conditions read (a call's
// arguments, a request's head) can make it.
const maxInput = 1 << 20

// Env is the variables conditions may use. Its CEL environment is made on
// first use: a process whose configuration has no conditions never pays
// for it.
type Env struct {
	env func() *cel.Env
}

// NewEnv declares the variables, each a name and a CEL type.
func NewEnv(vars ...cel.EnvOption) *Env {
	return &Env{env: sync.OnceValue(func() *cel.Env {
		e, err := cel.NewEnv(vars...)
		if err != nil {
			panic(err) // the declarations are fixed in the caller's code
		}
		return e
	})}
}

// Cond is a condition ready to evaluate.
type Cond struct {
	Expr string // as written
	prg  cel.Program
}

// Error is a condition that does not load: at Column (1-based, 0 when
// unknown), what CEL says.
type Error struct {
	Column int
	Msg    string
}

func (e *Error) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("column %d: %s", e.Column, e.Msg)
	}
	return e.Msg
}

// Compile loads expr, a condition (an expression of type bool) over e's
// variables; its error is an *Error.
func (e *Env) Compile(expr string) (*Cond, error) {
	env := e.env()
	checked, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		err := &Error{Msg: iss.Err().Error()}
		if errs := iss.Errors(); len(errs) > 0 {
			err.Msg = errs[0].Message
			if loc := errs[0].Location; loc != nil && loc.Column() >= 0 {
				err.Column = loc.Column() + 1
			}
		}
		return nil, err
	}
	if !checked.OutputType().IsExactType(cel.BoolType) {
		return nil, &Error{Msg: "is a " + checked.OutputType().String() + ", not a condition (true or false)"}
	}
	est, err := env.EstimateCost(checked, inputSizes{})
	if err != nil {
		return nil, &Error{Msg: "its cost cannot be estimated: " + err.Error()}
	}
	if est.Max > CostLimit {
		return nil, &Error{Msg: fmt.Sprintf("may cost up to %d, more than the %d a condition may (loops over inputs up to 1 MiB add up)", est.Max, CostLimit)}
	}
	prg, err := env.Program(checked, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100), cel.CustomDecoratorV2(strict))
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	return &Cond{Expr: expr, prg: prg}, nil
}

// inputSizes sizes every string, list and map of the variables at most
// maxInput, which is what the estimate may assume of them.
type inputSizes struct{}

func (inputSizes) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if n.ComputedSize() != nil {
		return nil // a constant, or made of them: CEL knows its size
	}
	s := cost.RangedSizeEstimate(0, maxInput)
	return &s
}

func (inputSizes) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// Holds evaluates the condition over vars (each declared variable by
// name). An error (a field missing, a type that does not fit, the cost
// limit) is returned as such: the caller refuses.
func (c *Cond) Holds(vars map[string]any) (bool, error) {
	out, _, err := c.prg.Eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %v, not true or false", out.Value())
	}
	return b, nil
}
