// Package bytecode compiles the engine's own scripts (js/*.js) to the
// QuickJS bytecode that the engine embeds and evaluates at every start.
// It is for go generate (internal/jsc) and the test that keeps the two in
// step; the engine itself only reads the result.
package bytecode

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// Compile compiles one global script, without the text of its functions
// (QuickJS's JS_STRIP_SOURCE): their line numbers stay, for stack traces,
// and their toString says "[native code]", as a browser's built-ins do.
// The text was three quarters of the Web API's bytecode (218 KB; 60 KB
// stripped), which every engine read and kept: stripped, an engine starts
// ~0.25 ms sooner, with less memory.
func Compile(src string) ([]byte, error) {
	// The library's own compile says what is wrong with a script, which
	// the raw calls below would have to dig out; a script it takes, they
	// take too.
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	_, err = vm.Compile(src, quickjs.EvalGlobal)
	_ = vm.Close()
	if err != nil {
		return nil, err
	}

	tls := libc.NewTLS()
	defer tls.Close()
	rt := lib.XJS_NewRuntime(tls)
	if rt == 0 {
		return nil, errors.New("bytecode: no QuickJS runtime")
	}
	defer lib.XJS_FreeRuntime(tls, rt)
	lib.XJS_SetStripInfo(tls, rt, lib.MJS_STRIP_SOURCE)
	ctx := lib.XJS_NewContext(tls, rt)
	if ctx == 0 {
		return nil, errors.New("bytecode: no QuickJS context")
	}
	defer lib.XJS_FreeContext(tls, ctx)

	text, err := libc.CString(src)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(tls, text)
	name, err := libc.CString("<eval>") // the name quickjs.VM gives a script
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(tls, name)
	fn := lib.XJS_Eval(tls, ctx, text, libc.Tsize_t(len(src)), name, lib.MJS_EVAL_TYPE_GLOBAL|lib.MJS_EVAL_FLAG_COMPILE_ONLY)
	defer lib.XFreeValue(tls, ctx, fn)

	const sizeT = bits.UintSize / 8 // a size_t
	size := tls.Alloc(sizeT)
	defer tls.Free(sizeT)
	p := lib.XJS_WriteObject(tls, ctx, size, fn, lib.MJS_WRITE_OBJ_BYTECODE)
	if p == 0 {
		return nil, errors.New("bytecode: QuickJS could not write the script")
	}
	defer lib.Xjs_free(tls, ctx, p)
	n := libc.GoBytes(size, sizeT)
	if sizeT == 8 {
		return libc.GoBytes(p, int(binary.NativeEndian.Uint64(n))), nil
	}
	return libc.GoBytes(p, int(binary.NativeEndian.Uint32(n))), nil
}
