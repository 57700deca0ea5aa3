package engine

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"
	"unicode/utf8"

	"modernc.org/quickjs"

	"github.com/cruciblehq/crucible/lang"
)

// hostPrefix marks the Go functions the prelude takes off the global object
// and keeps to itself.
const hostPrefix = "__crucible_"

// registerHost gives the prelude its Go functions. It takes them all before
// the program runs: the program never sees them.
func (r *Runtime) registerHost() error {
	start := time.Now()
	fns := map[string]quickjs.HostFunc{
		"write": func(a []any) (any, error) {
			w := r.o.Stdout
			if argInt(a, 0) == 2 {
				w = r.o.Stderr
			}
			_, _ = io.WriteString(w, argString(a, 1))
			return nil, nil
		},
		"stack": func(a []any) (any, error) {
			if r.prog == nil {
				return "", nil
			}
			return r.prog.mapStack(argString(a, 0)), nil
		},
		"now": func([]any) (any, error) {
			return float64(time.Since(start).Microseconds()) / 1000, nil
		},
		"random": func(a []any) (any, error) {
			n := argInt(a, 0)
			if n < 0 || n > 65536 {
				return nil, errors.New("at most 65536 random bytes at once")
			}
			b := make([]byte, n)
			_, _ = rand.Read(b)
			return latin1(b), nil
		},
		"uuid": func([]any) (any, error) { return uuid(), nil },
		"timer": func(a []any) (any, error) {
			ms := argFloat(a, 1)
			if ms != ms || ms < 0 { // NaN too
				ms = 0
			}
			if !r.timers.set(argInt(a, 0), time.Duration(min(ms, 1<<31)*float64(time.Millisecond))) {
				return nil, fmt.Errorf("more than %d timers pending", maxTimers)
			}
			return nil, nil
		},
		"cancel": func(a []any) (any, error) {
			r.timers.cancel(argInt(a, 0))
			return nil, nil
		},
		"settle": func(a []any) (any, error) {
			r.settle(a)
			return nil, nil
		},
		"url":        func(a []any) (any, error) { return urlCall(a), nil },
		"fetch":      r.startFetch,
		"fetchAbort": func(a []any) (any, error) { r.fetch.abort(argInt(a, 0)); return nil, nil },
		"body":       r.takeBody,
		"fs":         r.files.op,
		"tool":       r.startTool,
	}
	for name, f := range fns {
		if err := r.vm.RegisterHostFunc(hostPrefix+name, f); err != nil {
			return fmt.Errorf("registering %s: %w", name, err)
		}
	}
	return nil
}

// settle records how the program ended: settle(true, json) with its result
// (undefined for none), or settle(false, name, message, stack).
func (r *Runtime) settle(a []any) {
	if r.outcome != nil {
		return
	}
	if ok, _ := arg(a, 0).(bool); ok {
		r.outcome = resultOutcome(arg(a, 1))
		return
	}
	r.outcome = &lang.Outcome{Error: r.programError(argString(a, 1), argString(a, 2), argString(a, 3))}
}

// resultOutcome takes the program's result: JSON text from JSON.stringify,
// or undefined for none.
func resultOutcome(v any) *lang.Outcome {
	s, ok := v.(string)
	if !ok || !json.Valid([]byte(s)) {
		return &lang.Outcome{}
	}
	return &lang.Outcome{Result: json.RawMessage(s)}
}

// uuid is a random (version 4) UUID.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// latin1 carries bytes to JavaScript as a string of code units 0-255, the
// form the prelude turns into a Uint8Array.
func latin1(b []byte) string {
	out := make([]byte, 0, len(b)+len(b)/4)
	for _, c := range b {
		out = utf8.AppendRune(out, rune(c))
	}
	return string(out)
}

// fromLatin1 is latin1's inverse; a code unit over 255 is an error.
func fromLatin1(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for _, c := range s {
		if c > 255 {
			return nil, errors.New("binary data holds a code unit over 255")
		}
		out = append(out, byte(c))
	}
	return out, nil
}

func arg(a []any, i int) any {
	if i < len(a) {
		return a[i]
	}
	return nil
}

func argString(a []any, i int) string {
	s, _ := arg(a, i).(string)
	return s
}

func argInt(a []any, i int) int {
	switch v := arg(a, i).(type) {
	case int:
		return v
	case float64:
		if v >= -1<<53 && v <= 1<<53 {
			return int(v)
		}
	case *big.Int:
		if v.IsInt64() {
			return int(v.Int64())
		}
	}
	return 0
}

func argFloat(a []any, i int) float64 {
	switch v := arg(a, i).(type) {
	case int:
		return float64(v)
	case float64:
		return v
	}
	return 0
}

func argBool(a []any, i int) bool {
	b, _ := arg(a, i).(bool)
	return b
}
