// Package workspace holds the directories that executions of `crucible
// serve` run in at /workspace: each a tmpfs of a fixed size, named by a
// random handle, bound to the client that made it, deleted when idle for
// its TTL. A client holds a bounded number of them, and so does the
// server.
//
// The workspaces of one server live under a directory of its own (an
// instance) inside a root shared by every server of this user, which the
// instance holds locked while it lives. A server that was killed cannot
// unmount its workspaces; the next one to open the root sweeps every
// instance that nobody holds, mounts and all.
//
// It knows nothing of MCP, jails or the config file.
package workspace

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Errors a caller branches on or shows. None names a host path.
var (
	// ErrUnknown is the one answer for a handle that does not exist, has
	// expired or belongs to another client: the caller cannot tell which,
	// so a guessed handle says nothing.
	ErrUnknown = errors.New("unknown or expired workspace handle; omit workspace to get a fresh one")
	// ErrClosed refuses work once Close has begun.
	ErrClosed = errors.New("the server is shutting down")
	// ErrUnbounded says that a workspace cannot be bounded here.
	ErrUnbounded = errors.New("workspaces: each is a tmpfs of bounded size (sandbox.tmp_size), which only root can mount: run crucible serve as root")
	// ErrFull says that the server holds as many workspaces as it may.
	ErrFull = errors.New("the server holds as many workspaces as it may (serve.max_workspaces): try again once some have expired, or pass back a workspace handle you hold")
)

// Options configure a Set. The zero value of each field but Size means
// its default.
type Options struct {
	// Root is the directory that every server's instance lives in;
	// default crucible-workspaces-UID in the temporary directory.
	Root string
	// Size is the bytes one workspace may hold (its tmpfs's size).
	Size int64
	// TTL is how long an idle workspace lives; default 30 minutes.
	TTL time.Duration
	// PerClient bounds the workspaces one client holds: past it, its least
	// recently used idle one is deleted. Default 32.
	PerClient int
	// Total bounds the workspaces of the server, warm jails' included:
	// past it, Create and Blank fail with ErrFull. Default 256.
	Total int
	// Owner is the uid and gid that own each workspace's root; default
	// nobody (65534): the sandbox refuses a root-owned workspace, since its
	// code would write as root.
	Owner int
}

// Set is one server's workspaces. It is safe for concurrent use.
type Set struct {
	o    Options
	inst *instance
	now  func() time.Time

	mu     sync.Mutex
	byID   map[string]*Workspace
	blanks int // directories made and not yet anyone's (warm jails')
	closed bool

	dropping sync.WaitGroup // dropLater's deletions, which Close waits for
}

// Workspace is one directory, in use while an execution holds it.
type Workspace struct {
	Handle string // random: what the client passes back
	Dir    string // its host directory; never shown to the model

	owner string    // the client's key
	used  time.Time // when it was last handed out or released
	busy  int       // executions running in it
	gone  bool      // removed: deleted once its executions end
}

// Owner is the client that Workspace belongs to.
func (ws *Workspace) Owner() string { return ws.owner }

// Open makes this server's instance under o.Root, first sweeping the
// instances of servers that are gone.
func Open(o Options) (*Set, error) {
	if o.Size <= 0 {
		return nil, errors.New("workspace: no size")
	}
	if o.Root == "" {
		o.Root = filepath.Join(os.TempDir(), "crucible-workspaces-"+strconv.Itoa(os.Geteuid()))
	}
	o.TTL = cmp.Or(o.TTL, 30*time.Minute)
	o.PerClient = cmp.Or(o.PerClient, 32)
	o.Total = cmp.Or(o.Total, 256)
	o.Owner = cmp.Or(o.Owner, nobody)
	inst, err := openInstance(o.Root)
	if err != nil {
		return nil, err
	}
	return &Set{o: o, inst: inst, now: time.Now, byID: map[string]*Workspace{}}, nil
}

// nobody is the default owner of a workspace's directory.
const nobody = 65534

// TTL is how long an idle workspace lives.
func (s *Set) TTL() time.Duration { return s.o.TTL }

// Create makes an empty workspace for client, in use (Release it).
func (s *Set) Create(client string) (*Workspace, error) {
	dir, _, err := s.Blank()
	if err != nil {
		return nil, err
	}
	return s.Adopt(dir, client)
}

// Blank makes a workspace's directory that is nobody's yet (a warm jail's,
// until an execution takes it with Adopt), and the func that deletes it if
// none does.
func (s *Set) Blank() (dir string, drop func(), err error) {
	s.mu.Lock()
	switch {
	case s.closed:
		err = ErrClosed
	case len(s.byID)+s.blanks >= s.o.Total:
		err = ErrFull
	default:
		s.blanks++ // its place is taken while it is made
	}
	s.mu.Unlock()
	if err != nil {
		return "", nil, err
	}
	dir, err = s.inst.mount(s.o.Size, s.o.Owner)
	if err != nil {
		s.unblank()
		return "", nil, err
	}
	var once sync.Once
	return dir, func() {
		once.Do(func() {
			unmount(dir)
			s.unblank()
		})
	}, nil
}

func (s *Set) unblank() {
	s.mu.Lock()
	s.blanks--
	s.mu.Unlock()
}

// Adopt makes dir, from Blank, client's workspace, in use (Release it).
// The handle is random: the directory's name is not (it never leaves the
// host).
func (s *Set) Adopt(dir, client string) (*Workspace, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	ws := &Workspace{Handle: "ws_" + hex.EncodeToString(b), Dir: dir, owner: client, used: s.now(), busy: 1}
	s.mu.Lock()
	s.blanks--
	if s.closed {
		s.mu.Unlock()
		unmount(dir)
		return nil, ErrClosed
	}
	evicted := s.evict(client)
	s.byID[ws.Handle] = ws
	s.mu.Unlock()
	if evicted != "" {
		s.dropLater(evicted)
	}
	return ws, nil
}

// evict makes room for one more of client's workspaces: past PerClient,
// its least recently used idle one goes. It returns the directory to drop.
func (s *Set) evict(client string) string {
	n := 0
	var lru *Workspace
	for _, ws := range s.byID {
		if ws.owner != client {
			continue
		}
		n++
		if ws.busy == 0 && (lru == nil || ws.used.Before(lru.used)) {
			lru = ws
		}
	}
	if n < s.o.PerClient || lru == nil {
		return ""
	}
	delete(s.byID, lru.Handle)
	return lru.Dir
}

// Acquire hands out client's workspace handle for one execution (Release
// it).
func (s *Set) Acquire(handle, client string) (*Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.byID[handle]
	if ws == nil || ws.owner != client || ws.gone || s.expired(ws) {
		return nil, ErrUnknown
	}
	ws.busy++
	ws.used = s.now()
	return ws, nil
}

// Release ends one execution's use of ws: its idle time starts again, or,
// if it was removed meanwhile, it is deleted now that nothing uses it.
func (s *Set) Release(ws *Workspace) {
	s.mu.Lock()
	ws.busy--
	ws.used = s.now()
	del := ws.gone && ws.busy == 0 && s.byID[ws.Handle] == ws
	if del {
		delete(s.byID, ws.Handle)
	}
	s.mu.Unlock()
	if del {
		s.dropLater(ws.Dir)
	}
}

func (s *Set) expired(ws *Workspace) bool {
	return ws.busy == 0 && (ws.gone || s.now().Sub(ws.used) >= s.o.TTL)
}

// Remove deletes workspace handle now, or as soon as its executions end.
func (s *Set) Remove(handle string) {
	s.mu.Lock()
	ws := s.byID[handle]
	if ws == nil {
		s.mu.Unlock()
		return
	}
	if ws.busy > 0 {
		// Its executions are being cancelled: the last to end deletes it.
		ws.gone = true
		s.mu.Unlock()
		return
	}
	delete(s.byID, handle)
	s.mu.Unlock()
	unmount(ws.Dir)
}

// Sweep deletes the workspaces idle for their TTL.
func (s *Set) Sweep() {
	s.mu.Lock()
	var gone []string
	for h, ws := range s.byID {
		if s.expired(ws) {
			delete(s.byID, h)
			gone = append(gone, ws.Dir)
		}
	}
	s.mu.Unlock()
	for _, d := range gone {
		unmount(d)
	}
}

// Dir is the directory of workspace handle, "" if there is none.
func (s *Set) Dir(handle string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ws := s.byID[handle]; ws != nil {
		return ws.Dir
	}
	return ""
}

// Count is the number of live workspaces (not counting blank ones).
func (s *Set) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// InUse is the number of executions that hold a workspace now.
func (s *Set) InUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ws := range s.byID {
		n += ws.busy
	}
	return n
}

// Path is the directory of this server's instance, which holds its
// workspaces.
func (s *Set) Path() string { return s.inst.dir }

// dropLater deletes a workspace's directory off the caller's path: an
// unmount takes ~0.3 ms, which an execute's answer need not wait for (a
// client past PerClient, as a stateless one soon is, evicts one at each
// call). Its handle is gone already; Close waits for the deletion.
func (s *Set) dropLater(dir string) {
	s.dropping.Add(1)
	go func() {
		defer s.dropping.Done()
		unmount(dir)
	}()
}

// Close deletes every workspace and the instance: the server is stopping,
// and its executions have ended. Blank directories still held are
// deleted too (their drop funcs then do nothing more).
func (s *Set) Close() error {
	s.mu.Lock()
	s.closed = true
	all := s.byID
	s.byID = map[string]*Workspace{}
	s.mu.Unlock()
	for _, ws := range all {
		unmount(ws.Dir)
	}
	s.dropping.Wait()
	if err := s.inst.close(); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}
