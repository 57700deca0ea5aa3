package workspace

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/userns"
)

// childEnv makes the test binary a server that opens a Set under the root
// it names, makes workspaces, says so and waits to be killed.
const childEnv = "WORKSPACE_TEST_CHILD_ROOT"

func TestMain(m *testing.M) {
	if root := os.Getenv(childEnv); root != "" {
		s, err := Open(Options{Root: root, Size: 1 << 20})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		for range 3 {
			if _, err := s.Create("c"); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
		}
		fmt.Println("ready")
		time.Sleep(time.Minute) // killed long before
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// open is a Set under a root of the test's, closed at its end.
func open(t *testing.T, o Options) *Set {
	t.Helper()
	testenv.NeedRoot(t, "mounts a tmpfs per workspace")
	if o.Root == "" {
		o.Root = filepath.Join(t.TempDir(), "root")
	}
	o.Size = max(o.Size, 1<<20)
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// mountsBelow counts the mounts at or below dir.
func mountsBelow(dir string) int { return len(mountsUnder(dir)) }

// A workspace holds at most its size, and a client at most PerClient
// workspaces: past it, its least recently used idle one is deleted.
func TestBounds(t *testing.T) {
	s := open(t, Options{PerClient: 4})
	first, err := s.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	s.Release(first)
	err = os.WriteFile(filepath.Join(first.Dir, "big"), make([]byte, 2<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("2 MiB into a 1 MiB workspace: %v", err)
	}
	other, err := s.Create("b")
	if err != nil {
		t.Fatal(err)
	}
	s.Release(other)
	var last *Workspace
	for range 4 {
		ws, err := s.Create("a")
		if err != nil {
			t.Fatal(err)
		}
		s.Release(ws)
		last = ws
	}
	if _, err := s.Acquire(first.Handle, "a"); !errors.Is(err, ErrUnknown) {
		t.Errorf("the least recently used workspace was kept past the bound: %v", err)
	}
	// Deleted off the caller's path, soon.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(first.Dir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(end) {
			t.Error("its directory is still there")
			break
		}
	}
	for _, ws := range []*Workspace{last, other} {
		got, err := s.Acquire(ws.Handle, ws.Owner())
		if err != nil {
			t.Errorf("%s's workspace is gone: %v", ws.Owner(), err)
			continue
		}
		s.Release(got)
	}
	if _, err := s.Acquire(other.Handle, "a"); !errors.Is(err, ErrUnknown) {
		t.Errorf("client a acquired b's workspace: %v", err)
	}
	if n := s.Count(); n != 5 {
		t.Errorf("%d workspaces; want 5", n)
	}
}

// waitSpares waits until s has made n spares.
func waitSpares(t *testing.T, s *Set, n int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		got := len(s.spares)
		s.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d spares after 10 s, want %d", got, n)
		}
	}
}

// The server's total bounds every workspace it holds, spares included:
// past it, a clear error, never another mount. One client's flood does not
// evict another client's workspaces to make room. Create takes a spare,
// made ahead, and another is made for the next.
func TestTotal(t *testing.T) {
	s := open(t, Options{Total: 3, Spare: 1})
	waitSpares(t, s, 1)
	spare := s.spares[0]
	a, err := s.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	if a.Dir != spare {
		t.Errorf("Create made %s, not the spare %s", a.Dir, spare)
	}
	s.Release(a)
	waitSpares(t, s, 1) // a, and a spare
	if _, err := s.Create("b"); err != nil {
		t.Fatal(err)
	}
	waitSpares(t, s, 1) // a, b, a spare: the total
	if _, err := s.Create("b"); err != nil {
		t.Fatal(err)
	}
	waitSpares(t, s, 0) // no room for one
	before := mountsBelow(s.inst.dir)
	if _, err := s.Create("b"); !errors.Is(err, ErrFull) {
		t.Fatalf("past the total: %v; want ErrFull", err)
	}
	if n := mountsBelow(s.inst.dir); n != before {
		t.Errorf("%d mounts after the refusal, %d before", n, before)
	}
	if got, err := s.Acquire(a.Handle, "a"); err != nil {
		t.Errorf("a's workspace went for b's flood: %v", err)
	} else {
		s.Release(got)
	}
	s.Remove(a.Handle)
	ws, err := s.Create("b")
	if err != nil {
		t.Fatalf("after a workspace was removed: %v", err)
	}
	s.Release(ws)
}

// Idle workspaces expire; one in use does not, and a removed one goes once
// its execution ends.
func TestExpiry(t *testing.T) {
	s := open(t, Options{TTL: time.Hour})
	now := time.Now()
	s.now = func() time.Time { return now }
	idle, _ := s.Create("a")
	s.Release(idle)
	busy, _ := s.Create("a")
	now = now.Add(2 * time.Hour)
	s.Sweep()
	if _, err := s.Acquire(idle.Handle, "a"); !errors.Is(err, ErrUnknown) {
		t.Errorf("an idle workspace outlived its TTL: %v", err)
	}
	if s.Dir(busy.Handle) == "" {
		t.Error("a workspace in use expired")
	}
	s.Remove(busy.Handle)
	if s.Dir(busy.Handle) == "" {
		t.Error("a workspace in use was deleted under its execution")
	}
	s.Release(busy)
	s.bg.Wait()
	if _, err := os.Stat(busy.Dir); !os.IsNotExist(err) {
		t.Errorf("a removed workspace is still there once released: %v", err)
	}
}

// A server killed with its workspaces mounted leaves them; the next server
// to open the root reclaims them, mounts and directories, and Close of the
// last server leaves nothing, not even the root.
func TestKilledServerSwept(t *testing.T) {
	testenv.NeedRoot(t, "mounts a tmpfs per workspace")
	root := filepath.Join(t.TempDir(), "root")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+root)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("the child server: %q", line)
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	if n := mountsBelow(root); n != 3 {
		t.Fatalf("%d mounts under the root after the kill; want the child's 3", n)
	}
	t.Cleanup(func() { removeAll(root) }) // if the sweep fails

	s, err := Open(Options{Root: root, Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if n := mountsBelow(root); n != 0 {
		t.Errorf("%d mounts under the root after the next server opened it", n)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("the root holds %d entries; want the new server's instance alone", len(entries))
	}
	if _, err := s.Create("c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Errorf("the root outlives its last server: %v", err)
	}
}

// Two live servers share the root: neither sweeps the other's workspaces,
// and the root goes with the last of them.
func TestLiveServersKept(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	a := open(t, Options{Root: root})
	ws, err := a.Create("c")
	if err != nil {
		t.Fatal(err)
	}
	b := open(t, Options{Root: root})
	if _, err := os.Stat(ws.Dir); err != nil || mountsBelow(ws.Dir) != 1 {
		t.Fatalf("a live server's workspace was swept by the next: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws.Dir); err != nil {
		t.Fatalf("closing one server removed another's workspace: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Errorf("the root outlives its last server: %v", err)
	}
}

// The root is in a shared temporary directory: a link planted at its name,
// or a directory that others may write, is refused, not used.
func TestAttackPlantedRoot(t *testing.T) {
	testenv.NeedRoot(t, "mounts a tmpfs per workspace")
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(Options{Root: link, Size: 1 << 20}); err == nil {
		_ = s.Close()
		t.Error("a link at the root's name was followed")
	}
	open4all := filepath.Join(dir, "open")
	if err := os.Mkdir(open4all, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open4all, 0o777); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(Options{Root: open4all, Size: 1 << 20}); err == nil || !strings.Contains(err.Error(), "not this user's alone") {
		if s != nil {
			_ = s.Close()
		}
		t.Errorf("a root that everyone may write was used: %v", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("the link's target got %d entries", len(entries))
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/t\011x\134`: "/t\tx\\", `/short\04`: `/short\04`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q; want %q", in, got, want)
		}
	}
}

// TotalBytes bounds the workspaces by what they may hold together: with
// room for two of their size, a third is refused, whatever Total says.
func TestTotalBytes(t *testing.T) {
	s := open(t, Options{Total: 100, Size: 1 << 20, TotalBytes: 2<<20 + 1})
	for _, c := range []string{"a", "b"} {
		ws, err := s.Create(c)
		if err != nil {
			t.Fatal(err)
		}
		s.Release(ws)
	}
	if _, err := s.Create("c"); !errors.Is(err, ErrFull) {
		t.Fatalf("a third 1 MiB workspace in 2 MiB: %v; want ErrFull", err)
	}
	if _, err := Open(Options{Root: filepath.Join(t.TempDir(), "r"), Size: 2 << 20, TotalBytes: 1 << 20}); err == nil {
		t.Error("a set in which not one workspace fits opened")
	}
}

// Anyone may make the default root's name first in the shared temporary
// directory: a directory of another user's, or a link. The server does
// not stop: it uses a directory of its own (ours, 0700), says which on
// the operator's log, leaves the planted one alone, and removes its own
// once closed. A root the operator chose that is planted is refused.
func TestAttackPlantedDefaultRoot(t *testing.T) {
	testenv.NeedRoot(t, "mounts a tmpfs per workspace, chowns to another user")
	planted := func(t *testing.T, p string) { // another user's
		t.Helper()
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// plant makes the default root's name, and the XDG and run
		// directories (fresh names under tmp), and returns the root
		// wanted ("" for a fresh one in TMPDIR).
		plant func(t *testing.T, dflt, xdg, run string) string
	}{
		{"another user's directory", func(t *testing.T, dflt, xdg, run string) string {
			planted(t, dflt)
			if err := os.Mkdir(xdg, 0o700); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(xdg, "crucible-workspaces")
		}},
		{"a link, no XDG_RUNTIME_DIR", func(t *testing.T, dflt, xdg, run string) string {
			if err := os.Symlink(t.TempDir(), dflt); err != nil {
				t.Fatal(err)
			}
			t.Setenv("XDG_RUNTIME_DIR", "")
			return filepath.Join(run, "workspaces")
		}},
		{"XDG_RUNTIME_DIR and the run directory another user's too", func(t *testing.T, dflt, xdg, run string) string {
			planted(t, dflt)
			planted(t, xdg)
			planted(t, run)
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			dflt := filepath.Join(tmp, "crucible-workspaces-"+strconv.Itoa(userns.HostUID()))
			xdg := filepath.Join(t.TempDir(), "xdg")
			t.Setenv("XDG_RUNTIME_DIR", xdg)
			oldRun := runDir
			runDir = filepath.Join(t.TempDir(), "crucible")
			t.Cleanup(func() { runDir = oldRun })
			want := tc.plant(t, dflt, xdg, runDir)
			before, _ := os.Lstat(dflt)

			var log strings.Builder
			s, err := Open(Options{Size: 1 << 20, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatalf("a planted default root stopped the server: %v", err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = s.Close()
				}
			})
			root := filepath.Dir(s.Path())
			if want == "" {
				if filepath.Dir(root) != tmp || !strings.HasPrefix(filepath.Base(root), filepath.Base(dflt)+"-") {
					t.Errorf("the root is %s; want a fresh %s-* in TMPDIR", root, dflt)
				}
			} else if root != want {
				t.Errorf("the root is %s; want %s", root, want)
			}
			ours := []string{root}
			if filepath.Dir(root) == runDir {
				ours = append(ours, runDir)
			}
			for _, d := range ours {
				var st syscall.Stat_t
				if err := syscall.Lstat(d, &st); err != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o777 != 0o700 || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
					t.Errorf("%s: owner %d, mode %o (%v); want a directory of ours, 0700", d, st.Uid, st.Mode, err)
				}
			}
			if !strings.Contains(log.String(), dflt) || !strings.Contains(log.String(), root) {
				t.Errorf("the log does not name both the refused root and the one used: %q", log.String())
			}
			if _, err := s.Create("c"); err != nil {
				t.Fatal(err)
			}
			if after, _ := os.Lstat(dflt); after == nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Error("the planted root was changed")
			} else if after.IsDir() {
				if entries, _ := os.ReadDir(dflt); len(entries) != 0 {
					t.Errorf("the planted root got %d entries", len(entries))
				}
			}
			closed = true
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(root); !os.IsNotExist(err) {
				t.Errorf("the fallback root outlives its server: %v", err)
			}

			// Named by the operator, the planted root is refused.
			if s, err := Open(Options{Root: dflt, Size: 1 << 20}); !errors.Is(err, errNotOurs) {
				if err == nil {
					_ = s.Close()
				}
				t.Errorf("a planted root set explicitly: %v; want it refused", err)
			}
		})
	}
}
