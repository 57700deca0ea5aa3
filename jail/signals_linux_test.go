package jail

import (
	"bytes"
	"context"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// The jail's init ignores the terminating signals (the command cannot end
// its own jail with a made-up exit code); the command starts with every
// disposition at its default, as from a shell, inheriting none of init's.
func TestSignalDispositions(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", `grep SigIgn /proc/1/status /proc/self/status`)
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	r, err := Run(context.Background(), s)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("run: %v %+v\n%s", err, r, out.String())
	}
	// HUP INT QUIT USR1 USR2 PIPE ALRM TERM XCPU XFSZ VTALRM
	want := "/proc/1/status:SigIgn:\t0000000003807a07\n/proc/self/status:SigIgn:\t0000000000000000\n"
	if out.String() != want {
		t.Errorf("got\n%swant\n%s", out.String(), want)
	}
}
