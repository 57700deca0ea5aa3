package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// A pool with PoolOptions.Workspace builds each jail with a host directory
// at /workspace: the execution's files are there afterwards, in the
// directory RunIn names, and the directories of jails that no execution
// took are discarded.
func TestPoolWorkspace(t *testing.T) {
	root := t.TempDir()
	var mu sync.Mutex
	made, discarded := 0, 0
	p := jsPool(t, PoolOptions{Size: 2, Workspace: func() (string, func(), error) {
		dir, err := os.MkdirTemp(root, "ws")
		if err != nil {
			return "", nil, err
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			return "", nil, err
		}
		mu.Lock()
		made++
		mu.Unlock()
		return dir, func() {
			mu.Lock()
			discarded++
			mu.Unlock()
			_ = os.RemoveAll(dir)
		}, nil
	}}, 0)
	res, dir, err := p.RunIn(context.Background(), []byte(`fs.writeTextFile("out.txt", "warm"); return 1`), "-")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("RunIn = %+v, %v", res, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	if err != nil || string(b) != "warm" {
		t.Fatalf("the workspace %s holds %q, %v", dir, b, err)
	}
	p.Close()
	mu.Lock()
	defer mu.Unlock()
	if made < 2 || discarded != made-1 {
		t.Errorf("%d workspaces made, %d discarded; want all but the one taken discarded", made, discarded)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the taken workspace was discarded: %v", err)
	}
}
