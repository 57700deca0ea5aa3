package jail

import (
	"bytes"
	"testing"
)

// The jails run compiledFilter, not SyscallFilter: a policy changed without
// `go generate ./jail` would not reach them.
func TestCompiledFilterIsCurrent(t *testing.T) {
	want, err := CompileFilter()
	if err != nil {
		t.Fatal(err)
	}
	got, err := filterProgram()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("compiledFilter is not SyscallFilter's program: run go generate ./jail")
	}
}
