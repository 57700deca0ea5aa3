package toolbridge

import (
	"context"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkEcho measures one call of server-everything's echo through a
// Session against the same call made by an SDK client of our own, on the
// same kind of server in the same run: the bridge's own cost per call is
// the difference.
func BenchmarkEcho(b *testing.B) {
	srv := npmServer(b, "server-everything", nil)
	args := []byte(`{"message":"hello"}`)
	b.Run("direct", func(b *testing.B) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cmd := exec.Command(srv.Command, srv.Args...)
		cmd.Env = []string{}
		sess, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = sess.Close() }()
		b.ResetTimer()
		for b.Loop() {
			if _, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bridge", func(b *testing.B) {
		br, err := New(Options{Servers: map[string]Server{"e": srv}, Limits: Limits{Calls: 1 << 30}})
		if err != nil {
			b.Fatal(err)
		}
		defer br.Close()
		s := br.NewSession()
		if _, err := s.Call(context.Background(), "e", "echo", args); err != nil { // started
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := s.Call(context.Background(), "e", "echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
