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

// Wait returns the command's outcome before the jail is torn down, whole:
// the exit code, every byte of output (a background process that holds
// the output open is killed with the jail, and Wait waits for that), the
// denied syscalls. Close then returns the same outcome, once the jail's
// cgroup is gone.
func TestWait(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", `unshare -U true 2>/dev/null; echo out; echo err >&2; sleep 1000 & exit 3`)
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	j := startBegun(t, s, nil)
	early, err := j.Wait()
	if err != nil {
		t.Errorf("Wait: %v", err)
	}
	cgroupsThen := jailCgroups()
	if out.String() != "out\n" || errb.String() != "err\n" {
		t.Errorf("at Wait, output %q and %q; want all of it", out.String(), errb.String())
	}
	r, err := j.Close()
	if err != nil {
		t.Fatal(err)
	}
	if r != early {
		t.Fatalf("Wait returned %p; Close %p", early, r)
	}
	if r.ExitCode != 3 || !slices.ContainsFunc(r.Violations, func(v violation.Violation) bool { return v.Syscall == "unshare" }) {
		t.Errorf("result %+v; want exit 3 and the unshare violation", r)
	}
	if len(cgroupsThen) == 0 {
		t.Error("the jail's cgroup was gone when Wait returned: it waited for the teardown")
	}
	if left := jailCgroups(); len(left) != 0 {
		t.Errorf("cgroups left after Close: %q", left)
	}
}

// A jail that cannot start ends with the same error from Wait and Close,
// or from Start.
func TestWaitSetupError(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/true")
	s.ReadOnly = []string{"/nonexistent/crucible-test"}
	waitErr, err := waitClose(s)
	var se *SetupError
	if !errors.As(err, &se) || waitErr != err {
		t.Fatalf("Close: %v; Wait: %v; want the same SetupError", err, waitErr)
	}
	s = spec("/bin/true")
	s.Pids = 1
	if waitErr, err := waitClose(s); err == nil || waitErr != err {
		t.Fatalf("Close: %v; Wait: %v; want the same error", err, waitErr)
	}
}

// waitClose starts s, and returns Wait's error and Close's; both are
// Start's, if it fails.
func waitClose(s *Spec) (waitErr, closeErr error) {
	j, err := Start(context.Background(), s)
	if err != nil {
		return err, err
	}
	j.Begin()
	_, waitErr = j.Wait()
	_, closeErr = j.Close()
	return waitErr, closeErr
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
