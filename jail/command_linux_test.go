package jail

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// The command's process is born with every layer on, whichever way init
// starts it: the sandbox user's ids and no supplementary group, no
// capability in any set, no_new_privs, a seccomp filter.
func TestCommandCredentials(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", `grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs|Seccomp):' /proc/self/status`)
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	r, err := Run(context.Background(), s)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("run: %v %+v\n%s", err, r, out.String())
	}
	want := "Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t\n" +
		"CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n" +
		"CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n"
	if got := strings.ReplaceAll(out.String(), "Groups:\t \n", "Groups:\t\n"); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}

// Init starts the command from a thread of its own that drops, for itself,
// what the command must not have; that thread ends with the command's start,
// so that no thread of init is left with the command's restrictions. (The
// command polls: the thread may still be on its way out when it looks.)
func TestInitKeepsNoRestrictedThread(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	s := spec("/bin/sh", "-c", `for i in $(seq 50); do
		grep -q '^NoNewPrivs:.0' /proc/1/task/*/status && ! grep -q '^NoNewPrivs:.1' /proc/1/task/*/status && { echo clean; exit 0; }
		sleep 0.1
	done; grep -H -E '^(Uid|CapEff|NoNewPrivs|Seccomp):' /proc/1/task/*/status`)
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	r, err := Run(context.Background(), s)
	if err != nil || r.ExitCode != 0 || out.String() != "clean\n" {
		t.Fatalf("run: %v %+v\n%s", err, r, out.String())
	}
}
