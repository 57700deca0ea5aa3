package toolchannel

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
)

// maxAnswer bounds one answer line the client reads: the largest result
// the configuration allows, and some.
const maxAnswer = 128 << 20

// Client is the code's end of the channel, in Go: requests go out as lines
// with an id of its own, and each answer is handed to the request of its
// id, in whatever order they come.
type Client struct {
	conn io.ReadWriter // the socket (or, in tests, two pipes)
	wmu  sync.Mutex    // one request line at a time

	mu      sync.Mutex
	seq     int
	waiting map[int]chan answer
	err     error // why the channel ended, once it has
}

type answer struct {
	Response
	err error // the channel's end
}

// Open returns the client of the channel on the descriptor that EnvVar
// names, or nil when the execution has none.
func Open() *Client {
	fd, err := strconv.Atoi(os.Getenv(EnvVar))
	if err != nil || fd < 3 {
		return nil
	}
	f := os.NewFile(uintptr(fd), "tools")
	conn, err := net.FileConn(f) // a copy, on the poller
	f.Close()
	if err != nil {
		return nil
	}
	return newClient(conn)
}

func newClient(conn io.ReadWriter) *Client {
	c := &Client{conn: conn, waiting: map[int]chan answer{}}
	go c.read()
	return c
}

func (c *Client) read() {
	s := bufio.NewScanner(c.conn)
	s.Buffer(make([]byte, 0, 64<<10), maxAnswer)
	for s.Scan() {
		var a answer
		if json.Unmarshal(s.Bytes(), &a.Response) != nil {
			continue
		}
		id, err := strconv.Atoi(string(a.ID)) // ours are integers
		if err != nil {
			continue
		}
		c.mu.Lock()
		ch := c.waiting[id]
		delete(c.waiting, id)
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

// Do sends one request, a JSON object without its id
// ({"method":"call",...}), and returns its result's JSON. An error answer
// is an [*Error]; any other error is the channel's own.
func (c *Client) Do(ctx context.Context, req []byte) ([]byte, error) {
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
