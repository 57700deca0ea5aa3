// Command tracing measures what OpenTelemetry tracing, a watching console
// and reloads cost crucible serve: four servers of one binary and one
// configuration, one exporting its traces (OTLP over HTTP to a receiver in
// this process, which reads and drops them), one with nothing configured,
// one whose /console/events a reader here follows, and one told to reload
// (POST /reload, its file unchanged) before every -reload-every'th call,
// each called in turn
// with execute of `return 1` over one HTTP session, paced as an agent
// calls (-gap apart), a tool call in each program to a server of this
// process (so that a call span and its _meta go out too). It prints each
// one's p50 and p95, their ratio, and each server's CPU time per
// execution (its own and its reaped children's, from /proc).
//
//	go build -o /tmp/crucible ./cmd/crucible && go run ./bench/tracing -crucible /tmp/crucible
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/bench/internal/hello"
	"github.com/cruciblehq/crucible/bench/internal/timing"
)

const token = "bench-token-0123456789abcdef"

func main() {
	bin := flag.String("crucible", "", "the crucible binary (go build -o /tmp/crucible ./cmd/crucible)")
	n := flag.Int("n", 200, "calls per server")
	gap := flag.Duration("gap", 100*time.Millisecond, "the pause between two calls")
	every := flag.Int("reload-every", 10, "reload the fourth server before every this many calls")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "tracing: -crucible is needed")
		os.Exit(2)
	}
	if err := run(*bin, *n, *gap, max(*every, 1)); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

// server is one crucible serve, and a session of it.
type server struct {
	cmd  *exec.Cmd
	url  string
	sess *mcp.ClientSession
}

func run(bin string, n int, gap time.Duration, every int) error {
	var exported atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.Copy(io.Discard, r.Body)
		exported.Add(b)
	}))
	defer recv.Close()
	ms := mcp.NewServer(&mcp.Implementation{Name: "down", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "one"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "1"}}}, nil, nil
	})
	down := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil))
	defer down.Close()

	dir, err := os.MkdirTemp("", "crucible-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "crucible.yaml")
	if err := os.WriteFile(cfg, []byte(hello.Embedded+"servers:\n  down: {url: \""+down.URL+"\"}\n"), 0o644); err != nil {
		return err
	}
	servers := map[string]*server{}
	for name, env := range map[string][]string{
		"off":     nil,
		"on":      {"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_BSP_SCHEDULE_DELAY=500"},
		"console": nil,
		"reload":  nil,
	} {
		s, err := start(bin, cfg, env)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer s.stop()
		servers[name] = s
	}
	// A browser's console on the third: its event stream read as it comes.
	var streamed atomic.Int64
	stream, err := watch(servers["console"].url, &streamed)
	if err != nil {
		return err
	}
	defer stream()
	order := []string{"off", "on", "console", "reload"}
	before := map[string]time.Duration{}
	for _, name := range order {
		// The first of each: the tool server's start.
		if err := call(servers[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		before[name] = cpu(servers[name].cmd.Process.Pid)
	}
	times := map[string][]time.Duration{}
	var reloads, afterReload []time.Duration
	for i := range n {
		for _, name := range order {
			time.Sleep(gap) // not timed: the agent's pause
			if name == "reload" && i%every == 0 {
				began := time.Now()
				if err := reload(servers[name]); err != nil {
					return err
				}
				reloads = append(reloads, time.Since(began))
			}
			began := time.Now()
			if err := call(servers[name]); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			times[name] = append(times[name], time.Since(began))
			if name == "reload" && i%every == 0 {
				afterReload = append(afterReload, time.Since(began))
			}
		}
	}
	for _, t := range append(slices.Collect(maps.Values(times)), reloads, afterReload) {
		slices.Sort(t)
	}
	fmt.Printf("execute of `return await tools.down.one({})` over HTTP, %d calls each, %v apart, alternating\n", n, gap)
	timing.Table("  ", 12, order, times)
	fmt.Printf("  on/off: %s\n", timing.Ratio(times["on"], times["off"]))
	fmt.Printf("  console/off: %s\n", timing.Ratio(times["console"], times["off"]))
	fmt.Printf("  reload/off: %s\n", timing.Ratio(times["reload"], times["off"]))
	fmt.Printf("  POST /reload: p50 %v, p95 %v (%d); the call after one: p50 %v, p95 %v\n",
		timing.Pct(reloads, 50), timing.Pct(reloads, 95), len(reloads), timing.Pct(afterReload, 50), timing.Pct(afterReload, 95))
	for _, name := range order {
		per := (cpu(servers[name].cmd.Process.Pid) - before[name]) / time.Duration(n)
		fmt.Printf("  CPU per execution, %s: %v\n", name, per.Round(10*time.Microsecond))
	}
	fmt.Printf("  exported: %d KiB of OTLP; the console streamed %d KiB\n", exported.Load()>>10, streamed.Load()>>10)
	return nil
}

// watch reads the console's event stream of the server at url, counting
// its bytes, until the returned function is called.
func watch(url string, n *atomic.Int64) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/console/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		_ = resp.Body.Close()
		return nil, fmt.Errorf("/console/events: %s", resp.Status)
	}
	go func() { _, _ = io.Copy(counter{n}, resp.Body) }()
	return func() { cancel(); _ = resp.Body.Close() }, nil
}

// counter counts what is written to it.
type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

func call(s *server) error {
	res, err := s.sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute",
		Arguments: map[string]any{"code": "return await tools.down.one({});"},
		Meta:      mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	if err == nil && res.IsError {
		err = fmt.Errorf("execute failed: %v", res.Content)
	}
	return err
}

// reload asks s to read its configuration again.
func reload(s *server) error {
	req, _ := http.NewRequest(http.MethodPost, s.url+"/reload", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /reload: %s %s", resp.Status, b)
	}
	return nil
}

// start runs crucible serve with env added, and connects to it once its
// pools are ready.
func start(bin, cfg string, env []string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(bin, "serve", "--http", addr, "--config", cfg)
	cmd.Env = append(append(os.Environ(), "CRUCIBLE_TOKEN="+token), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, url: "http://" + addr}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ready(s.url) {
			break
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("serve at %s was not ready in 60s", addr)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	s.sess, err = c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func ready(url string) bool {
	req, _ := http.NewRequest(http.MethodGet, url+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (s *server) stop() {
	if s.sess != nil {
		_ = s.sess.Close()
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

type bearer struct{}

func (bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return http.DefaultTransport.RoundTrip(r)
}

// cpu is the CPU time of process pid and of its children it reaped.
func cpu(pid int) time.Duration {
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	// The fields after the command's name, which may hold spaces.
	fields := strings.Fields(line[strings.LastIndexByte(line, ')')+2:])
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
		v, _ := strconv.ParseInt(fields[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
