package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExecRunsAndStreams(t *testing.T) {
	requireRoot(t)
	code, out, errs := run(t, "", "exec", "--", "/bin/sh", "-c", "echo out; echo err >&2; exit 7")
	if code != 7 || out != "out\n" || errs != "err\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 7, out, err", code, out, errs)
	}
}

// Scripts write to /dev/stderr and read /dev/stdin: both reopen the pipe
// through /proc/self/fd, which checks the pipe's owner.
func TestExecReopensItsPipes(t *testing.T) {
	requireRoot(t)
	code, out, errs := run(t, "in\n", "exec", "--", "/bin/sh", "-c", "echo out >/dev/stdout; echo err >/dev/stderr; cat /dev/stdin")
	if code != 0 || out != "out\nin\n" || errs != "err\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestExecStdin(t *testing.T) {
	requireRoot(t)
	code, out, _ := run(t, "hello from stdin", "exec", "--", "cat")
	if code != 0 || out != "hello from stdin" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

func TestExecCommandNotFound(t *testing.T) {
	requireRoot(t)
	code, _, errs := run(t, "", "exec", "--", "no-such-command")
	if code != 127 || !strings.Contains(errs, "command not found") {
		t.Fatalf("exit %d, stderr %q; want 127, command not found", code, errs)
	}
}

func TestExecUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"exec"},
		{"exec", "--memory", "lots", "--", "true"},
		{"exec", "--timeout", "-1s", "--", "true"},
		{"exec", "--env", "NOEQUALS", "--", "true"},
		{"exec", "--allow-degraded", "seccomp", "--", "true"},
		{"exec", "--no-such-flag", "--", "true"},
		{"exec", "--config", "/nonexistent/crucible.yaml", "--", "true"},
		{"exec", "--ro", "/nonexistent/crucible-test", "--", "true"},
		{"exec", "--workspace", "/etc/hostname", "--", "true"},
		{"exec", "--workspace", "/etc", "--", "true"},
		{"exec", "--workspace", "/", "--", "true"},
		{"exec", "--allow-net", "*.com", "--", "true"},
		{"frobnicate"},
	} {
		code, _, errs := run(t, "", args...)
		if code != ExitUsage || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line", args, code, errs)
		}
	}
}

// A workspace through which the code would write as host root is refused,
// unless the operator insists, and then every execution says so.
func TestExecUnsafeWorkspace(t *testing.T) {
	requireRoot(t)
	ws := t.TempDir() // owned by root, as the tests run
	code, _, errs := run(t, "", "exec", "--workspace", ws, "--", "true")
	if code != ExitUsage || !strings.Contains(errs, "owned by root") {
		t.Errorf("root-owned workspace: exit %d, stderr %q", code, errs)
	}
	code, _, errs = run(t, "", "exec", "--workspace", ws, "--unsafe-workspace", "--", "sh", "-c", "touch /workspace/f")
	if code != 0 || !strings.Contains(errs, "warning: sandbox.unsafe_workspace is on") {
		t.Errorf("insisted: exit %d, stderr %q", code, errs)
	}
}

// A network rule that does not compile is named as the operator wrote it:
// the file and line, or the flag; never a Go field's name.
func TestExecNetworkRuleErrors(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("network:\n  allow:\n    - api.github.com\n    - \"*\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", cfg}, cfg + `:4: network.allow[1]: "*": "*" is not a rule`},
		{[]string{"--allow-net", "*.co.uk"}, `--allow-net: "*.co.uk": wildcard covers all of the public suffix "co.uk"`},
	} {
		code, _, errs := run(t, "", append(append([]string{"exec"}, tc.args...), "--", "true")...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) || strings.Contains(errs, "AllowAll") {
			t.Errorf("%q: exit %d, stderr %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}

// An execution that is interrupted is not called a setup failure.
func TestExecInterruptedJSON(t *testing.T) {
	requireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"exec", "--json", "--", "true"}, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	var r struct{ Error struct{ Name string } }
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || code != 130 || r.Error.Name != "Interrupted" {
		t.Errorf("exit %d, stdout %q (%v), stderr %q", code, out.String(), err, errb.String())
	}
}

// The audit trail gets the denied syscall and the execution, under one id.
func TestExecAudit(t *testing.T) {
	requireRoot(t)
	path := filepath.Join(t.TempDir(), "audit.ndjson")
	code, _, _ := run(t, "", "exec", "--audit", path, "--", "python3", "-c", "import ctypes; ctypes.CDLL(None).ptrace(0, 0, 0, 0)")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		events = append(events, m)
	}
	if len(events) != 2 || events[0]["event"] != "violation" || events[0]["syscall"] != "ptrace" ||
		events[1]["event"] != "execution" || events[0]["exec"] != events[1]["exec"] || events[1]["exit_code"] != 0.0 {
		t.Fatalf("events: %v", events)
	}
}
