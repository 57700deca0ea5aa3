// Package stack grows a goroutine's stack before its work needs it.
//
// A goroutine starts with a 2 KiB stack, and each time a call finds too
// little room the runtime copies the whole stack into one twice the size:
// every frame is adjusted, each through lookups in the binary's tables.
// The jail's init and the engine's worker are fresh processes of a large
// binary whose tables are cold, and a copy on the way to the 16-128 KiB
// their goroutines reach cost tens of microseconds there: stack growth was
// 4-6 % of each one's CPU. Growing a stack once, while it holds few frames,
// makes one cheap copy instead of several of deeper stacks.
//
// This package's init does it for the main goroutine of every process of
// a binary that links it, which runs every package's init and, in the
// jail's processes, all their work: it imports only runtime, so Go
// initializes it among the first packages (in import-path order among
// those ready), before any deep init. The pages of the larger stack are
// touched only as the stack fills; a stack shrinks again only in a garbage
// collection, which those processes make few of or none.
package stack

import "runtime"

// Main is the size this package's init grows the main goroutine's stack
// to: what the engine's worker reaches by the end of a small program.
const Main = 128 << 10

func init() { Grow(Main) }

// Grow makes the calling goroutine's stack at least about n bytes: 16, 32,
// 64 or 128 KiB, whichever is the smallest at least n. A stack of that size
// or more is left as it is.
func Grow(n int) {
	switch {
	case n <= 16<<10:
		frame[[12 << 10]byte](false)
	case n <= 32<<10:
		frame[[26 << 10]byte](false)
	case n <= 64<<10:
		frame[[56 << 10]byte](false)
	default:
		frame[[120 << 10]byte](false)
	}
}

// frame's frame holds an F, a little less than the size Grow wants, so that
// the runtime, which doubles a stack until the frame fits below what is in
// use, lands on that size (each F is a shape of its own: Go compiles frame
// for each, with a frame of that size). The F is declared only where it is
// never used (never is false), so nothing writes to it: the frame is
// reserved and none of its pages touched.
//
//go:noinline
func frame[F any](never bool) {
	if never {
		var b F
		runtime.KeepAlive(&b) // or the compiler drops b, and the frame with it
	}
}
