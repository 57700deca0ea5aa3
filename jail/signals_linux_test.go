package jail

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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
	// HUP INT QUIT USR1 USR2 PIPE ALRM TERM XCPU XFSZ VTALRM, but those this
	// process ignores (run under nohup, say): init, which inherits them
	// ignored, sets them to their default, so that its command starts
	// with none ignored (see child.ignoreSignal).
	want := fmt.Sprintf("/proc/1/status:SigIgn:\t%016x\n/proc/self/status:SigIgn:\t0000000000000000\n", 0x3807a07&^ignored(t))
	if out.String() != want {
		t.Errorf("got\n%swant\n%s", out.String(), want)
	}
}

// ignored is this process's mask of ignored signals.
func ignored(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:\t"); ok {
			m, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatal("no SigIgn in /proc/self/status")
	return 0
}
