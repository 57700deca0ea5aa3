//go:build linux && !amd64

package jail

import (
	"strconv"

	"github.com/cruciblehq/crucible/seccomp"
)

// SyscallFilter has no table for this architecture yet: the jail refuses to
// run (fail closed) rather than run without a filter.
func SyscallFilter() *seccomp.Filter { return nil }

// compiledFilter: none without a policy; see filterProgram.
const compiledFilter = ""

func syscallName(nr int32) string { return "syscall " + strconv.Itoa(int(nr)) }
