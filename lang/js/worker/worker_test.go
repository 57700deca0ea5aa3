package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/lang/js"
)

// worker runs the worker with args, stdin coming from job after a pause
// (nil: none), and returns its exit code, output and report on fd 3. The
// worker is this test binary, outside any jail: this package's init makes
// it one.
func worker(t *testing.T, job []byte, pause time.Duration, args ...string) (int, string, string, *lang.Outcome) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rr, rw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	var stdout, stderr bytes.Buffer
	cmd := &exec.Cmd{Path: self, Args: append([]string{js.Worker}, args...), Stdout: &stdout, Stderr: &stderr, ExtraFiles: []*os.File{rw}}
	for k, v := range js.WarmProgram(js.Options{}).Env { // what the jail's command gets
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	go func() {
		time.Sleep(pause)
		_, _ = stdin.Write(job)
		_ = stdin.Close()
	}()
	report, _ := io.ReadAll(rr)
	err = cmd.Wait()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	out, err := lang.ParseOutcome(report)
	if err != nil {
		t.Fatalf("%v: %q", err, report)
	}
	return code, stdout.String(), stderr.String(), out
}

// A program that runs out of time is stopped by the worker itself, which
// reports a TimeoutError and keeps its output, then exits as the jail's
// timeout would (in a jail, the jail's kill comes first).
func TestWorkerTimeout(t *testing.T) {
	src := filepath.Join(t.TempDir(), "main.js")
	if err := os.WriteFile(src, []byte("console.log('start');\nfor (;;) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr, out := worker(t, nil, 0, "-lang=js", "-name=main.js", "-timeout=2s", src)
	if code != 124 || stdout != "start\n" || out.Error == nil || out.Error.Name != "TimeoutError" ||
		!strings.Contains(stderr, "Uncaught TimeoutError") {
		t.Errorf("exit %d, stdout %q, stderr %q, outcome %+v", code, stdout, stderr, out.Error)
	}

	job, _ := json.Marshal(js.NewJob([]byte("console.log('start');\nfor (;;) {}\n"), "main.js", false))
	code, stdout, _, out = worker(t, job, 0, "-warm", "-timeout=2s")
	if code != 124 || stdout != "start\n" || out.Error == nil || out.Error.Name != "TimeoutError" {
		t.Errorf("warm: exit %d, stdout %q, outcome %+v", code, stdout, out.Error)
	}
}

// A warm worker's timeout starts when its job arrives, as the jail's does:
// a job sent long after the worker's birth still has its whole time.
func TestWarmTimeoutStartsWithJob(t *testing.T) {
	job, _ := json.Marshal(js.NewJob([]byte("return 'ok'"), "main.ts", true))
	code, _, stderr, out := worker(t, job, 6*time.Second, "-warm", "-timeout=5s")
	if code != 0 || out.Error != nil || string(out.Result) != `"ok"` {
		t.Errorf("exit %d, outcome %s %+v, stderr %q", code, out.Result, out.Error, stderr)
	}
}

// The report carries the exit code the worker then exits with, on which a
// pooled execution ends before the kernel has torn the worker down
// (jail.Spec.ReportedExit); a timed-out program's report has none, since the
// worker waits for the jail's kill.
func TestReportedExit(t *testing.T) {
	for _, c := range []struct {
		src  string
		code int
	}{{"return 1", 0}, {"throw new Error('no')", 1}, {"console.log('x'); await Promise.reject(new TypeError('t'))", 1}} {
		job, _ := json.Marshal(js.NewJob([]byte(c.src), "main.ts", true))
		code, _, _, out := worker(t, job, 0, "-warm", "-timeout=10s")
		if code != c.code || out.Exit == nil || *out.Exit != code {
			t.Errorf("%q: exit %d, reported %v; want %d both", c.src, code, out.Exit, c.code)
		}
	}
	job, _ := json.Marshal(js.NewJob([]byte("for (;;) {}"), "main.js", false))
	if code, _, _, out := worker(t, job, 0, "-warm", "-timeout=2s"); code != 124 || out.Exit != nil {
		t.Errorf("timed out: exit %d, reported %v; want 124 and none", code, out.Exit)
	}

	// A fetch the program did not wait for is over before the report (the
	// event loop waits for it, as Node's does): no refusal of it can come
	// after the report, on which the execution ends.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(300 * time.Millisecond)
		_, _ = w.Write([]byte("late"))
	}))
	defer srv.Close()
	job, _ = json.Marshal(js.NewJob([]byte("fetch('"+srv.URL+"/').then(r => r.text()).then(t => console.log(t)); return 1"), "main.js", false))
	if code, stdout, _, out := worker(t, job, 0, "-warm", "-timeout=10s"); code != 0 || stdout != "late\n" || out.Exit == nil || *out.Exit != 0 {
		t.Errorf("a fetch not waited for: exit %d, stdout %q, reported %v; want 0, its body, 0", code, stdout, out.Exit)
	}
}
