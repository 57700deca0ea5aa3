// Package toolchannel is an execution's tools channel: the line protocol,
// on a socketpair between the supervisor and the code in the jail (or two
// pipes, for a runtime that can open a pipe and no socket by its
// descriptor: Deno), by
// which the code calls the tool bridge's tools, reads their resources and
// lists the configuration's HTTP APIs. It holds the protocol's wire types,
// the host's end ([Channel], one function per method) and the Go client of
// the jail's end ([Client], the embedded engine's).
//
// It is not the bridge (package toolbridge) and knows nothing of the
// configuration: the channel is handed what it asks of them as narrow
// interfaces, and package sandbox composes it. The runners in other
// languages (lang/python/crucible.py, lang/deno/run.js) speak the same
// protocol with their own copies of the names below. It imports nothing
// heavy: the worker links the client and runs from its init, before the
// bridge's packages initialize (cmd/crucible's TestWorkerHookRunsEarly).
//
// A request is one line, a JSON object:
//
//	{"id":1,"method":"call","server":"gh","tool":"get_issue","args":{...}}
//	{"id":2,"method":"list"}
//	{"id":3,"method":"resource","server":"gh","uri":"..."}
//	{"id":4,"method":"apis","query":"create issue"}   (query optional)
//
// and each gets one answer line with its id, in whatever order they end:
// {"id":1,"result":...} or {"id":1,"error":{"kind":...,"message":...}}.
package toolchannel

import "encoding/json"

// EnvVar is the environment variable that gives the code the descriptor
// of its tools channel; an execution without one does not have it.
const EnvVar = "CRUCIBLE_TOOLS_FD"

// OutEnvVar, for a channel of two pipes (Options.Pipes), gives the
// descriptor the code writes its requests to; it reads the answers from
// EnvVar's.
const OutEnvVar = "CRUCIBLE_TOOLS_OUT_FD"

// Request is one line the code sends.
type Request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	URI    string          `json:"uri"`
	Query  string          `json:"query"`
}

// Response is one line the code gets: a result or an error.
type Response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Error is a failed request: Kind "tool" for the policy's refusal or the
// tool's own error, "limit" for a limit, "approval" for a call no human
// approved, "error" for anything else (a server that cannot be reached, a
// malformed request). The message is safe to show the code.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }
