package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/cruciblehq/crucible/lang/js/engine"
)

// maxAnswer bounds one answer line of the tools channel: the largest result
// the configuration allows, and some.
const maxAnswer = 128 << 20

// toolsClient is the engine's way to the execution's tools channel, the fd
// that CRUCIBLE_TOOLS_FD names: requests go out as lines with an id of
// ours, and each answer is handed to the request of its id, in whatever
// order they come.
type toolsClient struct {
	conn net.Conn
	wmu  sync.Mutex // one request line at a time

	mu      sync.Mutex
	seq     int
	waiting map[int]chan answer
	err     error // why the channel ended, once it has
}

type answer struct {
	ID     int               `json:"id"`
	Result json.RawMessage   `json:"result"`
	Error  *engine.ToolError `json:"error"`
	err    error             // the channel's end
}

// toolsChannel is the client of the tools channel, or nil when the
// execution has none.
func toolsChannel() engine.Tools {
	fd, err := strconv.Atoi(os.Getenv("CRUCIBLE_TOOLS_FD"))
	if err != nil || fd < 3 {
		return nil
	}
	f := os.NewFile(uintptr(fd), "tools")
	conn, err := net.FileConn(f) // a copy, on the poller
	f.Close()
	if err != nil {
		return nil
	}
	c := &toolsClient{conn: conn, waiting: map[int]chan answer{}}
	go c.read()
	return c
}

func (c *toolsClient) read() {
	s := bufio.NewScanner(c.conn)
	s.Buffer(make([]byte, 0, 64<<10), maxAnswer)
	for s.Scan() {
		var a answer
		if json.Unmarshal(s.Bytes(), &a) != nil {
			continue
		}
		c.mu.Lock()
		ch := c.waiting[a.ID]
		delete(c.waiting, a.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
	end := errors.New("the tools channel was closed")
	if errors.Is(s.Err(), bufio.ErrTooLong) {
		end = fmt.Errorf("an answer on the tools channel was longer than %d bytes", maxAnswer)
	}
	c.mu.Lock()
	c.err = end
	for id, ch := range c.waiting {
		ch <- answer{err: end}
		delete(c.waiting, id)
	}
	c.mu.Unlock()
}

// Do implements engine.Tools.
func (c *toolsClient) Do(ctx context.Context, req []byte) ([]byte, error) {
	if len(req) < 2 || req[0] != '{' || req[1] == '}' {
		return nil, errors.New("a tools request must be a JSON object with a method")
	}
	ch := make(chan answer, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.seq++
	id := c.seq
	c.waiting[id] = ch
	c.mu.Unlock()

	line := append(append([]byte(`{"id":`+strconv.Itoa(id)+`,`), req[1:]...), '\n')
	c.wmu.Lock()
	_, err := c.conn.Write(line)
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("the tools channel: %w", err)
	}
	select {
	case a := <-ch:
		switch {
		case a.err != nil:
			return nil, a.err
		case a.Error != nil:
			return nil, a.Error
		}
		if a.Result == nil {
			return []byte("null"), nil
		}
		return a.Result, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}
