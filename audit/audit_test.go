package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/violation"
)

func TestLogLine(t *testing.T) {
	var b bytes.Buffer
	w := New(&b)
	w.now = func() time.Time { return time.Date(2026, 11, 22, 7, 0, 0, 5, time.UTC) }
	if err := w.Log(Violation{Exec: "e1", Violation: violation.Violation{Kind: "syscall", Syscall: "ptrace", Count: 2, Reason: "no"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Log(Execution{Exec: "e1", Command: []string{"sh", "-c", "x"}, ExitCode: 3}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2026-11-22T07:00:00.000000005Z","event":"violation","exec":"e1","kind":"syscall","syscall":"ptrace","count":2,"reason":"no"}
{"time":"2026-11-22T07:00:00.000000005Z","event":"execution","exec":"e1","command":["sh","-c","x"],"exit_code":3,"duration_ms":0}
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestNilWriterDiscards(t *testing.T) {
	var w *Writer
	if err := w.Log(Execution{}); err != nil {
		t.Fatal(err)
	}
}

// Lines written at once from many goroutines stay whole, one per line.
func TestConcurrentLinesStayWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.ndjson")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Log(Violation{Exec: strings.Repeat("x", i), Violation: violation.Violation{Kind: "syscall", Count: i}})
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["event"] != "violation" {
			t.Fatalf("bad line %q: %v", l, err)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %o, want 0600", fi.Mode().Perm())
	}
}

// stalled is a disk that does not answer until released.
type stalled struct {
	release chan struct{}
	mu      sync.Mutex
	b       bytes.Buffer
}

func (s *stalled) Write(p []byte) (int, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// A disk that stalls does not stall the caller (the network's packet path
// logs), and what cannot be queued is counted, not silently lost.
func TestLogDoesNotWaitForTheDisk(t *testing.T) {
	disk := &stalled{release: make(chan struct{})}
	w := New(disk)
	big := strings.Repeat("r", 64<<10)
	const n = 200 // 200 lines of 64 KiB: more than the queue holds
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		for i := range n {
			_ = w.Log(Violation{Exec: "e", Violation: violation.Violation{Kind: "dns", Count: i, Reason: big}})
		}
	}()
	select {
	case <-logged:
	case <-time.After(time.Minute): // a hang, not a speed limit
		close(disk.release)
		t.Fatal("Log waited for a stalled disk")
	}
	close(disk.release)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(disk.b.String(), "\n"), "\n")
	var last struct {
		Event string `json:"event"`
		Count int    `json:"count"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Event != "audit_dropped" || len(lines)-1+last.Count != n {
		t.Errorf("%d lines written, then %+v: want %d events in all, the dropped ones counted last", len(lines)-1, last, n)
	}
	for i, l := range lines[:len(lines)-1] {
		var v Violation
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.Count != i {
			t.Fatalf("line %d out of order or broken: count %d, %v", i, v.Count, err)
		}
	}
}
