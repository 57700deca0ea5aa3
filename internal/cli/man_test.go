package cli

import (
	"strings"
	"testing"
)

// The man page carries every command's flags as -h prints them, and no
// line that roff would read as a request.
func TestManPage(t *testing.T) {
	page := ManPage("2026-11-27")
	for _, want := range []string{".TH CRUCIBLE 1 \"2026-11-27\"", `.SS "crucible exec"`, `.SS "crucible serve"`, `.SS "crucible doctor"`,
		"-allow-degraded", "-apparmor", "-http", "-workspace"} {
		if !strings.Contains(page, want) {
			t.Errorf("the man page lacks %q", want)
		}
	}
	requests := map[string]bool{".TH": true, ".SH": true, ".SS": true, ".nf": true, ".fi": true, ".PP": true, ".TP": true, ".I": true}
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, ".") && !requests[strings.Fields(line)[0]] {
			t.Errorf("a line roff reads as an unknown request: %q", line)
		}
	}
	if got := roffLines("a\\b\n.x\n'y\n"); got != "a\\eb\n\\&.x\n\\&'y\n" {
		t.Errorf("roffLines: %q", got)
	}
}
