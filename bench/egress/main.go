// Command egress measures the sandbox network (the userspace TCP/IP stack on
// the jail's tun device, which relays allowed connections to the host)
// against a direct baseline, in one run:
//
//   - GET: a new TCP connection, one HTTP/1.1 GET and the whole small
//     response, timed per request inside the client, so that process start-up
//     is not counted. "through" runs the client in `crucible exec` against a
//     name that the config pins to 127.0.0.1; "direct" runs the same client
//     on the host, unjailed, against 127.0.0.1.
//   - download: one -bytes HTTP download, through and direct, in MB/s.
//   - start-up: the whole `crucible exec -- /bin/true` process, with network
//     rules and without.
//
// The benchmark itself is the HTTP server, on 127.0.0.1. Through and direct
// alternate, so that drift in the machine's speed hits both alike; it prints
// medians, p95 and ratios.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/bench/internal/timing"
)

// client is the Python client, the same on both sides (only host and port
// differ). It uses plain sockets: http.client parses every response's
// headers with the email package and reads the body through a buffered file,
// copying it again; a hand-written request, a Content-Length scan and
// recv_into one preallocated buffer keep the client's own cost small, so the
// difference between the sides is the network's. The name is resolved once,
// before the timed requests (its time is the first request's). It prints one
// JSON line.
//
//	args: host port get N    -> {"first_ms": ..., "ms": [N times]}
//	      host port bytes N  -> {"bytes": received body bytes, "s": seconds}
const client = `
import json, re, socket, sys, time
host, port, mode, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
buf = bytearray(1 << 20)
mv = memoryview(buf)
def get(addr, path):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(addr)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (path, host.encode(), port))
    head = b""
    while b"\r\n\r\n" not in head:
        k = s.recv_into(mv)
        if k == 0:
            raise EOFError("connection closed in the headers")
        head += mv[:k]
    end = head.index(b"\r\n\r\n") + 4
    left = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head[:end]).group(1)) - (len(head) - end)
    while left > 0:
        k = s.recv_into(mv)
        if k == 0:
            raise EOFError("connection closed in the body")
        left -= k
    s.close()
t = time.perf_counter()
addr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
if mode == "get":
    get(addr, b"/")
    first = time.perf_counter() - t
    ms = []
    for i in range(n):
        t = time.perf_counter()
        get(addr, b"/")
        ms.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({"first_ms": first * 1e3, "ms": ms}))
else:
    t = time.perf_counter()
    get(addr, b"/?bytes=%d" % n)
    print(json.dumps({"bytes": n, "s": time.perf_counter() - t}))
`

// testName is the name the jail's client connects to; the config pins it to
// 127.0.0.1.
const testName = "bench.crucible.test"

type getResult struct {
	FirstMS float64   `json:"first_ms"`
	MS      []float64 `json:"ms"`
}

type downloadResult struct {
	Bytes int64   `json:"bytes"`
	S     float64 `json:"s"`
}

func main() {
	crucible := flag.String("crucible", "crucible", "path of the crucible binary")
	requests := flag.Int("requests", 200, "GETs per client run")
	rounds := flag.Int("rounds", 3, "client runs of each side, for the GETs and for the download")
	size := flag.Int64("bytes", 100e6, "size of the download")
	n := flag.Int("n", 100, "start-up runs of each command")
	flag.Parse()
	if *requests < 1 || *rounds < 1 || *size < 1 || *n < 1 {
		fail("-requests, -rounds, -bytes and -n must be at least 1")
	}

	// The server: a small body for /, and N zero bytes for /?bytes=N.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	zeros := make([]byte, 1<<20)
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("bytes") == "" {
				w.Header().Set("Content-Length", "6")
				_, _ = w.Write([]byte("hello\n"))
				return
			}
			left, err := strconv.ParseInt(r.URL.Query().Get("bytes"), 10, 64)
			if err != nil || left < 0 {
				http.Error(w, "bad bytes", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Length", strconv.FormatInt(left, 10))
			for left > 0 {
				k, err := w.Write(zeros[:min(left, int64(len(zeros)))])
				if err != nil {
					return
				}
				left -= int64(k)
			}
		}))
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	// The configs: the same but for the network section. The jail must be
	// able to traverse the directory, hence 0755.
	dir, err := os.MkdirTemp("", "crucible-bench-egress-")
	check(err)
	tmpDir = dir
	defer os.RemoveAll(dir)
	check(os.Chmod(dir, 0o755))
	base := "sandbox:\n  timeout: 120s\n"
	noNet, withNet := filepath.Join(dir, "none.yaml"), filepath.Join(dir, "net.yaml")
	check(os.WriteFile(noNet, []byte(base), 0o644))
	check(os.WriteFile(withNet, []byte(base+fmt.Sprintf(`network:
  allow: ["%[1]s:%[2]d"]
  hosts:
    %[1]s: 127.0.0.1
  allow_private: [127.0.0.0/8]
  max_bytes_in: %[3]dB
`, testName, port, max(4<<30, 2*(*size)))), 0o644))

	jailed := []string{*crucible, "exec", "--config", withNet, "--", "/usr/bin/python3", "-c", client}
	through := func(args ...string) []string {
		return append(slices.Clone(jailed), append([]string{testName, strconv.Itoa(port)}, args...)...)
	}
	direct := func(args ...string) []string {
		return append([]string{"/usr/bin/python3", "-c", client, "127.0.0.1", strconv.Itoa(port)}, args...)
	}

	// GET latency.
	var getT, getD []float64
	var firstT, firstD []float64
	for i := 0; i < *rounds; i++ {
		var t, d getResult
		run(through("get", strconv.Itoa(*requests)), &t)
		run(direct("get", strconv.Itoa(*requests)), &d)
		getT, firstT = append(getT, t.MS...), append(firstT, t.FirstMS)
		getD, firstD = append(getD, d.MS...), append(firstD, d.FirstMS)
	}
	slices.Sort(getT)
	slices.Sort(getD)
	slices.Sort(firstT)
	slices.Sort(firstD)
	fmt.Printf("GET, new connection each (%d requests per side, %d client runs, timed in the client):\n", len(getT), *rounds)
	fmt.Printf("  %-8s %9s %9s %9s %28s\n", "", "p50", "p95", "min", "first, with lookup (median)")
	fmt.Printf("  %-8s %6.3f ms %6.3f ms %6.3f ms %25.3f ms\n", "through", timing.Pct(getT, 50), timing.Pct(getT, 95), getT[0], timing.Pct(firstT, 50))
	fmt.Printf("  %-8s %6.3f ms %6.3f ms %6.3f ms %25.3f ms\n", "direct", timing.Pct(getD, 50), timing.Pct(getD, 95), getD[0], timing.Pct(firstD, 50))
	fmt.Printf("  through - direct: p50 %+.3f ms, p95 %+.3f ms (goal: at most +0.3 ms)\n",
		timing.Pct(getT, 50)-timing.Pct(getD, 50), timing.Pct(getT, 95)-timing.Pct(getD, 95))

	// Download throughput.
	var dlT, dlD []float64
	for i := 0; i < *rounds; i++ {
		var t, d downloadResult
		run(through("bytes", strconv.FormatInt(*size, 10)), &t)
		run(direct("bytes", strconv.FormatInt(*size, 10)), &d)
		dlT, dlD = append(dlT, float64(t.Bytes)/t.S/1e6), append(dlD, float64(d.Bytes)/d.S/1e6)
	}
	ratios := make([]float64, len(dlT))
	for i := range dlT {
		ratios[i] = dlT[i] / dlD[i] // pair by pair: each through run with the direct run after it
	}
	slices.Sort(dlT)
	slices.Sort(dlD)
	slices.Sort(ratios)
	fmt.Printf("\ndownload of %d MB (%d runs per side, median; MB = 10^6 bytes):\n", *size/1e6, *rounds)
	fmt.Printf("  through %8.0f MB/s (min %.0f, max %.0f)\n", timing.Pct(dlT, 50), dlT[0], dlT[len(dlT)-1])
	fmt.Printf("  direct  %8.0f MB/s (min %.0f, max %.0f)\n", timing.Pct(dlD, 50), dlD[0], dlD[len(dlD)-1])
	fmt.Printf("  ratio through/direct: median of pairs %.2f (min %.2f, max %.2f) (goal: at least 0.8)\n",
		timing.Pct(ratios, 50), ratios[0], ratios[len(ratios)-1])

	// Start-up cost of the network.
	cmds := map[string][]string{
		"network":    {*crucible, "exec", "--config", withNet, "--", "/bin/true"},
		"no network": {*crucible, "exec", "--config", noNet, "--", "/bin/true"},
	}
	order := []string{"network", "no network"}
	for _, name := range order { // warm-up, and a check that each works
		run(cmds[name], nil)
	}
	times := timing.Alternate(order, *n, func(name string) { run(cmds[name], nil) })
	fmt.Printf("\nstart-up, crucible exec -- /bin/true, whole process (%d runs each):\n", *n)
	timing.Table("  ", 11, order, times)
	fmt.Printf("  ratio network/no network: %s (goal: at most 1.3)\n", timing.Ratio(times["network"], times["no network"]))
}

// run runs cmd and, if v is not nil, decodes the last line of its stdout
// into v. Any failure, or a run longer than 3 minutes, ends the benchmark.
func run(cmd []string, v any) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stderr strings.Builder
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		fail("%s: %v\n%s", strings.Join(cmd[:min(len(cmd), 3)], " "), err, stderr.String())
	}
	if v == nil {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		fail("%s: %v in %q\n%s", cmd[0], err, out, stderr.String())
	}
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

// tmpDir is removed by fail too, since os.Exit skips main's defer.
var tmpDir string

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(1)
}
