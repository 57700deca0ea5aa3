package seccomp

import "fmt"

// Classic BPF opcodes, the only ones the compiler emits (and [Run] accepts).
const (
	opLoadAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS (0x00 | 0x00 | 0x20)
	opAnd     = 0x54 // BPF_ALU | BPF_AND | BPF_K (0x04 | 0x50 | 0x00)
	opJump    = 0x05 // BPF_JMP | BPF_JA (0x05 | 0x00)
	opJeq     = 0x15 // BPF_JMP | BPF_JEQ | BPF_K (0x05 | 0x10 | 0x00)
	opJset    = 0x45 // BPF_JMP | BPF_JSET | BPF_K (0x05 | 0x40 | 0x00)
	opRet     = 0x06 // BPF_RET | BPF_K (0x06 | 0x00)

	maxInsns = 4096 // BPF_MAXINSNS
	maxJump  = 255  // conditional jump offsets are one byte
)

// Offsets into struct seccomp_data; an argument's low half comes first because
// the supported architectures are little-endian.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// x32Bit marks the x32 ABI's syscall numbers on x86_64. They reach the same
// kernel entry points with AUDIT_ARCH_X86_64, so only this bit tells them apart.
const x32Bit = 0x40000000

// Compile checks f and lays it out as a classic BPF program:
//
//	if arch != native: kill
//	if nr & x32Bit: kill
//	for each syscall with rules, in order of first appearance:
//	    if nr == syscall:
//	        for each rule: if every arg test passes: return rule's action
//	        return Default
//	return Default
//
// Every conditional jump stays within one syscall's block (an argument test
// that fails skips the rest of its rule, at most 37 instructions), except the
// one that skips a block, which becomes an unconditional jump when the block
// is too long for a one-byte offset.
func (f *Filter) Compile() ([]Instruction, error) {
	if nativeArch == 0 {
		return nil, fmt.Errorf("compiling seccomp filter: %w", ErrUnsupported)
	}
	def := f.Default
	if def == 0 {
		def = KillProcess
	}
	if err := def.validate(); err != nil {
		return nil, fmt.Errorf("compiling seccomp filter: default: %w", err)
	}

	var order []int32
	rules := make(map[int32][]Rule)
	for i, r := range f.Rules {
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("compiling seccomp filter: rule %d (syscall %d): %w", i, r.Syscall, err)
		}
		if _, ok := rules[r.Syscall]; !ok {
			order = append(order, r.Syscall)
		}
		rules[r.Syscall] = append(rules[r.Syscall], r)
	}

	prog := []Instruction{
		load(offArch),
		{Code: opJeq, K: nativeArch, Jt: 1},
		ret(KillProcess),
		load(offNr),
		{Code: opJset, K: x32Bit, Jf: 1},
		ret(KillProcess),
	}
	for _, nr := range order {
		block, err := compileSyscall(rules[nr], def)
		if err != nil {
			return nil, fmt.Errorf("compiling seccomp filter: syscall %d: %w", nr, err)
		}
		if len(block) <= maxJump {
			prog = append(prog, Instruction{Code: opJeq, K: uint32(nr), Jf: uint8(len(block))})
		} else {
			prog = append(prog,
				Instruction{Code: opJeq, K: uint32(nr), Jt: 1},
				Instruction{Code: opJump, K: uint32(len(block))})
		}
		prog = append(prog, block...)
		if len(prog) > maxInsns {
			break // reported below; stop before the program grows any further
		}
	}
	prog = append(prog, ret(def))
	if len(prog) > maxInsns {
		return nil, fmt.Errorf("compiling seccomp filter: more than %d instructions", maxInsns)
	}
	return prog, nil
}

// compileSyscall lays out the rules of one syscall. The block always ends in a
// return, so it never falls through into the next syscall's test with an
// argument, not the syscall number, in the accumulator.
func compileSyscall(rules []Rule, def Action) ([]Instruction, error) {
	var block []Instruction
	for i, r := range rules {
		if len(r.Args) == 0 {
			if i != len(rules)-1 {
				return nil, fmt.Errorf("rule %d matches any arguments, so the rules after it are never reached", i)
			}
			return append(block, ret(r.Action)), nil
		}
		block = append(block, compileRule(r)...)
	}
	return append(block, ret(def)), nil
}

// compileRule tests each argument half by half; any failed test jumps just
// past the rule's return, to the next rule.
func compileRule(r Rule) []Instruction {
	var insns []Instruction
	var fails []int // indexes of the jumps to patch
	for _, a := range r.Args {
		mask := a.Mask
		if a.Cmp == Eq {
			mask = ^uint64(0)
		}
		for half := range 2 {
			m, v := uint32(mask>>(32*half)), uint32(a.Value>>(32*half))
			if m == 0 {
				continue // validate made sure v is 0 too: always true
			}
			insns = append(insns, load(uint32(offArgs+8*a.Index+4*half)))
			if m != 0xffffffff {
				insns = append(insns, Instruction{Code: opAnd, K: m})
			}
			fails = append(fails, len(insns))
			insns = append(insns, Instruction{Code: opJeq, K: v})
		}
	}
	insns = append(insns, ret(r.Action))
	for _, i := range fails {
		insns[i].Jf = uint8(len(insns) - i - 1) // at most 6 args × 6 insns: fits
	}
	return insns
}

func (r Rule) validate() error {
	if r.Syscall < 0 || r.Syscall&x32Bit != 0 {
		return fmt.Errorf("syscall number out of range")
	}
	if err := r.Action.validate(); err != nil {
		return err
	}
	var seen [6]bool
	for _, a := range r.Args {
		if a.Index < 0 || a.Index >= len(seen) {
			return fmt.Errorf("argument index %d out of range 0..5", a.Index)
		}
		if seen[a.Index] {
			// Also bounds a rule's length, keeping its jumps short.
			return fmt.Errorf("argument %d tested twice", a.Index)
		}
		seen[a.Index] = true
		switch a.Cmp {
		case Eq:
		case MaskedEq:
			if a.Mask == 0 {
				return fmt.Errorf("argument %d: zero mask matches anything", a.Index)
			}
			if a.Value&^a.Mask != 0 {
				return fmt.Errorf("argument %d: value %#x has bits outside mask %#x, so it never matches", a.Index, a.Value, a.Mask)
			}
		default:
			return fmt.Errorf("argument %d: unknown comparison %d", a.Index, a.Cmp)
		}
	}
	return nil
}

func load(off uint32) Instruction { return Instruction{Code: opLoadAbs, K: off} }
func ret(a Action) Instruction    { return Instruction{Code: opRet, K: uint32(a)} }
