package jail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/violation"
)

// Ended gets the command's outcome before the jail is torn down, whole: the
// exit code, every byte of output (a background process that holds the
// output open is killed with the jail, and Ended waits for that), the
// denied syscalls. Run then returns the same outcome, once the jail's
// cgroup is gone.
func TestEnded(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", `unshare -U true 2>/dev/null; echo out; echo err >&2; sleep 1000 & exit 3`)
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	calls := 0
	var early *Result
	var cgroupsThen []string
	s.Ended = func(r *Result, err error) {
		calls++
		if err != nil {
			t.Errorf("Ended: %v", err)
			return
		}
		early = r
		cgroupsThen = jailCgroups()
		if out.String() != "out\n" || errb.String() != "err\n" {
			t.Errorf("at Ended, output %q and %q; want all of it", out.String(), errb.String())
		}
	}
	r, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || r != early {
		t.Fatalf("Ended called %d times, with %p; Run returned %p", calls, early, r)
	}
	if r.ExitCode != 3 || !slices.ContainsFunc(r.Violations, func(v violation.Violation) bool { return v.Syscall == "unshare" }) {
		t.Errorf("result %+v; want exit 3 and the unshare violation", r)
	}
	if len(cgroupsThen) == 0 {
		t.Error("the jail's cgroup was gone when Ended was called: it waited for the teardown")
	}
	if left := jailCgroups(); len(left) != 0 {
		t.Errorf("cgroups left after Run: %q", left)
	}
}

// A jail that cannot start ends with Run's error, through Ended too.
func TestEndedSetupError(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/true")
	s.ReadOnly = []string{"/nonexistent/crucible-test"}
	var got error
	s.Ended = func(_ *Result, err error) { got = err }
	_, err := Run(context.Background(), s)
	var se *SetupError
	if !errors.As(err, &se) || got != err {
		t.Fatalf("Run: %v; Ended: %v; want the same SetupError", err, got)
	}
	s = spec("/bin/true")
	s.Pids = 1
	s.Ended = func(_ *Result, err error) { got = err }
	if _, err := Run(context.Background(), s); err == nil || got != err {
		t.Fatalf("Run: %v; Ended: %v; want the same error", err, got)
	}
}

// jailCgroups are the cgroups of this process's jails.
func jailCgroups() []string {
	var found []string
	for depth := 0; depth <= 5; depth++ {
		m, _ := filepath.Glob("/sys/fs/cgroup" + string(bytes.Repeat([]byte("/*"), depth)) + fmt.Sprintf("/crucible-%d-*", os.Getpid()))
		found = append(found, m...)
	}
	return found
}
