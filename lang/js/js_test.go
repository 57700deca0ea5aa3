package js

import (
	"regexp"
	"strings"
	"testing"
)

// safeName is the regexp it replaced, without compiling it at start-up.
func TestSafeName(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
	names := []string{"", "main.ts", "a", ".hidden", "-x", "_x", "x_y-z.1.js", "a b", "a/b", "é.ts", "x\n",
		strings.Repeat("a", 100), strings.Repeat("a", 101), "0" + strings.Repeat(".", 99)}
	for _, n := range names {
		if got, want := safeName(n), re.MatchString(n); got != want {
			t.Errorf("safeName(%q) = %v, want %v", n, got, want)
		}
	}
}

func FuzzSafeName(f *testing.F) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
	f.Add("main.ts")
	f.Fuzz(func(t *testing.T, n string) {
		if got, want := safeName(n), re.MatchString(n); got != want {
			t.Errorf("safeName(%q) = %v, want %v", n, got, want)
		}
	})
}
