package cli

import (
	"go/build"
	"slices"
	"testing"
)

// One door holds: the front end reaches the jail through package sandbox
// only, as every other call of it does.
func TestNoJailImport(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Imports, "github.com/cruciblehq/crucible/jail") {
		t.Error("package cli imports package jail: go through package sandbox")
	}
}
