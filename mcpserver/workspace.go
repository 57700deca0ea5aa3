package mcpserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// errNoWorkspace is the one answer for a handle that does not exist, has
// expired or belongs to another client: the caller cannot tell which, so
// a guessed handle says nothing.
var errNoWorkspace = errors.New("unknown or expired workspace handle; omit workspace to get a fresh one")

// workspaces are the directories that executions run in at /workspace,
// each named by a random handle that the result gives back, bound to the
// client that made it, and deleted when idle for ttl (or when the MCP
// session that owns it ends).
type workspaces struct {
	root string // a directory of our own, mode 0700
	ttl  time.Duration
	size int64 // bytes one workspace may hold
	now  func() time.Time

	mu     sync.Mutex
	byID   map[string]*workspace
	closed bool

	dropping sync.WaitGroup // dropLater's deletions, which close waits for
}

type workspace struct {
	handle string
	dir    string
	owner  string    // the client's key
	used   time.Time // when it was last handed out or released
	busy   int       // executions running in it
	gone   bool      // removed: deleted once its executions end
}

func newWorkspaces(root string, ttl time.Duration, size int64) *workspaces {
	return &workspaces{root: root, ttl: ttl, size: size, now: time.Now, byID: map[string]*workspace{}}
}

// maxPerClient bounds the workspaces one client holds: past it, its least
// recently used idle one is deleted to make room.
const maxPerClient = 32

// errUnbounded says that a workspace cannot be bounded here.
var errUnbounded = errors.New("workspaces: each is a tmpfs of bounded size (sandbox.tmp_size), which only root can mount: run crucible serve as root")

// create makes an empty workspace for owner, in use (release it).
func (w *workspaces) create(owner string) (*workspace, error) {
	dir, err := w.mkdir()
	if err != nil {
		return nil, err
	}
	return w.adopt(dir, owner)
}

// mkdir makes a directory for a workspace, not yet anyone's (a warm jail's,
// until an execution takes it): a tmpfs of w.size, since a workspace
// outlives its execution and the jail's limits with it (a program could
// fill the host's disk, one file of the file size limit after another).
func (w *workspaces) mkdir() (string, error) {
	dir, err := os.MkdirTemp(w.root, "dir")
	if err != nil {
		return "", err
	}
	// The sandbox refuses a root-owned workspace (the code would write as
	// root): it is nobody's. Its parent, ours and 0700, keeps every other
	// user of the host out, so it may be open to all, for jails whose
	// writes cannot be idmapped to its owner.
	opts := fmt.Sprintf("size=%d,mode=0777,uid=%d,gid=%d", w.size, nobody, nobody)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		_ = os.Remove(dir)
		if errors.Is(err, unix.EPERM) {
			return "", errUnbounded
		}
		return "", fmt.Errorf("workspaces: mounting a tmpfs: %w", err)
	}
	return dir, nil
}

// drop deletes a workspace's directory, whatever it holds.
func drop(dir string) {
	_ = unix.Unmount(dir, unix.MNT_DETACH)
	_ = os.RemoveAll(dir) // only the mount point is left
}

// dropLater deletes a workspace's directory off the caller's path: an
// unmount takes ~0.3 ms, which an execute's answer need not wait for (a
// client past maxPerClient, as a stateless one soon is, evicts one at each
// call). Its handle is gone already; close waits for the deletion.
func (w *workspaces) dropLater(dir string) {
	w.dropping.Add(1)
	go func() {
		defer w.dropping.Done()
		drop(dir)
	}()
}

// adopt makes dir, from mkdir, owner's workspace, in use (release it). The
// handle is random: the directory's name is not (it never leaves the host).
func (w *workspaces) adopt(dir, owner string) (*workspace, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := "ws_" + hex.EncodeToString(b)
	ws := &workspace{handle: h, dir: dir, owner: owner, used: w.now(), busy: 1}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		drop(dir)
		return nil, errClosed
	}
	evicted := w.evict(owner)
	w.byID[h] = ws
	w.mu.Unlock()
	if evicted != "" {
		w.dropLater(evicted)
	}
	return ws, nil
}

// evict makes room for one more of owner's workspaces: past maxPerClient,
// its least recently used idle one goes. It returns the directory to drop.
func (w *workspaces) evict(owner string) string {
	n := 0
	var lru *workspace
	for _, ws := range w.byID {
		if ws.owner != owner {
			continue
		}
		n++
		if ws.busy == 0 && (lru == nil || ws.used.Before(lru.used)) {
			lru = ws
		}
	}
	if n < maxPerClient || lru == nil {
		return ""
	}
	delete(w.byID, lru.handle)
	return lru.dir
}

// nobody is the owner of a workspace's directory.
const nobody = 65534

var errClosed = errors.New("the server is shutting down")

// acquire hands out owner's workspace h for one execution (release it).
func (w *workspaces) acquire(h, owner string) (*workspace, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.byID[h]
	if ws == nil || ws.owner != owner || ws.gone || w.expired(ws) {
		return nil, errNoWorkspace
	}
	ws.busy++
	ws.used = w.now()
	return ws, nil
}

// release ends one execution's use of ws: its idle time starts again, or,
// if it was removed meanwhile, it is deleted now that nothing uses it.
func (w *workspaces) release(ws *workspace) {
	w.mu.Lock()
	ws.busy--
	ws.used = w.now()
	del := ws.gone && ws.busy == 0 && w.byID[ws.handle] == ws
	if del {
		delete(w.byID, ws.handle)
	}
	w.mu.Unlock()
	if del {
		w.dropLater(ws.dir)
	}
}

func (w *workspaces) expired(ws *workspace) bool {
	return ws.busy == 0 && (ws.gone || w.now().Sub(ws.used) >= w.ttl)
}

// remove deletes workspace h now, or as soon as its executions end.
func (w *workspaces) remove(h string) {
	w.mu.Lock()
	ws := w.byID[h]
	if ws == nil {
		w.mu.Unlock()
		return
	}
	if ws.busy > 0 {
		// Its executions are being cancelled: the last to end deletes it.
		ws.gone = true
		w.mu.Unlock()
		return
	}
	delete(w.byID, h)
	w.mu.Unlock()
	drop(ws.dir)
}

// sweep deletes the workspaces idle for ttl.
func (w *workspaces) sweep() {
	w.mu.Lock()
	var gone []string
	for h, ws := range w.byID {
		if w.expired(ws) {
			delete(w.byID, h)
			gone = append(gone, ws.dir)
		}
	}
	w.mu.Unlock()
	for _, d := range gone {
		drop(d)
	}
}

// dir is the directory of workspace h, "" if there is none.
func (w *workspaces) dir(h string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ws := w.byID[h]; ws != nil {
		return ws.dir
	}
	return ""
}

// count is the number of live workspaces.
func (w *workspaces) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byID)
}

// close deletes every workspace: the server is stopping, and its
// executions have ended.
func (w *workspaces) close() {
	w.mu.Lock()
	w.closed = true
	all := w.byID
	w.byID = map[string]*workspace{}
	w.mu.Unlock()
	for _, ws := range all {
		drop(ws.dir)
	}
	w.dropping.Wait()
}
