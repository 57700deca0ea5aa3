package jail

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// lateScript tries /workspace before its work arrives (on stdin) and after:
// through its old working directory, the directory the workspace covers,
// and through the path.
const lateScript = `
ls -A /workspace | sed 's/^/before: /'
(echo early > /workspace/early) 2>/dev/null && echo early-written
mkdir /workspace/d 2>/dev/null && echo early-mkdir
echo waiting
read job
(echo stale > stale) 2>/dev/null && echo stale-written
cd /workspace || exit 9
echo "$job" > late && echo late-written
ls -A /workspace | sed 's/^/after: /'
stat -c 'uid %u' late
`

// A workspace bound late is the command's, read-write, idmapped as at the
// start, once it is bound; before, /workspace is an empty read-only
// directory, and what the command wrote or held there reaches nothing.
func TestLateWorkspace(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec("/bin/sh", "-c", lateScript)
	var out syncBuffer
	var errb bytes.Buffer
	s.StdinPipe, s.Stdout, s.Stderr = true, &out, &errb
	if j, _ := startAsync(t, spec("/bin/true")); j.Bind(dir) == nil {
		t.Error("Bind into a jail without a late workspace succeeded")
	}
	s.Late = true
	j, done := startAsync(t, s)
	j.Begin()
	w := stdinOf(t, j)
	out.waitFor(t, "waiting\n")
	if err := j.Bind(dir); err != nil {
		t.Fatal(err)
	}
	if err := j.Bind(t.TempDir()); !errors.Is(err, errNotRunning) {
		t.Errorf("a second Bind: %v, want errNotRunning", err)
	}
	if _, err := w.WriteString("job-1\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := <-done
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("%v %+v stderr %q stdout %q", r.err, r.res, errb.String(), out.String())
	}
	got := out.String()
	for _, bad := range []string{"before:", "early-", "stale-written", "after: early", "after: d\n", "after: stale"} {
		if strings.Contains(got, bad) {
			t.Errorf("output has %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"late-written", "after: late\n", "after: mine\n", "uid 1000\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "late"))
	if err != nil || string(b) != "job-1\n" {
		t.Errorf("the host's late = %q, %v", b, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, "late"), &st); err != nil || st.Uid != 0 {
		t.Errorf("the host's late belongs to uid %d (%v), want the workspace's owner, 0", st.Uid, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("the workspace holds %v, want mine and late", ents)
	}
	if err := j.Bind(dir); !errors.Is(err, errNotRunning) {
		t.Errorf("Bind once the jail is over: %v, want errNotRunning", err)
	}
}

// A workspace that cannot be bound (not a directory, a symlink) is a
// SetupError of its own layer, and the jail runs on, with nothing there.
func TestLateWorkspaceRefused(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := spec("/bin/sh", "-c", "read x; cd /workspace; touch f 2>/dev/null && echo wrote")
	var out bytes.Buffer
	s.StdinPipe, s.Stdout = true, &out
	s.Late = true
	j, done := startAsync(t, s)
	j.Begin()
	w := stdinOf(t, j)
	var se *SetupError
	if err := j.Bind(link); !errors.As(err, &se) || se.Layer != "workspace" || strings.Contains(se.Error(), real) {
		t.Errorf("Bind of a symlink: %v, want a SetupError of layer workspace without the path", err)
	}
	w.Close()
	if r := <-done; r.err != nil || strings.Contains(out.String(), "wrote") {
		t.Errorf("%v, output %q: want the write refused", r.err, out.String())
	}
}
