package mcpserver

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// A workspace holds at most its size, and a client at most maxPerClient
// workspaces: past it, its least recently used idle one is deleted.
func TestWorkspaceBounds(t *testing.T) {
	testenv.NeedRoot(t, "mounts a tmpfs per workspace")
	w := newWorkspaces(t.TempDir(), time.Hour, 1<<20)
	defer w.close()
	first, err := w.create("a")
	if err != nil {
		t.Fatal(err)
	}
	w.release(first)
	err = os.WriteFile(filepath.Join(first.dir, "big"), make([]byte, 2<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("2 MiB into a 1 MiB workspace: %v", err)
	}
	other, err := w.create("b")
	if err != nil {
		t.Fatal(err)
	}
	w.release(other)
	var last *workspace
	for range maxPerClient {
		ws, err := w.create("a")
		if err != nil {
			t.Fatal(err)
		}
		w.release(ws)
		last = ws
	}
	if _, err := w.acquire(first.handle, "a"); err == nil {
		t.Error("the least recently used workspace was kept past the bound")
	}
	// Deleted off the caller's path (dropLater), soon.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := os.Stat(first.dir)
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(end) {
			t.Errorf("its directory is still there: %v", err)
			break
		}
	}
	for _, ws := range []*workspace{last, other} {
		got, err := w.acquire(ws.handle, ws.owner)
		if err != nil {
			t.Errorf("%s's workspace is gone: %v", ws.owner, err)
			continue
		}
		w.release(got)
	}
	if n := w.count(); n != maxPerClient+1 {
		t.Errorf("%d workspaces; want %d", n, maxPerClient+1)
	}
}
