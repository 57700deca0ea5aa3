package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one client on in and out (the process's stdin and
// stdout) until it disconnects or ctx ends. A JSON-RPC line longer than
// the request body bound is refused, as over HTTP.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	maxLine := int(s.cfg.Serve.MaxBody)
	guard, w := newStdioGuard(in, out, maxLine)
	return s.sessionful.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(guard), Writer: w, MaxLineLength: maxLine})
}

// ServeTransport serves one client on t (a test's in-memory transport, or
// any other), as ServeStdio does.
func (s *Server) ServeTransport(ctx context.Context, t mcp.Transport) error {
	return s.sessionful.Run(ctx, t)
}

// maxDepth bounds how deeply one JSON-RPC message over stdio may nest.
const maxDepth = 256

// The SDK's stdio transport reads one stream of JSON values, and a value it
// cannot read (malformed, not an object, nested past its decoder's limit)
// ends the connection, and with it crucible serve: a model could take its
// own server down with one bad line. So each line is checked first, and a
// bad one is answered here with a JSON-RPC error, as HTTP answers a bad
// body, and not passed on.

// stdioGuard passes the lines of a stdio stream that are JSON-RPC messages
// on to the SDK, and answers the others on out.
type stdioGuard struct {
	r       *bufio.Reader
	out     *lockedWriter
	maxLine int
	pending []byte
}

// lockedWriter serializes whole writes: the SDK writes each message in one
// Write, and so does the guard.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

func newStdioGuard(in io.Reader, out io.Writer, maxLine int) (*stdioGuard, *lockedWriter) {
	lw := &lockedWriter{w: out}
	return &stdioGuard{r: bufio.NewReaderSize(in, 64<<10), out: lw, maxLine: maxLine}, lw
}

func (g *stdioGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		line, err := g.readLine()
		if len(line) > 0 {
			g.pending = g.check(line)
		}
		if err != nil {
			if len(g.pending) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// readLine reads up to and including a newline. A line longer than maxLine
// is passed on in pieces as it is: the transport refuses it, by design.
func (g *stdioGuard) readLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := g.r.ReadSlice('\n')
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
		if len(line) > g.maxLine {
			return line, nil
		}
	}
}

// check returns line if it may go on to the SDK; else it answers it and
// returns nothing.
func (g *stdioGuard) check(line []byte) []byte {
	if len(line) > g.maxLine {
		return line
	}
	text := bytes.TrimSpace(line)
	if len(text) == 0 {
		return nil
	}
	depth, id := shape(text)
	switch {
	case depth > maxDepth:
		g.answer(id, -32600, fmt.Sprintf("invalid request: nested more than %d levels deep", maxDepth))
	case !json.Valid(text):
		g.answer(nil, -32700, "parse error: the line is not JSON")
	case !messages(text):
		g.answer(id, -32600, "invalid request: not a JSON-RPC message (batches are not taken)")
	default:
		return line
	}
	return nil
}

// messages reports whether text (valid JSON) has the shape of a JSON-RPC
// message: what the SDK's reader takes without ending the connection. A
// batch is refused: MCP has none since 2025-06-18, and the SDK ends the
// connection on one.
func messages(text []byte) bool {
	if text[0] != '{' {
		return false
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(text, &msg) != nil || msg.JSONRPC != "2.0" {
		return false
	}
	if msg.Method == nil && (msg.ID == nil || (msg.Result == nil && msg.Error == nil)) {
		return false // neither a request, a notification nor a response
	}
	id := bytes.TrimSpace(msg.ID)
	// An id is a string or a number.
	return len(id) == 0 || id[0] == '"' || id[0] == '-' || ('0' <= id[0] && id[0] <= '9')
}

func (g *stdioGuard) answer(id []byte, code int, msg string) {
	if id == nil {
		id = []byte("null")
	}
	_, _ = fmt.Fprintf(g.out, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`+"\n", id, code, msg)
}

// shape reads what the guard needs of a JSON text in one pass, strings
// skipped: how deeply it nests, and the value of the outermost object's
// "id" member if that is a number or a string (else nil).
func shape(b []byte) (depth int, id []byte) {
	d, inString, escaped, start := 0, false, false, -1
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if id == nil && d == 1 && bytes.Equal(b[start:i+1], []byte(`"id"`)) {
					id = idValue(b[i+1:])
				}
			}
		case c == '"':
			inString, start = true, i
		case c == '[' || c == '{':
			d++
			depth = max(depth, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return depth, id
}

// idValue reads `: value` where value is a number or a string without
// escapes (what ids are), else nil.
func idValue(b []byte) []byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != ':' {
		return nil
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	end := 0
	switch {
	case len(b) > 0 && b[0] == '"':
		i := bytes.IndexByte(b[1:], '"')
		if i < 0 || bytes.IndexByte(b[1:i+1], '\\') >= 0 {
			return nil
		}
		end = i + 2
	default:
		for end < len(b) && (b[end] == '-' || b[end] == '.' || b[end] == 'e' || b[end] == 'E' || b[end] == '+' || (b[end] >= '0' && b[end] <= '9')) {
			end++
		}
	}
	if end == 0 || end > 128 {
		return nil
	}
	return b[:end]
}
