package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// ServeStdio serves one client on in and out (the process's stdin and
// stdout) until it disconnects or ctx ends. A JSON-RPC line longer than
// the request body bound is refused, as over HTTP. When in ends, the calls
// read from it are answered first: a client may send its last request and
// close its end at once.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	maxLine := int(s.config().Serve.MaxBody)
	// A call ends within this: an execution waits busy_wait at most for
	// a place, then runs sandbox.timeout at most; the minute is for its
	// jail to be made and torn down.
	drain := time.Duration(s.config().Serve.BusyWait) + time.Duration(s.config().Sandbox.Timeout) + time.Minute
	guard := newStdioGuard(ctx, in, out, maxLine, drain)
	return s.faceOf("stdio").sessionful.Run(ctx, &mcp.IOTransport{Reader: guard, Writer: sdkWriter{guard}, MaxLineLength: maxLine})
}

// ServeTransport serves one client on t (a test's in-memory transport, or
// any other), as ServeStdio does.
func (s *Server) ServeTransport(ctx context.Context, t mcp.Transport) error {
	return s.faceOf("stdio").sessionful.Run(ctx, t)
}

// maxDepth bounds how deeply one JSON-RPC message over stdio may nest.
const maxDepth = 256

// The SDK's stdio transport reads one stream of JSON values, and a value it
// cannot read (malformed, not an object, nested past its decoder's limit)
// ends the connection, and with it crucible serve: a model could take its
// own server down with one bad line. So each line is checked first, and a
// bad one is answered here with a JSON-RPC error, as HTTP answers a bad
// body, and not passed on.

// The SDK's reader, at the end of its input, cancels the calls in flight
// and the SDK writes no more answers. So the guard keeps the end of the
// input from it until every call it passed on has been answered (drain).

// stdioGuard passes the lines of a stdio stream that are JSON-RPC messages
// on to the SDK, and answers the others on out.
type stdioGuard struct {
	r       *bufio.Reader
	out     *lockedWriter
	maxLine int
	pending []byte

	mu       sync.Mutex
	asked    map[string]bool // the calls passed on and not answered, by idKey
	answered chan struct{}   // a value after an answer

	drainFor  time.Duration   // bounds drain
	done      <-chan struct{} // serve's context's: ends drain
	closed    chan struct{}   // closed by Close: ends drain
	closeOnce sync.Once
}

// lockedWriter serializes whole writes: the SDK writes each message in one
// Write, and so does the guard. (A write to a client that has hung up
// fails with EPIPE, which ends the session: crucible serve asks for
// SIGPIPE, which would otherwise end the process before it tears its jails
// down.)
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// hungUp reports whether w is a pipe, socket or terminal whose other end
// has closed: the client is gone, rather than done sending.
func hungUp(w io.Writer) bool {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	_ = rc.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd)}} // POLLERR and POLLHUP need no asking
		n, err := unix.Poll(p, 0)
		gone = err == nil && n > 0 && p[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
	})
	return gone
}

func newStdioGuard(ctx context.Context, in io.Reader, out io.Writer, maxLine int, drain time.Duration) *stdioGuard {
	return &stdioGuard{
		r: bufio.NewReaderSize(in, 64<<10), out: &lockedWriter{w: out}, maxLine: maxLine,
		asked: map[string]bool{}, answered: make(chan struct{}, 1),
		drainFor: drain, done: ctx.Done(), closed: make(chan struct{}),
	}
}

// sdkWriter is the SDK's side of out: it crosses off the call that each
// answer written answers.
type sdkWriter struct{ g *stdioGuard }

func (w sdkWriter) Write(p []byte) (int, error) {
	n, err := w.g.out.Write(p)
	if _, id, method := shape(p); id != nil && !method {
		w.g.mu.Lock()
		delete(w.g.asked, idKey(id))
		w.g.mu.Unlock()
		select {
		case w.g.answered <- struct{}{}:
		default:
		}
	}
	return n, err
}

func (sdkWriter) Close() error { return nil }

// Close is the transport's, when the session ends: it ends drain.
func (g *stdioGuard) Close() error {
	g.closeOnce.Do(func() { close(g.closed) })
	return nil
}

// drain waits until every call passed on has been answered, or serve's
// context ends, or the transport closes, or drainFor has passed, or the
// client has hung up (looked at a few times a second): then the SDK stops
// the calls in flight, as it did before the wait.
func (g *stdioGuard) drain() {
	t := time.NewTimer(g.drainFor)
	defer t.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		g.mu.Lock()
		n := len(g.asked)
		g.mu.Unlock()
		if n == 0 || hungUp(g.out.w) {
			return
		}
		select {
		case <-g.answered:
		case <-tick.C:
		case <-g.done:
			return
		case <-g.closed:
			return
		case <-t.C:
			return
		}
	}
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
			g.drain()
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
	depth, id, method := shape(text)
	switch {
	case depth > maxDepth:
		g.answer(id, -32600, fmt.Sprintf("invalid request: nested more than %d levels deep", maxDepth))
	case !json.Valid(text):
		g.answer(nil, -32700, "parse error: the line is not JSON")
	case !messages(text):
		g.answer(id, -32600, "invalid request: not a JSON-RPC message (batches are not taken)")
	default:
		// A call to be answered. One whose id idValue does not read (a
		// string with escapes) is not waited for: clients use plain ids.
		if method && id != nil {
			g.mu.Lock()
			g.asked[idKey(id)] = true
			g.mu.Unlock()
		}
		return line
	}
	return nil
}

// idKey is id as the SDK writes it back: it reads a number as a float64
// and keeps its integer part; a string (without escapes) as it is.
func idKey(id []byte) string {
	if id[0] == '"' {
		return string(id)
	}
	f, err := strconv.ParseFloat(string(id), 64)
	if err != nil {
		return string(id)
	}
	return strconv.FormatInt(int64(f), 10)
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
// skipped: how deeply it nests, the value of the outermost object's "id"
// member if that is a number or a string (else nil), and whether that
// object has a "method" member (a request, not an answer).
func shape(b []byte) (depth int, id []byte, method bool) {
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
				switch key := b[start : i+1]; {
				case d != 1:
				case id == nil && bytes.Equal(key, []byte(`"id"`)):
					id = idValue(b[i+1:])
				case bytes.Equal(key, []byte(`"method"`)) && bytes.HasPrefix(bytes.TrimLeft(b[i+1:], " \t\r\n"), []byte(":")):
					method = true
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
	return depth, id, method
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
