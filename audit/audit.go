// Package audit writes Crucible's audit trail: one JSON object per line
// (NDJSON) per decision — an execution, a denied operation, and, as the
// network and tools arrive, each DNS answer, connection and tool call.
// Events are typed structs, so that every feature writes the same format;
// a secret is named in an event, never its value.
//
// It is the operator's record, not the model's: it may hold host-side detail
// that results never show.
package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/violation"
)

// Event is one line of the trail. Kind names the event in the line's "event"
// field.
type Event interface {
	Kind() string
}

// Execution records one finished (or refused) execution.
type Execution struct {
	Exec       string   `json:"exec"`             // the execution's id
	Client     string   `json:"client,omitempty"` // whom it ran for (crucible serve's client)
	Command    []string `json:"command,omitempty"`
	Language   string   `json:"language,omitempty"`
	SourceHash string   `json:"source_sha256,omitempty"` // for programs: which source, without the source
	ExitCode   int      `json:"exit_code"`
	Signal     string   `json:"signal,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	LimitsHit  []string `json:"limits_hit,omitempty"`
	Degraded   []string `json:"degraded,omitempty"`
	Error      string   `json:"error,omitempty"` // why it could not run
}

// Kind implements Event.
func (Execution) Kind() string { return "execution" }

// Violation records an operation the sandbox denied, as results show it.
type Violation struct {
	Exec   string `json:"exec"`
	Client string `json:"client,omitempty"` // whom the execution ran for
	violation.Violation
}

// Kind implements Event.
func (Violation) Kind() string { return "violation" }

// maxPending bounds the encoded lines waiting to be written. Past it (a
// disk that stalls, a flood of decisions) further lines are dropped and
// counted, and the count is written as a [Dropped] line once the writer
// catches up: the trail says that it lost lines, and how many.
const maxPending = 8 << 20

// Writer appends events to an io.Writer, one line each. It is safe for
// concurrent use; a nil *Writer discards everything.
//
// Log never waits for the disk: it encodes the event and queues the line, and
// a goroutine, running only while lines wait, writes them. Events are logged
// from the sandbox network's packet path, which a slow disk must not stall.
type Writer struct {
	w   io.Writer
	now func() time.Time

	mu      sync.Mutex
	idle    sync.Cond // broadcast when the queue is written
	queue   [][]byte  // encoded lines, in order
	pending int       // their bytes
	dropped int       // lines refused since the last Dropped line
	writing bool      // a drain goroutine runs
	err     error     // the first write error
}

// New writes events to w.
func New(w io.Writer) *Writer {
	wr := &Writer{w: w, now: time.Now}
	wr.idle.L = &wr.mu
	return wr
}

// Open appends to the file at path, creating it readable by its owner only,
// and its directory if missing (likewise). Close the Writer when done.
func Open(path string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return New(f), nil
}

// Close writes what is queued, then closes the underlying writer if it is an
// io.Closer. It returns the first error of either.
func (w *Writer) Close() error {
	err := w.Flush()
	if c, ok := w.w.(io.Closer); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Flush waits until every line logged so far is written, and returns the
// first write error the Writer has met.
func (w *Writer) Flush() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.writing {
		w.idle.Wait()
	}
	return w.err
}

// Log queues e as one line: {"time":..., "event": e.Kind(), ...e's fields}.
// Its error is about e itself (it cannot be encoded); write errors are
// Flush's and Close's.
func (w *Writer) Log(e Event) error {
	if w == nil {
		return nil
	}
	line, err := w.encode(e)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending+len(line) > maxPending {
		w.dropped++
		return nil
	}
	w.queue = append(w.queue, line)
	w.pending += len(line)
	if !w.writing {
		w.writing = true
		go w.drain()
	}
	return nil
}

func (w *Writer) encode(e Event) ([]byte, error) {
	fields, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("audit: encoding a %s event: %w", e.Kind(), err)
	}
	if len(fields) < 2 || fields[0] != '{' {
		return nil, fmt.Errorf("audit: a %s event is not a JSON object", e.Kind())
	}
	head, _ := json.Marshal(struct {
		Time  string `json:"time"`
		Event string `json:"event"`
	}{w.now().UTC().Format(time.RFC3339Nano), e.Kind()})
	line := make([]byte, 0, len(head)+len(fields)+1)
	line = append(line, head[:len(head)-1]...) // without its closing brace
	if len(fields) > 2 {
		line = append(line, ',')
	}
	line = append(line, fields[1:]...) // without its opening brace
	return append(line, '\n'), nil
}

// drain writes the queue until it is empty, then ends.
func (w *Writer) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) > 0 || w.dropped > 0 {
		batch, dropped := w.queue, w.dropped
		w.queue, w.pending, w.dropped = nil, 0, 0
		w.mu.Unlock()
		if dropped > 0 {
			// The dropped lines came after the queued ones.
			if line, err := w.encode(Dropped{Count: dropped}); err == nil {
				batch = append(batch, line)
			}
		}
		err := w.write(batch)
		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = err
		}
	}
	w.writing = false
	w.idle.Broadcast()
}

// write writes whole lines, several to a write up to 64 KiB: with O_APPEND
// each write lands whole, so lines of concurrent processes do not
// interleave.
func (w *Writer) write(lines [][]byte) error {
	var buf []byte
	for i, l := range lines {
		buf = append(buf, l...)
		if len(buf) >= 64<<10 || i == len(lines)-1 {
			if _, err := w.w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}

// Dropped records that lines were lost: Count events were logged while the
// queue was full.
type Dropped struct {
	Count int `json:"count"`
}

// Kind implements Event.
func (Dropped) Kind() string { return "audit_dropped" }

// Network records one decision of the sandbox's network: a DNS answer, a
// connection allowed or refused, and a connection's end with its bytes.
type Network struct {
	Exec     string `json:"exec"`
	Type     string `json:"type"` // "dns", "connect", "sni_mismatch", ...
	Name     string `json:"name"` // the name or literal address asked for
	Port     uint16 `json:"port,omitempty"`
	Verdict  string `json:"verdict"` // "allow", "deny", or "done" at a connection's end
	Reason   string `json:"reason,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Addr     string `json:"addr,omitempty"` // where Crucible connected: for the operator only
	BytesOut int64  `json:"bytes_out,omitempty"`
	BytesIn  int64  `json:"bytes_in,omitempty"`
	// Secrets names the secrets of a "secret" decision: put in for the
	// destination (allow) or refused to it (deny). Names, never values.
	Secrets []string `json:"secrets,omitempty"`
	// Method, Path and Where say, of secrets put in (allow), in which
	// request and which part of it they went: "header", "query", "path",
	// "body" or "trailer".
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	Where  string `json:"where,omitempty"`
}

// Kind implements Event.
func (Network) Kind() string { return "network" }

// ToolCall records one tool call (or resource read) of an execution's
// code: which tool, a hash of its arguments, how long it took and how it
// ended. Never the arguments or the result themselves: they may hold
// anything.
type ToolCall struct {
	Exec       string `json:"exec"`
	Client     string `json:"client,omitempty"` // whom the execution ran for
	Server     string `json:"server"`
	Tool       string `json:"tool,omitempty"`     // "" for a resource read
	Resource   bool   `json:"resource,omitempty"` // a resource read: ArgsHash is the URI's
	ArgsHash   string `json:"args_sha256"`
	DurationMS int64  `json:"duration_ms"`
	Outcome    string `json:"outcome"` // "ok", "error" (the tool's or the server's) or "refused"
	Reason     string `json:"reason,omitempty"`
}

// Kind implements Event.
func (ToolCall) Kind() string { return "tool_call" }

// Approval records a human's answer to a call that a rule says must be
// approved: who was asked for whom, which call (its arguments by hash),
// and the answer: accept, decline, cancel, timeout, or unasked (no one to
// ask, Why says why).
type Approval struct {
	Exec     string `json:"exec"`
	Client   string `json:"client,omitempty"`
	Server   string `json:"server"`
	Tool     string `json:"tool"`
	ArgsHash string `json:"args_sha256"`
	Rule     int    `json:"rule"`
	Answer   string `json:"answer"`
	Why      string `json:"why,omitempty"`
	WaitMS   int64  `json:"wait_ms"`
}

// Kind implements Event.
func (Approval) Kind() string { return "approval" }

// Elicitation records what a tool server asked the execution's human
// during a call (an input request, or an elicitation), by mode, and the
// answer: never the message or what was answered, which are the server's
// and the human's.
type Elicitation struct {
	Exec   string `json:"exec"`
	Client string `json:"client,omitempty"`
	Server string `json:"server"`
	Mode   string `json:"mode"` // "form" or "url"
	Answer string `json:"answer"`
	WaitMS int64  `json:"wait_ms"`
}

// Kind implements Event.
func (Elicitation) Kind() string { return "elicitation" }

// Skill records a change to the server's skills by a client: a save or a
// delete, by name, with the hash of what was saved.
type Skill struct {
	Op       string `json:"op"` // "save" or "delete"
	Name     string `json:"name"`
	Client   string `json:"client"` // the client's key, never its token
	CodeHash string `json:"code_sha256,omitempty"`
}

// Kind implements Event.
func (Skill) Kind() string { return "skill" }

// Reload records a reload of the configuration (SIGHUP, or POST /reload):
// its result, "ok" or "error" (the old configuration keeps serving), why
// it was refused, and which tool servers it restarted (their settings
// changed) and which it stopped (gone from the configuration).
type Reload struct {
	Result    string   `json:"result"`
	Error     string   `json:"error,omitempty"`
	Restarted []string `json:"restarted,omitempty"`
	Stopped   []string `json:"stopped,omitempty"`
}

// Kind implements Event.
func (Reload) Kind() string { return "reload" }
