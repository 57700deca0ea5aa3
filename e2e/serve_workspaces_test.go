package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// Another user makes the workspaces' default root first, in the shared
// temporary directory: serve still starts, in a directory of its own
// ($XDG_RUNTIME_DIR's here), runs code there, leaves the planted one
// alone, and removes its own once it ends.
func TestAttackServePlantedWorkspacesRoot(t *testing.T) {
	requireRoot(t)
	tmp := testenv.PublicDir(t) // serve's TMPDIR, so that the default root is the test's alone
	planted := filepath.Join(tmp, "crucible-workspaces-0")
	if err := os.Mkdir(planted, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	xdg := filepath.Join(t.TempDir(), "xdg") // not t.TempDir itself, which is 0755
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(xdg, "crucible-workspaces")
	s := startStdioServe(t, "TMPDIR="+tmp, "XDG_RUNTIME_DIR="+xdg)
	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 6 * 7"}}}`)
	if l := s.await(t, `"id":2`); !strings.Contains(l, `"result":42`) {
		t.Errorf("execute: %s", l)
	}
	if len(mountsUnder(t, root)) == 0 {
		t.Errorf("the session's workspace is not mounted under serve's own root %s", root)
	}
	s.close(t) // serve exits, its workspaces with it
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("serve's own root outlives it: %v", err)
	}
	if entries, err := os.ReadDir(planted); err != nil || len(entries) != 0 {
		t.Errorf("the planted root: %d entries, %v", len(entries), err)
	}
}
