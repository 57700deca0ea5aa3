package seccomp

import (
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
)

const (
	eperm  = syscall.Errno(1)
	enosys = syscall.Errno(38)
)

// testFilter exercises every kind of test the compiler emits.
var testFilter = &Filter{
	Default: Errno(enosys),
	Rules: []Rule{
		{Syscall: 1, Action: Allow},
		{Syscall: 2, Args: []Arg{{Index: 0, Cmp: Eq, Value: 1<<32 | 5}}, Action: Errno(eperm)},
		{Syscall: 2, Args: []Arg{{Index: 1, Cmp: MaskedEq, Mask: 0xf, Value: 3}}, Action: Notify},
		{Syscall: 3, Args: []Arg{
			{Index: 5, Cmp: MaskedEq, Mask: 0xffffffff, Value: 7},
			{Index: 2, Cmp: Eq, Value: 9},
		}, Action: KillProcess},
		{Syscall: 2, Action: Allow}, // rules for one syscall need not be adjacent
		{Syscall: 4, Args: []Arg{{Index: 3, Cmp: MaskedEq, Mask: 0xff00000000, Value: 0x4200000000}}, Action: Notify},
		{Syscall: 4, Args: []Arg{{Index: 4, Cmp: Eq, Value: 0}}, Action: Allow},
	},
}

func TestCompile(t *testing.T) {
	prog, err := testFilter.Compile()
	if err != nil {
		t.Fatal(err)
	}
	sys := func(nr int32, args ...uint64) Data {
		d := Data{Nr: nr, Arch: nativeArch}
		copy(d.Args[:], args)
		return d
	}
	tests := []struct {
		name string
		data Data
		want Action
	}{
		{"other arch", Data{Nr: 1, Arch: 0x40000003}, KillProcess},
		{"x32", sys(1 | x32Bit), KillProcess},
		{"negative nr", sys(-1), KillProcess},
		{"no args", sys(1), Allow},
		{"no args ignores args", sys(1, 1, 2, 3, 4, 5, 6), Allow},
		{"no rule", sys(0), Errno(enosys)},
		{"unknown nr", sys(999), Errno(enosys)},
		{"bit 31 only", Data{Nr: -0x80000000, Arch: nativeArch}, Errno(enosys)},
		{"eq both halves", sys(2, 1<<32|5), Errno(eperm)},
		{"eq low half only", sys(2, 5), Allow},
		{"eq other high half", sys(2, 2<<32|5), Allow},
		{"eq other low half", sys(2, 1<<32|6), Allow},
		{"masked eq", sys(2, 0, 0x13), Notify},
		{"masked eq high bits ignored", sys(2, 0, 0xffffffff_fffffff3), Notify},
		{"masked ne", sys(2, 0, 0x14), Allow},
		{"first rule wins", sys(2, 1<<32|5, 3), Errno(eperm)},
		{"and: both", sys(3, 0, 0, 9, 0, 0, 0xffff0000_00000007), KillProcess},
		{"and: first only", sys(3, 0, 0, 8, 0, 0, 7), Errno(enosys)},
		{"and: second only", sys(3, 0, 0, 9, 0, 0, 8), Errno(enosys)},
		{"and: eq high half", sys(3, 0, 0, 1<<32|9, 0, 0, 7), Errno(enosys)},
		{"high-half mask", sys(4, 0, 0, 0, 0xff_42_12345678), Notify},
		{"high-half mask miss", sys(4, 0, 0, 0, 0x43_00000000, 0), Allow},
		{"falls to default", sys(4, 0, 0, 0, 0, 1), Errno(enosys)},
	}
	for _, tt := range tests {
		got, err := Run(prog, tt.data)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
		} else if got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// eval is the meaning of a filter, written as plainly as possible, for the
// compiled program to be checked against.
func eval(f *Filter, d Data) Action {
	if d.Arch != nativeArch || d.Nr&x32Bit != 0 {
		return KillProcess
	}
next:
	for _, r := range f.Rules {
		if r.Syscall != d.Nr {
			continue
		}
		for _, a := range r.Args {
			mask := a.Mask
			if a.Cmp == Eq {
				mask = ^uint64(0)
			}
			if d.Args[a.Index]&mask != a.Value {
				continue next
			}
		}
		return r.Action
	}
	return f.Default
}

// TestCompileMatchesEval compares the program with eval on random syscalls,
// built from the filter's own numbers and values so that they often match,
// including a filter whose blocks are too long for one-byte jumps.
func TestCompileMatchesEval(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	long := &Filter{Default: Allow}
	for i := range 100 {
		long.Rules = append(long.Rules, Rule{Syscall: int32(i % 3), Args: []Arg{
			{Index: i % 6, Cmp: MaskedEq, Mask: 0xf0f0, Value: uint64(i%16) << 4},
			{Index: (i + 1) % 6, Cmp: Eq, Value: uint64(i) << 30},
		}, Action: Errno(syscall.Errno(i + 1))})
	}
	for _, f := range []*Filter{testFilter, long} {
		prog, err := f.Compile()
		if err != nil {
			t.Fatal(err)
		}
		if f == long && !slices.ContainsFunc(prog, func(in Instruction) bool { return in.Code == opJump }) {
			t.Fatal("long filter compiled without a long jump; make it longer")
		}
		var values []uint64
		for _, r := range f.Rules {
			for _, a := range r.Args {
				values = append(values, a.Value, a.Value|^a.Mask, a.Value^1<<40)
			}
		}
		for range 20000 {
			d := Data{Arch: nativeArch, Nr: int32(rng.IntN(6))}
			for i := range d.Args {
				if rng.IntN(4) == 0 {
					d.Args[i] = rng.Uint64()
				} else {
					d.Args[i] = values[rng.IntN(len(values))]
				}
			}
			got, err := Run(prog, d)
			if want := eval(f, d); err != nil || got != want {
				t.Fatalf("%+v: got %v, %v; want %v", d, got, err, want)
			}
		}
	}
}

func TestCompileErrors(t *testing.T) {
	allow := func(args ...Arg) Rule { return Rule{Syscall: 1, Args: args, Action: Allow} }
	tests := []struct {
		name  string
		rules []Rule
		def   Action
		want  string
	}{
		{"index", []Rule{allow(Arg{Index: 6})}, 0, "out of range"},
		{"negative index", []Rule{allow(Arg{Index: -1})}, 0, "out of range"},
		{"twice", []Rule{allow(Arg{Index: 1}, Arg{Index: 1, Value: 2})}, 0, "tested twice"},
		{"zero mask", []Rule{allow(Arg{Cmp: MaskedEq})}, 0, "zero mask"},
		{"value outside mask", []Rule{allow(Arg{Cmp: MaskedEq, Mask: 0xf, Value: 0x10})}, 0, "never matches"},
		{"cmp", []Rule{allow(Arg{Cmp: 7})}, 0, "unknown comparison"},
		{"no action", []Rule{{Syscall: 1}}, 0, "no action"},
		{"errno 0", []Rule{{Syscall: 1, Action: Errno(0)}}, 0, "out of range"},
		{"errno too big", []Rule{{Syscall: 1, Action: Errno(4096)}}, 0, "out of range"},
		{"unknown action", []Rule{{Syscall: 1, Action: 0x30000}}, 0, "unknown action"},
		{"bad default", nil, 0x30000, "default"},
		{"unreachable", []Rule{allow(), allow(Arg{})}, 0, "never reached"},
		{"negative nr", []Rule{{Syscall: -1, Action: Allow}}, 0, "out of range"},
		{"x32 nr", []Rule{{Syscall: x32Bit | 1, Action: Allow}}, 0, "out of range"},
	}
	var many []Rule
	for i := range maxInsns {
		many = append(many, Rule{Syscall: int32(i), Action: Allow})
	}
	tests = append(tests, struct {
		name  string
		rules []Rule
		def   Action
		want  string
	}{"too long", many, 0, "more than 4096 instructions"})

	for _, tt := range tests {
		_, err := (&Filter{Rules: tt.rules, Default: tt.def}).Compile()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestZeroDefaultKills(t *testing.T) {
	prog, err := (&Filter{}).Compile()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := Run(prog, Data{Arch: nativeArch}); got != KillProcess {
		t.Errorf("got %v, want kill-process", got)
	}
}

func TestRunRejects(t *testing.T) {
	tests := []struct {
		name string
		prog []Instruction
	}{
		{"empty", nil},
		{"opcode", []Instruction{{Code: 0x07}}}, // BPF_MISC
		{"misaligned load", []Instruction{load(2), ret(Allow)}},
		{"load past end", []Instruction{load(64), ret(Allow)}},
		{"jump past end", []Instruction{{Code: opJump, K: 1}, ret(Allow)}},
		{"runs off end", []Instruction{load(0)}},
	}
	for _, tt := range tests {
		if got, err := Run(tt.prog, Data{}); err == nil {
			t.Errorf("%s: got %v, want an error", tt.name, got)
		}
	}
}

func TestActionString(t *testing.T) {
	for a, want := range map[Action]string{
		Allow: "allow", Notify: "notify", KillProcess: "kill-process", Errno(eperm): "errno(1)", 0x30000: "action(0x30000)",
	} {
		if got := a.String(); got != want {
			t.Errorf("%#x: got %q, want %q", uint32(a), got, want)
		}
	}
}
