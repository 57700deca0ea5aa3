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
)

func TestLogLine(t *testing.T) {
	var b bytes.Buffer
	w := New(&b)
	w.now = func() time.Time { return time.Date(2026, 11, 22, 7, 0, 0, 5, time.UTC) }
	if err := w.Log(Violation{Exec: "e1", Type: "syscall", Syscall: "ptrace", Count: 2, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Log(Execution{Exec: "e1", Command: []string{"sh", "-c", "x"}, ExitCode: 3}); err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2026-11-22T07:00:00.000000005Z","event":"violation","exec":"e1","type":"syscall","syscall":"ptrace","count":2,"reason":"no"}
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
			_ = w.Log(Violation{Exec: strings.Repeat("x", i), Type: "syscall", Count: i})
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
