package mcpserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessions are the MCP sessions the server holds state for, one entry
// each: a stdio session, made at its first execution, and a 2025-11-25
// HTTP session, made when its initialize is served (or at its first
// execution, if that comes first). An entry ends when its session does, or
// with the server, and its workspaces with it. Over HTTP the entries are
// also what serve.max_sessions_per_client counts, and their use picks the
// session to end past it.
type sessions struct {
	mu       sync.Mutex
	all      map[*mcp.ServerSession]*session
	byClient map[string]map[string]*session // the HTTP ones, by client, then Mcp-Session-Id
	opening  map[string]int                 // initializes being served, by client
	clock    uint64                         // counts uses: orders them
}

func newSessions() sessions {
	return sessions{all: map[*mcp.ServerSession]*session{}, byClient: map[string]map[string]*session{}, opening: map[string]int{}}
}

// session is what an MCP session holds: its workspace, once it has run
// something, and, over HTTP, its use.
type session struct {
	ss     *mcp.ServerSession
	id     string // its Mcp-Session-Id ("" over stdio)
	owner  string // the client whose it is
	ctx    context.Context
	cancel context.CancelFunc // ends the session's executions

	// The rest is guarded by sessions.mu.
	handle string   // the workspace its executions share
	made   []string // every workspace made for it, deleted with it
	ended  bool     // its workspaces are being deleted

	// held: opened by an initialize over HTTP, and so counted by
	// serve.max_sessions_per_client. It is idle while no POST of it is in
	// flight, as the SDK's idle timeout (serve.workspace_ttl) counts: a
	// GET stream alone does not hold it, for a client that crashed or
	// left may hold one until its connection is seen to be gone.
	held     bool
	inFlight int    // POSTs being served
	last     uint64 // the clock when one last began or ended
	ending   bool   // picked to end: no more POSTs of it are served
}

// sessionOf returns the state of the MCP session ss, of client, made on
// first use, from inside a tool call.
func (s *Server) sessionOf(ss *mcp.ServerSession, client string) *session {
	return s.track(ss, client, true)
}

// track returns the state of ss, of client, made if it is new: one
// goroutine waits for the session to end, and the server's end stands in
// for it. Made in a tool call (inCall), which Close waits for (calls)
// before it waits for wg, it always is; else nil once Close has begun.
func (s *Server) track(ss *mcp.ServerSession, client string, inCall bool) *session {
	r := &s.sessions
	r.mu.Lock()
	defer r.mu.Unlock()
	if se := r.all[ss]; se != nil {
		return se
	}
	if inCall {
		s.wg.Add(1)
	} else if !s.join(&s.wg) {
		return nil
	}
	ctx, cancel := context.WithCancel(s.ctx)
	se := &session{ss: ss, id: ss.ID(), owner: client, ctx: ctx, cancel: cancel}
	r.all[ss] = se
	if se.id != "" {
		if r.byClient[client] == nil {
			r.byClient[client] = map[string]*session{}
		}
		r.byClient[client][se.id] = se
	}
	var once sync.Once
	end := func() {
		once.Do(func() {
			cancel()
			for _, h := range r.forget(se) {
				s.spaces.Remove(h)
			}
			s.wg.Done()
		})
	}
	stop := context.AfterFunc(s.ctx, end)
	go func() {
		_ = ss.Wait()
		stop()
		end()
	}()
	return se
}

// trackID tracks the session of id just made over HTTP, of client, on
// whichever face it was made; nil if none holds it (it ended already).
func (s *Server) trackID(id, client string) *session {
	for _, srv := range s.sessionful() {
		for ss := range srv.Sessions() {
			if ss.ID() == id {
				return s.track(ss, client, false)
			}
		}
	}
	return nil
}

// forget drops se, which has ended, and returns the workspaces made for it.
func (r *sessions) forget(se *session) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.all, se.ss)
	if r.byClient[se.owner][se.id] == se {
		delete(r.byClient[se.owner], se.id)
		if len(r.byClient[se.owner]) == 0 {
			delete(r.byClient, se.owner)
		}
	}
	se.ended = true
	return se.made
}

// end stops the executions of the HTTP session id, if it is owner's: a
// DELETE of the session waits for its calls to end.
func (r *sessions) end(id, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if se := r.byClient[owner][id]; se != nil {
		se.cancel()
	}
}

// handleOf is the handle of se's workspace, "" before it has one.
func (r *sessions) handleOf(se *session) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return se.handle
}

// own makes handle the workspace of se, deleted with it, and says so; if
// se has ended meanwhile, it does not (the caller deletes the workspace).
func (r *sessions) own(se *session, handle string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if se.ended {
		return false
	}
	se.handle = handle
	se.made = append(se.made, handle)
	return true
}

// admit counts one more session of client being opened, if it holds fewer
// than most; else, if one of its sessions is idle, it picks the least
// recently used one to end (the caller ends it) and counts the new one in
// its place. ok is false when all are busy.
func (r *sessions) admit(client string, most int) (idle *session, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.opening[client]
	for _, se := range r.byClient[client] {
		if !se.held || se.ending {
			continue
		}
		n++
		if se.inFlight == 0 && (idle == nil || se.last < idle.last) {
			idle = se
		}
	}
	if n < most {
		idle = nil
	} else if idle == nil {
		return nil, false
	} else {
		idle.ending = true
	}
	r.opening[client]++
	return idle, true
}

// opened counts an initialize of client served: se is the session it
// made, nil if none.
func (r *sessions) opened(client string, se *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opening[client]--; r.opening[client] <= 0 {
		delete(r.opening, client)
	}
	if se == nil {
		return
	}
	r.clock++
	se.held, se.last = true, r.clock
}

// use counts a POST of client's session id in flight until done is called;
// ok is false if the session is being ended. A session that is not held
// (another client's, one gone, or one whose initialize is still being
// answered) is left to the SDK to answer.
func (r *sessions) use(client, id string) (done func(), ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	se := r.byClient[client][id]
	if se == nil || !se.held {
		return func() {}, true
	}
	if se.ending {
		return nil, false
	}
	r.clock++
	se.inFlight++
	se.last = r.clock
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.clock++
		se.inFlight--
		se.last = r.clock
	}, true
}
