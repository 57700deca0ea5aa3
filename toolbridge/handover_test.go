package toolbridge

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A reload's bridge takes over the servers that did not change, their
// processes running, and starts anew the one that did; the old bridge's
// Close stops only what it kept.
func TestHandOver(t *testing.T) {
	old := newBridge(t, Options{Servers: map[string]Server{"same": goServer(t), "changed": goServer(t)}})
	os1 := old.NewSession()
	started(t, os1, "same")
	started(t, os1, "changed")
	samePID := pid(t, os1, "same")
	changedPID := pid(t, os1, "changed")

	keep := func(name string) bool { return name == "same" }
	// A bridge of a reload that was not taken leaves the shared server
	// running, for the old bridge.
	refused := newBridge(t, Options{Servers: map[string]Server{"same": goServer(t)}, From: old, Keep: keep})
	if got := pid(t, refused.NewSession(), "same"); got != samePID {
		t.Errorf("the unchanged server's pid = %d through the new bridge, want %d (shared)", got, samePID)
	}
	refused.Close()
	if got := pid(t, os1, "same"); got != samePID {
		t.Errorf("after an uncommitted bridge closed, the old bridge's server = %d, want %d", got, samePID)
	}

	b := newBridge(t, Options{Servers: map[string]Server{"same": goServer(t), "changed": goServer(t, "MORE", "1")},
		From: old, Keep: keep})
	b.Commit()
	ns := b.NewSession()
	started(t, ns, "changed")
	if got := pid(t, ns, "same"); got != samePID {
		t.Errorf("the unchanged server's pid = %d after the reload, want %d (kept)", got, samePID)
	}
	if got := pid(t, ns, "changed"); got == changedPID {
		t.Errorf("the changed server kept its process %d", got)
	}
	// The old bridge still serves an execution that began under it.
	if got := pid(t, os1, "changed"); got != changedPID {
		t.Errorf("the old bridge's changed server = %d, want %d until it closes", got, changedPID)
	}

	old.Close()
	waitGone(t, changedPID)
	if got := pid(t, ns, "same"); got != samePID {
		t.Errorf("after the old bridge closed, the kept server's pid = %d, want %d", got, samePID)
	}
	// Closed, the old bridge hands nothing over.
	if e := old.lend("same", func(string) bool { return true }); e != nil {
		t.Error("a closed bridge handed a server over")
	}
	b.Close()
	waitGone(t, samePID)
}

func pid(t *testing.T, s *Session, server string) int {
	t.Helper()
	out := mustCall(t, s, server, "pid", `{}`)
	n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(out), `"`))
	if err != nil {
		t.Fatalf("%s.pid = %q", server, out)
	}
	return n
}

// waitGone waits up to a minute for process pid to exit.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return
		}
	}
	t.Fatalf("server process %d still runs", pid)
}
