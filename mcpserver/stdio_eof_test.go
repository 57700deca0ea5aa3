package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// stdioClient is a client of ServeStdio over pipes, writing raw lines and
// collecting every answer by id.
type stdioClient struct {
	in      *io.PipeWriter
	served  chan error
	answers chan map[string]any // closed when the server's output ends
}

func startStdio(t *testing.T, ctx context.Context, s *Server) *stdioClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &stdioClient{in: inW, served: make(chan error, 1), answers: make(chan map[string]any, 64)}
	go func() {
		err := s.ServeStdio(ctx, inR, outW)
		_ = outW.Close()
		c.served <- err
	}()
	go func() {
		defer close(c.answers)
		dec := json.NewDecoder(outR)
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				return
			}
			c.answers <- m
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		_ = outR.Close()
	})
	return c
}

func (c *stdioClient) send(t *testing.T, msgs ...any) {
	t.Helper()
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.in.Write(append(b, '\n')); err != nil {
			t.Fatalf("writing to the server: %v", err)
		}
	}
}

// end waits, at most wait, for the server's output to end and for
// ServeStdio to return, and returns the answers by id.
func (c *stdioClient) end(t *testing.T, wait time.Duration) map[any]map[string]any {
	t.Helper()
	byID := map[any]map[string]any{}
	timeout := time.After(wait)
	for {
		select {
		case m, ok := <-c.answers:
			if !ok {
				select {
				case err := <-c.served:
					t.Logf("ServeStdio: %v", err)
				case <-timeout:
					t.Fatalf("ServeStdio did not return within %v", wait)
				}
				return byID
			}
			byID[m["id"]] = m
		case <-timeout:
			t.Fatalf("the server's output did not end within %v", wait)
		}
	}
}

func stdioInit() []any {
	return []any{
		json.RawMessage(initBody),
		map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"},
	}
}

func stdioExecute(id int, code string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "execute", "arguments": map[string]any{"code": code}}}
}

// A client sends its last requests and closes its end of stdin, as a
// script piping requests into `crucible serve` does: each request read
// before the end is answered, then the server returns.
func TestStdioEOFAnswersInFlight(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	s := newServer(t, func(c *config.Config) { c.Serve.Pool = 0 })
	c := startStdio(t, context.Background(), s)
	c.send(t, stdioInit()...)
	c.send(t, stdioExecute(2, `await new Promise(r => setTimeout(r, 1000)); console.log("late"); return 7`),
		map[string]any{"jsonrpc": "2.0", "id": "last", "method": "ping"})
	_ = c.in.Close()
	answers := c.end(t, 2*time.Minute)
	res, _ := answers[2.0]["result"].(map[string]any)
	out, _ := res["structuredContent"].(map[string]any)
	if out == nil || res["isError"] == true || out["stdout"] != "late\n" || out["result"] != float64(7) {
		t.Errorf("the execution in flight at the end of stdin: %v", answers[2.0])
	}
	if answers["last"]["result"] == nil {
		t.Errorf("the ping read before the end of stdin: %v", answers["last"])
	}
}

// The wait for the calls in flight ends at once when serve's context does
// (SIGTERM): the execution is stopped, not answered.
func TestStdioEOFCancelStops(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	s := newServer(t, func(c *config.Config) { c.Serve.Pool = 0 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := startStdio(t, ctx, s)
	c.send(t, stdioInit()...)
	// Shorter than the sandbox's timeout (20s): answered if serve waited.
	c.send(t, stdioExecute(2, `await new Promise(r => setTimeout(r, 15000)); return "late"`))
	_ = c.in.Close()
	waitRunning(t, s)
	cancel()
	if answers := c.end(t, time.Minute); answers[2.0] != nil {
		t.Errorf("serve waited for the execution after its context ended: %v", answers[2.0])
	}
}

// A client that dies mid-execution closes its ends of both stdin and
// stdout: it is not waited for. Its execution is stopped and serve
// returns, as when a client hangs up over HTTP.
func TestStdioHangUpNotWaitedFor(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	s := newServer(t, func(c *config.Config) {
		c.Serve.Pool = 0
		c.Sandbox.Timeout = config.Duration(5 * time.Minute)
	})
	inR, inW := io.Pipe()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.ServeStdio(context.Background(), inR, outW) }()
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close(); _ = outW.Close() })
	c := &stdioClient{in: inW}
	c.send(t, stdioInit()...)
	c.send(t, stdioExecute(2, `await new Promise(r => setTimeout(r, 200000)); return "late"`))
	waitRunning(t, s)
	_ = outR.Close()
	_ = inW.Close()
	select {
	case err := <-served:
		t.Logf("ServeStdio: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("serve waited 2 minutes for the execution of a client that hung up")
	}
	waitIdle(t, s, "the execution of a client that hung up")
}
