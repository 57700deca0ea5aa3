package child

import (
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/seccomp"
)

func TestFilterEncoding(t *testing.T) {
	prog := []seccomp.Instruction{{Code: 0x20, K: 4}, {Code: 0x15, Jt: 1, Jf: 2, K: 0xc000003e}, {Code: 0x06, K: 0x7fff0000}}
	back, err := DecodeFilter(EncodeFilter(prog))
	if err != nil || !slices.Equal(back, prog) {
		t.Fatalf("round trip changed the program (err %v)", err)
	}
	if _, err := DecodeFilter(make([]byte, 7)); err == nil {
		t.Fatal("a truncated program decoded")
	}
}

func TestLookPath(t *testing.T) {
	if p, err := lookPath("sh", "/nonexistent:/usr/bin:/bin"); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Errorf("sh = %q, %v", p, err)
	}
	if _, err := lookPath("no-such-command-here", "/usr/bin"); err == nil {
		t.Error("found a command that does not exist")
	}
	if _, err := lookPath("sh", ""); err == nil {
		t.Error("found a command with no PATH")
	}
	if p, _ := lookPath("./x", ""); p != "./x" {
		t.Errorf("a path with a slash is used as is, got %q", p)
	}
}

func TestEnvValue(t *testing.T) {
	env := []string{"PATH=/a", "PATHX=/x", "P=1", "PATH=/b"}
	if got := envValue(env, "PATH"); got != "/b" {
		t.Errorf("PATH = %q, want the last one, /b", got)
	}
	if got := envValue(env, "PAT"); got != "" {
		t.Errorf("PAT = %q, want none", got)
	}
}
