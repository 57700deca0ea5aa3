// Package sandbox is the composition root: it turns the user's configuration
// into the settings each mechanism takes and runs one execution, top to
// bottom. It holds no mechanism of its own.
package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang"
)

// defaultEnv is the whole environment a command starts with, before the
// configured variables; nothing of the host's environment is passed in.
var defaultEnv = map[string]string{
	"PATH":   "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
	"HOME":   "/workspace",
	"LANG":   "C.UTF-8",
	"TMPDIR": "/tmp",
	"USER":   jail.SandboxName,
}

// Options are one execution's streams and audit trail; nil means none.
type Options struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Audit          *audit.Writer
}

// Exec runs args in a fresh jail configured by cfg.
func Exec(ctx context.Context, cfg *config.Config, args []string, o Options) (*jail.Result, error) {
	ev := &audit.Execution{Exec: newID(), Command: args}
	return run(ctx, cfg, JailSpec(&cfg.Sandbox, args, nil, o), ev, o.Audit)
}

// run runs spec with the network cfg allows, and records the execution.
func run(ctx context.Context, cfg *config.Config, spec *jail.Spec, ev *audit.Execution, w *audit.Writer) (*jail.Result, error) {
	nl, err := attachNetwork(spec, &cfg.Network, ev.Exec, w)
	if err != nil {
		record(w, ev, nil, err)
		return nil, err
	}
	res, err := jail.Run(ctx, spec)
	if err == nil && nl != nil {
		res.Violations = append(res.Violations, nl.result()...)
	}
	record(w, ev, res, err)
	return res, err
}

// Run runs a language runtime's program in a fresh jail configured by cfg,
// and reads what its runner reported.
func Run(ctx context.Context, cfg *config.Config, p *lang.Program, o Options) (*jail.Result, *lang.Outcome, error) {
	ev := &audit.Execution{Exec: newID(), Command: p.Args, Language: p.Lang}
	if src, ok := p.Files[p.Main]; ok {
		ev.SourceHash = fmt.Sprintf("%x", sha256.Sum256(src))
	}
	var result bytes.Buffer
	res, err := run(ctx, cfg, programSpec(&cfg.Sandbox, p, o, &result), ev, o.Audit)
	if err != nil {
		return nil, nil, err
	}
	return res, outcome(result.Bytes()), nil
}

// programSpec is the jail that runs a program, its runner's report going
// to result.
func programSpec(s *config.Sandbox, p *lang.Program, o Options, result io.Writer) *jail.Spec {
	spec := JailSpec(s, p.Args, p.Env, o)
	spec.ReadOnly = append(slices.Clone(spec.ReadOnly), p.ReadOnly...)
	spec.Self = p.Self
	for _, path := range slices.Sorted(maps.Keys(p.Files)) {
		spec.Files = append(spec.Files, jail.File{Path: path, Data: p.Files[path]})
	}
	spec.Result = result
	return spec
}

// outcome reads what a runner reported on its fd 3.
func outcome(b []byte) *lang.Outcome {
	out, err := lang.ParseOutcome(b)
	if err != nil {
		// The program wrote to fd 3 itself; what it wrote is its own affair.
		return &lang.Outcome{Error: &lang.Error{Name: "CrucibleError", Message: err.Error()}}
	}
	return out
}

// record writes an execution and its violations to the audit trail. A trail
// that cannot be written does not fail the execution, which has happened.
func record(w *audit.Writer, ev *audit.Execution, res *jail.Result, err error) {
	if w == nil {
		return
	}
	if err != nil {
		ev.Error = err.Error()
		_ = w.Log(ev)
		return
	}
	for _, v := range res.Violations {
		_ = w.Log(audit.Violation{Exec: ev.Exec, Type: v.Kind, Syscall: v.Syscall, Host: v.Host, Port: v.Port, Count: v.Count, Reason: v.Reason})
	}
	ev.ExitCode, ev.Signal, ev.DurationMS = res.ExitCode, res.Signal, res.Duration.Milliseconds()
	ev.LimitsHit, ev.Degraded = res.LimitsHit, res.Degraded
	_ = w.Log(ev)
}

// newID names one execution in the audit trail.
func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail on Linux
	return hex.EncodeToString(b)
}

// Check reports what cfg asks for that cannot be: host paths that do not
// exist (or a workspace that is not a directory) and network rules that do
// not compile, so that the operator hears of a typo before any jail is built.
func Check(cfg *config.Config) error {
	if err := checkPaths(&cfg.Sandbox); err != nil {
		return err
	}
	_, err := NetworkPolicy(&cfg.Network)
	return err
}

func checkPaths(s *config.Sandbox) error {
	if s.Workspace != "" {
		fi, err := os.Stat(s.Workspace)
		if err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("workspace: %s is not a directory", s.Workspace)
		}
		// A symlink in the path may be one that an earlier execution planted
		// in its own workspace; the jail would get the directory's owner's
		// rights on its target. The operator names the real directory.
		if real, err := filepath.EvalSymlinks(s.Workspace); err == nil && real != s.Workspace {
			return fmt.Errorf("workspace: %s goes through a symbolic link; give the directory itself (%s)", s.Workspace, real)
		}
	}
	for _, p := range s.RO {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("ro: %w", err)
		}
	}
	return nil
}

// JailSpec maps the sandbox section of the configuration onto a jail.Spec.
// The command's environment is defaultEnv, then progEnv (a runtime's), then
// the configured variables.
func JailSpec(s *config.Sandbox, args []string, progEnv map[string]string, st Options) *jail.Spec {
	env := maps.Clone(defaultEnv)
	maps.Copy(env, progEnv)
	maps.Copy(env, s.Env)
	var envList []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	return &jail.Spec{
		Args:          args,
		Env:           envList,
		Workspace:     s.Workspace,
		WorkspaceSize: int64(s.TmpSize),
		ReadOnly:      s.RO,
		TmpSize:       int64(s.TmpSize),
		Timeout:       time.Duration(s.Timeout),
		Memory:        int64(s.Memory),
		Pids:          s.Pids,
		CPUs:          s.CPUs,
		MaxOutput:     int64(s.MaxOutput),
		Stdin:         st.Stdin,
		Stdout:        st.Stdout,
		Stderr:        st.Stderr,
		AllowDegraded: s.AllowDegraded,
	}
}

// Result is an execution's outcome as callers see it (`crucible exec --json`,
// and later the MCP server). It is safe to show the model.
type Result struct {
	ExitCode   int         `json:"exit_code"`
	Signal     string      `json:"signal"`
	Stdout     string      `json:"stdout"`
	Stderr     string      `json:"stderr"`
	Truncated  bool        `json:"truncated"`
	DurationMS int64       `json:"duration_ms"`
	LimitsHit  []string    `json:"limits_hit"`
	Violations []Violation `json:"violations"`
	Degraded   []string    `json:"degraded,omitempty"`

	// From `crucible run`: the program's value, and its uncaught error.
	Result json.RawMessage `json:"result,omitempty"`
	Error  *lang.Error     `json:"error,omitempty"`
}

// Violation is one kind of denied operation.
type Violation struct {
	Kind    string `json:"kind"` // "syscall", or a network kind: dns, connect, sni_mismatch, host_mismatch, protocol, udp, private_address, limit
	Syscall string `json:"syscall,omitempty"`
	Host    string `json:"host,omitempty"` // the name or address the code asked for
	Port    uint16 `json:"port,omitempty"`
	Count   int    `json:"count"`
	Reason  string `json:"reason"`
}

// NewResult assembles the caller's view of a jail result and its output.
func NewResult(r *jail.Result, stdout, stderr string) *Result {
	out := &Result{
		ExitCode:   r.ExitCode,
		Signal:     r.Signal,
		Stdout:     stdout,
		Stderr:     stderr,
		Truncated:  r.Truncated,
		DurationMS: r.Duration.Milliseconds(),
		LimitsHit:  append([]string{}, r.LimitsHit...),
		Violations: []Violation{},
		Degraded:   r.Degraded,
	}
	for _, v := range r.Violations {
		out.Violations = append(out.Violations, Violation{Kind: v.Kind, Syscall: v.Syscall, Host: v.Host, Port: v.Port, Count: v.Count, Reason: v.Reason})
	}
	return out
}
