// Command bench-replicas measures what forwarding costs (serve.replicas):
// a 2026-07-28 execute with a workspace handle sent through a replica that
// does not own it, against the same call sent to its owner, alternating
// in one run. Two `crucible serve --http` replicas, on 127.0.0.1 and
// 127.0.0.2 at one port, named by their addresses.
//
//	CGO_ENABLED=0 go build -o /tmp/crucible ./cmd/crucible
//	go run ./bench/replicas -crucible /tmp/crucible -n 200   # as root
//	go run ./bench/replicas -crucible /tmp/crucible -code ""  # the hop alone
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/bench/internal/hello"
	"github.com/cruciblehq/crucible/bench/internal/timing"
)

func main() {
	crucible := flag.String("crucible", "/tmp/crucible", "the crucible binary")
	n := flag.Int("n", 200, "calls per row")
	code := flag.String("code", "return 1", `the program ("" for a call refused at once: the transport and the hop alone)`)
	flag.Parse()
	if err := run(*crucible, *n, *code); err != nil {
		fmt.Fprintln(os.Stderr, "bench-replicas:", err)
		os.Exit(1)
	}
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func run(crucible string, n int, code string) error {
	dir, err := os.MkdirTemp("", "bench-replicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte(hex.EncodeToString(key)), 0o600); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	tok := hex.EncodeToString(key[:12])
	ctx := context.Background()
	var sessions [2]*mcp.ClientSession
	for i, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		cfg := filepath.Join(dir, ip+".yaml")
		if err := os.WriteFile(cfg, []byte(hello.Embedded+fmt.Sprintf("serve:\n  rate: 0\n  replicas:\n    name: %s\n    peer: http://{name}:%s\n    key: {from: file:%s}\n",
			ip, port, filepath.Join(dir, "key"))), 0o600); err != nil {
			return err
		}
		cmd := exec.Command(crucible, "serve", "--config", cfg, "--http", ip+":"+port)
		cmd.Env = append(os.Environ(), "CRUCIBLE_TOKEN="+tok)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}()
		base := "http://" + ip + ":" + port
		if err := waitReady(base, tok); err != nil {
			return err
		}
		hc := &http.Client{Transport: bearer{tok, &http.Transport{MaxIdleConnsPerHost: 8}}}
		if sessions[i], err = mcp.NewClient(&mcp.Implementation{Name: "bench-replicas", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, nil); err != nil {
			return err
		}
		defer func() { _ = sessions[i].Close() }()
	}
	res, err := sessions[0].CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": "return 1"}})
	if err != nil {
		return fmt.Errorf("the first execute: %w", err)
	}
	if res.IsError {
		return errors.New("the first execute failed")
	}
	handle, _ := res.StructuredContent.(map[string]any)["workspace"].(string)
	if !strings.HasPrefix(handle, "ws_127.0.0.1.") {
		return fmt.Errorf("handle %q does not name replica 127.0.0.1", handle)
	}
	// Each call 100 ms after the last, so that it finds the owner's pool
	// full: back to back, both rows would wait for jails being built.
	order := []string{"owner", "forwarded"}
	var failed error
	times := map[string][]time.Duration{}
	for range n {
		for i, name := range order {
			time.Sleep(100 * time.Millisecond)
			start := time.Now()
			r, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": code, "workspace": handle}})
			times[name] = append(times[name], time.Since(start))
			if err == nil && r.IsError != (code == "") {
				err = fmt.Errorf("execute: isError %v", r.IsError)
			}
			if err != nil && failed == nil {
				failed = fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	for _, t := range times {
		slices.Sort(t)
	}
	if failed != nil {
		return failed
	}
	fmt.Printf("execute (ts, %q) with a handle, %d calls each, alternating, 100 ms apart:\n", code, n)
	timing.Table("  ", 10, order, times)
	fmt.Printf("  p50 %+v, p99 %+v added by the hop (%s)\n",
		(timing.Pct(times["forwarded"], 50) - timing.Pct(times["owner"], 50)).Round(time.Microsecond),
		(timing.Pct(times["forwarded"], 99) - timing.Pct(times["owner"], 99)).Round(time.Microsecond),
		timing.Ratio(times["forwarded"], times["owner"]))
	return nil
}

func freePort() (string, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		_, port, _ := net.SplitHostPort(l.Addr().String())
		l2, err := net.Listen("tcp", "127.0.0.2:"+port)
		l.Close()
		if err == nil {
			l2.Close()
			return port, nil
		}
	}
	return "", errors.New("no port free on both 127.0.0.1 and 127.0.0.2")
}

// waitReady waits, 30 s at most, for /readyz to say ready.
func waitReady(base, tok string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("GET", base+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not become ready", base)
}
