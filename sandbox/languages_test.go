package sandbox

import (
	"slices"
	"testing"
)

// The languages a front end offers come from the registry, the default
// first and the warm ones before the rest; the pools are one per worker.
// (This package's tests register a language of their own, left out.)
func TestLanguages(t *testing.T) {
	ours := func(name string) bool { return slices.Contains([]string{"ts", "js", "py", "deno"}, name) }
	var got []Language
	for _, l := range Languages() {
		if ours(l.Name) {
			got = append(got, l)
		}
	}
	if want := []Language{{"ts", ".ts"}, {"js", ".js"}, {"py", ".py"}, {"deno", ""}}; !slices.Equal(got, want) {
		t.Errorf("Languages() = %v, want %v", got, want)
	}
	pools := slices.DeleteFunc(PoolLanguages(), func(l string) bool { return !ours(l) })
	if want := []string{"ts", "py"}; !slices.Equal(pools, want) {
		t.Errorf("PoolLanguages() = %q, want %q", pools, want)
	}
}
