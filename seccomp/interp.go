package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Run evaluates prog on d as the kernel would and returns the action it
// chooses. It accepts only the instructions [Filter.Compile] emits, and fails
// on anything else, on a misaligned or out-of-range load, and on a program
// that runs off its end, so tests and fuzzers can check policies without
// installing them.
func Run(prog []Instruction, d Data) (Action, error) {
	var buf [64]byte // struct seccomp_data, little-endian
	binary.LittleEndian.PutUint32(buf[offNr:], uint32(d.Nr))
	binary.LittleEndian.PutUint32(buf[offArch:], d.Arch)
	binary.LittleEndian.PutUint64(buf[8:], d.InstructionPointer)
	for i, a := range d.Args {
		binary.LittleEndian.PutUint64(buf[offArgs+8*i:], a)
	}

	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case opLoadAbs:
			if in.K%4 != 0 || in.K > uint32(len(buf)-4) {
				return 0, fmt.Errorf("instruction %d: bad load offset %d", pc, in.K)
			}
			acc = binary.LittleEndian.Uint32(buf[in.K:])
		case opAnd:
			acc &= in.K
		case opJump:
			pc += int(in.K)
		case opJeq:
			pc += branch(acc == in.K, in)
		case opJset:
			pc += branch(acc&in.K != 0, in)
		case opRet:
			return Action(in.K), nil
		default:
			return 0, fmt.Errorf("instruction %d: unsupported opcode %#x", pc, in.Code)
		}
	}
	return 0, errors.New("program ran off its end")
}

func branch(cond bool, in Instruction) int {
	if cond {
		return int(in.Jt)
	}
	return int(in.Jf)
}
