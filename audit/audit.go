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
	"sync"
	"time"
)

// Event is one line of the trail. Kind names the event in the line's "event"
// field.
type Event interface {
	Kind() string
}

// Execution records one finished (or refused) execution.
type Execution struct {
	Exec       string   `json:"exec"` // the execution's id
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

// Violation records an operation the sandbox denied.
type Violation struct {
	Exec    string `json:"exec"`
	Type    string `json:"type"`              // "syscall", or a network kind ("dns", "connect", ...)
	Syscall string `json:"syscall,omitempty"` // for type syscall
	Host    string `json:"host,omitempty"`    // for the network's types
	Port    uint16 `json:"port,omitempty"`
	Count   int    `json:"count"`
	Reason  string `json:"reason"`
}

// Kind implements Event.
func (Violation) Kind() string { return "violation" }

// Writer appends events to an io.Writer, one line each. It is safe for
// concurrent use; a nil *Writer discards everything.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// New writes events to w.
func New(w io.Writer) *Writer { return &Writer{w: w, now: time.Now} }

// Open appends to the file at path, creating it readable by its owner only.
// Close the Writer when done.
func Open(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return New(f), nil
}

// Close closes the underlying writer if it is an io.Closer.
func (w *Writer) Close() error {
	if c, ok := w.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Log writes e as one line: {"time":..., "event": e.Kind(), ...e's fields}.
func (w *Writer) Log(e Event) error {
	if w == nil {
		return nil
	}
	fields, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit: encoding a %s event: %w", e.Kind(), err)
	}
	if len(fields) < 2 || fields[0] != '{' {
		return fmt.Errorf("audit: a %s event is not a JSON object", e.Kind())
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
	line = append(line, '\n')

	w.mu.Lock()
	defer w.mu.Unlock()
	// One write per line: with O_APPEND, lines of concurrent processes do
	// not interleave.
	_, err = w.w.Write(line)
	return err
}

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
}

// Kind implements Event.
func (Network) Kind() string { return "network" }
