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
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/internal/randomid"
	"github.com/cruciblehq/crucible/userns"
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
	ErrFull = errors.New("the server holds as many workspaces as it may (serve.max_workspaces, serve.max_workspace_bytes): try again once some have expired, or pass back a workspace handle you hold")
)

// Options configure a Set. The zero value of each field but Size means
// its default.
type Options struct {
	// Root is the directory that every server's instance lives in, which
	// must be ours alone. Default crucible-workspaces-UID in the
	// temporary directory; if another user has made that name, one of
	// ours instead: $XDG_RUNTIME_DIR/crucible-workspaces,
	// /run/crucible/workspaces, or a fresh crucible-workspaces-UID-*
	// in the temporary directory, which Logger names.
	Root string
	// Logger hears which directory the workspaces use when it is not the
	// default; nil discards. It is the operator's: it names host paths.
	Logger *slog.Logger
	// Size is the bytes one workspace may hold (its tmpfs's size).
	Size int64
	// TTL is how long an idle workspace lives; default 30 minutes.
	TTL time.Duration
	// PerClient bounds the workspaces one client holds: past it, its least
	// recently used idle one is deleted. Default 32.
	PerClient int
	// Total bounds the workspaces of the server, spares included: past
	// it, Create fails with ErrFull. Default 256.
	Total int
	// TotalBytes bounds their sizes together: the set holds at most
	// TotalBytes/Size workspaces, if that is fewer than Total. 0: no bound
	// but Total's.
	TotalBytes int64
	// Spare is how many empty workspaces the set keeps made ahead, so that
	// Create need not mount a tmpfs on its caller's path (0.1 to 0.4 ms on
	// the developers' VM). Default 0.
	Spare int
	// NewHandle makes a new workspace's handle, which must be unguessable;
	// default "ws_" and 128 random bits, in hex.
	NewHandle func() string
	// Owner is the uid and gid that own each workspace's root; default
	// nobody (65534), or our own id in a user namespace that has no other:
	// never root of the host, as whom the code would write.
	Owner int
}

// Set is one server's workspaces. It is safe for concurrent use.
type Set struct {
	o    Options
	inst *instance
	now  func() time.Time

	mu      sync.Mutex
	byID    map[string]*Workspace
	blanks  int      // directories made, or being made, and not yet anyone's
	spares  []string // made ahead, for Create
	filling int      // spares being made
	// spareDone is broadcast as each spare being made is done (or was not
	// made): Create waits on it when such a spare holds the last place.
	spareDone *sync.Cond
	closed    bool

	bg sync.WaitGroup // deletions and spares being made, which Close waits for
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
	o.TTL = cmp.Or(o.TTL, 30*time.Minute)
	o.PerClient = cmp.Or(o.PerClient, 32)
	o.Total = cmp.Or(o.Total, 256)
	if o.TotalBytes > 0 {
		o.Total = int(min(int64(o.Total), o.TotalBytes/o.Size))
		if o.Total < 1 {
			return nil, errors.New("workspace: not one workspace fits in the bytes allowed")
		}
	}
	o.Owner = cmp.Or(o.Owner, defaultOwner())
	if o.NewHandle == nil {
		o.NewHandle = func() string { return randomid.New("ws_", 16) }
	}
	var inst *instance
	var err error
	if o.Root == "" {
		inst, err = openDefault(cmp.Or(o.Logger, slog.New(slog.DiscardHandler)))
	} else {
		inst, err = openInstance(o.Root) // the operator's choice: refused if not ours
	}
	if err != nil {
		return nil, err
	}
	s := &Set{o: o, inst: inst, now: time.Now, byID: map[string]*Workspace{}}
	s.spareDone = sync.NewCond(&s.mu)
	s.refill()
	return s, nil
}

// nobody is the default owner of a workspace's directory.
const nobody = 65534

// defaultOwner is nobody where our user namespace has that id, and our own
// id where it has no other (see package userns): a tmpfs cannot be given
// to an id that is not mapped.
func defaultOwner() int {
	uids, gids, err := userns.Own()
	if err == nil && (!uids.Mapped(nobody) || !gids.Mapped(nobody)) {
		return os.Geteuid()
	}
	return nobody
}

// TTL is how long an idle workspace lives.
func (s *Set) TTL() time.Duration { return s.o.TTL }

// Create makes an empty workspace for client, in use (Release it): a spare
// if there is one, then a spare is made for the next.
func (s *Set) Create(client string) (*Workspace, error) {
	s.mu.Lock()
	var dir string
	for {
		if n := len(s.spares); n > 0 {
			dir, s.spares = s.spares[n-1], s.spares[:n-1]
			break
		}
		// A spare being made may hold the last place: wait for it
		// rather than answer full.
		if s.closed || s.filling == 0 || len(s.byID)+s.blanks < s.o.Total {
			break
		}
		s.spareDone.Wait()
	}
	s.mu.Unlock()
	if dir == "" {
		var err error
		if dir, err = s.blank(); err != nil {
			return nil, err
		}
	}
	ws, err := s.adopt(dir, client)
	s.refill()
	return ws, err
}

// blank makes a workspace's directory that is nobody's yet, its place
// counted in the total as it is made.
func (s *Set) blank() (string, error) {
	s.mu.Lock()
	var err error
	switch {
	case s.closed:
		err = ErrClosed
	case len(s.byID)+s.blanks >= s.o.Total:
		err = ErrFull
	default:
		s.blanks++
	}
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	dir, err := s.inst.mount(s.o.Size, s.o.Owner)
	if err != nil {
		s.unblank()
		return "", err
	}
	return dir, nil
}

func (s *Set) unblank() {
	s.mu.Lock()
	s.blanks--
	s.mu.Unlock()
}

// refill makes spares in the background, up to Spare, while there is
// room for them.
func (s *Set) refill() {
	s.mu.Lock()
	n := s.o.Spare - len(s.spares) - s.filling
	if s.closed || n <= 0 {
		s.mu.Unlock()
		return
	}
	s.filling += n
	s.bg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.bg.Done()
		for range n {
			dir, err := s.blank() // ErrFull, ErrClosed: no spare then
			s.mu.Lock()
			s.filling--
			s.spareDone.Broadcast()
			if err == nil && !s.closed {
				s.spares = append(s.spares, dir)
				dir = ""
			}
			s.mu.Unlock()
			if err == nil && dir != "" { // closed meanwhile
				unmount(dir)
				s.unblank()
			}
		}
	}()
}

// adopt makes dir, from blank, client's workspace, in use. The handle is
// random: the directory's name is not (it never leaves the host).
func (s *Set) adopt(dir, client string) (*Workspace, error) {
	ws := &Workspace{Handle: s.o.NewHandle(), Dir: dir, owner: client, used: s.now(), busy: 1}
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

// Count is the number of live workspaces (not counting spares).
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
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		unmount(dir)
	}()
}

// Close deletes every workspace, the spares and the instance: the server
// is stopping, and its executions have ended.
func (s *Set) Close() error {
	s.mu.Lock()
	s.closed = true
	all := s.byID
	s.byID = map[string]*Workspace{}
	spares := s.spares
	s.spares = nil
	s.mu.Unlock()
	for _, ws := range all {
		unmount(ws.Dir)
	}
	for _, dir := range spares {
		unmount(dir)
	}
	s.bg.Wait()
	if err := s.inst.close(); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}
