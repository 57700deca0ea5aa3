package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/cruciblehq/crucible/replica"
)

// With serve.replicas, the ids this server hands out name it (Server.mint):
// a session's id ("se_"), a workspace's handle ("ws_") and the state of an
// execution that waits for a 2026-07-28 client's answer ("st_"). A request
// that carries another replica's id is forwarded there; the rest, and
// stateless calls without such an id, are served here.

// What a client reads when the replica its request belongs to is gone.
const (
	lostSession   = "this session was on a replica of crucible serve that has ended: start a new session"
	lostWorkspace = "this workspace was on a replica of crucible serve that has ended: start a new one (leave out workspace)"
	lostPaused    = "the execution that waited for this answer was on a replica of crucible serve that has ended: run the program again"
)

// routing is what forwarded reads of a JSON-RPC request's body.
type routing struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestState string          `json:"requestState"`
		Arguments    json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// forwards count the requests forwarded to each other replica.
type forwards struct {
	mu sync.Mutex
	to map[string]int64
}

func (f *forwards) add(owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.to == nil {
		f.to = map[string]int64{}
	}
	f.to[owner]++
}

// total is how many requests were forwarded.
func (f *forwards) total() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, c := range f.to {
		n += c
	}
	return n
}

// forwardCount is one replica's line of the console.
type forwardCount struct {
	Name      string `json:"name"`
	Forwarded int64  `json:"forwarded"`
}

// list is the counts by replica, sorted by name.
func (f *forwards) list() []forwardCount {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []forwardCount{}
	for _, name := range slices.Sorted(maps.Keys(f.to)) {
		out = append(out, forwardCount{name, f.to[name]})
	}
	return out
}

// forwarded forwards r to the replica that owns the id it carries, if
// that is another, and says whether it did.
func (s *Server) forwarded(w http.ResponseWriter, r *http.Request) bool {
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		owner, ok := s.replicas.Owner("se_", sid)
		if !ok || owner == s.replicas.Self() {
			return false
		}
		// 404: the client starts a new session, as for one that expired.
		s.replicas.Forward(w, r, owner, replica.Lost{Status: http.StatusNotFound, Body: rpcError(nil, lostSession)})
		s.forwardsTo.add(owner)
		return true
	}
	if r.Method != http.MethodPost {
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// Past serve.max_body, or the client went away: nobody is to
		// serve it.
		http.Error(w, "the request could not be read: "+err.Error(), http.StatusRequestEntityTooLarge)
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // whoever serves it reads it whole
	var req routing
	if json.Unmarshal(body, &req) != nil || req.Method != "tools/call" || len(req.ID) == 0 {
		return false
	}
	owner, why := s.ownerOf(&req)
	if owner == "" || owner == s.replicas.Self() {
		return false
	}
	s.replicas.Forward(w, r, owner, replica.Lost{Status: http.StatusOK, Body: toolError(req.ID, why)})
	s.forwardsTo.add(owner)
	return true
}

// ownerOf is the replica that owns the paused execution or the workspace
// that req names, and what its client reads if that replica is gone; ""
// for none (or an id no replica made, which is served here: unknown).
func (s *Server) ownerOf(req *routing) (owner, lost string) {
	if st := req.Params.RequestState; st != "" {
		if name, ok := s.replicas.Owner("st_", st); ok {
			return name, lostPaused
		}
		return "", ""
	}
	var args struct {
		Workspace string `json:"workspace"`
	}
	if json.Unmarshal(req.Params.Arguments, &args) != nil || args.Workspace == "" {
		return "", ""
	}
	if name, ok := s.replicas.Owner("ws_", args.Workspace); ok {
		return name, lostWorkspace
	}
	return "", ""
}

// rpcError is a JSON-RPC error response to the request id (nil: none).
func rpcError(id json.RawMessage, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": msg}})
	return b
}

// toolError is a JSON-RPC response to the tools/call id: a tool's error
// that says msg, which the model reads.
func toolError(id json.RawMessage, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
		"content": []map[string]any{{"type": "text", "text": msg}}, "isError": true}})
	return b
}
