// Package sandbox is the composition root: it turns the user's configuration
// into the settings each mechanism takes and runs one execution, top to
// bottom. It holds no mechanism of its own.
//
// It is also the one door into the sandbox: front ends (internal/cli,
// mcpserver) import sandbox, config, audit and data types (lang's types
// such as lang.Error and lang.Program; the languages are read through
// sandbox.Languages, as lang's registry holds only what sandbox links in);
// never jail, egress, seccomp or lang/<language>.
//
// Executions ([Exec], [Run], [Pool]) return a [Result]; a layer that
// cannot be set up returns a [SetupError]; [Diagnose] is `crucible doctor`.
// [Tools] is the tool bridge of one process, which the caller makes once
// from the configuration, hands to each execution (in [Options] or
// [PoolOptions]), and closes: each execution gets a private tools channel
// to it, and a server with jail: true runs in a long-lived jail of its own
// (serverjail.go).
// [Secrets], likewise made once ([LoadSecrets]) and handed to each
// execution, give its code placeholders that the network swaps for the
// real values on their own hosts (secrets.go).
package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/randomid"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/policy/netpolicy"
	"github.com/cruciblehq/crucible/toolbridge"
	"github.com/cruciblehq/crucible/userns"
	"github.com/cruciblehq/crucible/violation"
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

// ExitSetup is the exit code of an execution that could not be set up.
const ExitSetup = jail.ExitSetup

// SetupError says that a layer of the sandbox could not be set up, and how
// to fix it. Its text is safe to show the model.
type SetupError = jail.SetupError

// Options are one execution's streams, audit trail, tools and secrets. A
// nil Stdout or Stderr is captured into the Result instead (up to the
// output limit); a nil Stdin is empty; a nil Audit records nothing; a nil
// Tools gives the code no tools channel. Secrets must be given, from
// [LoadSecrets], when the configuration has secrets: an execution never
// reads their sources itself.
type Options struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Audit          *audit.Writer
	Tools          *Tools
	Secrets        *Secrets
	// Skills is a host directory the code sees read-only at /skills (and
	// imports from); "" gives it none.
	Skills string
	// SavedSkills is a host directory laid over Skills at /skills, its
	// files hiding Skills' of the same name: the caller's own saved
	// skills, which no other caller's code sees. It needs Skills.
	SavedSkills string
	// Caller is whom the execution runs for: what tool rules see of it,
	// and who approves the calls they say a human must (none: such calls
	// are refused). Its Language is set from the program.
	Caller toolbridge.Caller
}

// Exec runs args in a fresh jail configured by cfg.
func Exec(ctx context.Context, cfg *config.Config, args []string, o Options) (*Result, error) {
	x := newExecution(jailSpec(&cfg.Sandbox, args, nil), o, nil)
	o.Caller.Language = ""
	x.begin(audit.Execution{Command: args}, o.Caller)
	return x.run(ctx, cfg)
}

// Run runs a language runtime's program in a fresh jail configured by cfg;
// the Result carries what its runner reported.
func Run(ctx context.Context, cfg *config.Config, p *lang.Program, o Options) (*Result, error) {
	x := newExecution(programSpec(&cfg.Sandbox, p), o, p)
	x.endOnReport(p)
	o.Caller.Language = p.Lang
	x.begin(programRecord(p.Lang, p.Files[p.Main]), o.Caller)
	return x.run(ctx, cfg)
}

// programRecord is what the audit trail says of a program: its language
// and which source, by hash (the source itself may hold anything).
func programRecord(language string, src []byte) audit.Execution {
	return audit.Execution{Language: language, SourceHash: fmt.Sprintf("%x", sha256.Sum256(src))}
}

// execution is one jail's run, from its spec to its record. One-shot and
// pooled executions take the same steps — newExecution, attach, begin,
// finish — so that their results and audit lines cannot disagree; a pooled
// one only takes them at other times (it is attached and started before
// its work arrives, and begins when it does).
type execution struct {
	spec    *jail.Spec
	audit   *audit.Writer
	net     *netLog      // nil without a network
	network netSetup     // builds the jail's network; nil without one
	tools   *toolChannel // nil without tools
	loaded  *Secrets     // the caller's secrets, if any
	secrets *execSecrets // this execution's placeholders, once attached
	streams []*redactor  // the caller's writers, redacted
	err     error        // from newExecution: the execution cannot run
	program bool         // a runner reports on fd 3

	stdout, stderr *bytes.Buffer // captured output, when the caller gave no writer
	report         bytes.Buffer  // what the runner wrote on fd 3
	released       sync.Once

	ev     audit.Execution // set by begin
	began  time.Time
	caller toolbridge.Caller
}

// newExecution is the execution of spec with o: a command's, or the
// program p's (nil for a command).
func newExecution(spec *jail.Spec, o Options, p *lang.Program) *execution {
	x := &execution{spec: spec, audit: o.Audit, program: p != nil, loaded: o.Secrets}
	spec.Stdin, spec.Stdout, spec.Stderr = o.Stdin, o.Stdout, o.Stderr
	spec.Layers, spec.Over = skillsLayers(o.Skills, o.SavedSkills)
	if o.Stdout == nil {
		x.stdout = &bytes.Buffer{}
		spec.Stdout = x.stdout
	}
	if o.Stderr == nil {
		x.stderr = &bytes.Buffer{}
		spec.Stderr = x.stderr
	}
	if x.program {
		spec.Result = &x.report
	}
	if o.Tools != nil {
		x.tools, x.err = newToolChannel(o.Tools, spec, o.Audit, p != nil && p.ToolPipes)
	}
	return x
}

// endOnReport lets the execution end on the runner's report, for a runner
// that gives its exit code there (lang.Program.ReportsExit).
func (x *execution) endOnReport(p *lang.Program) {
	if p.ReportsExit {
		x.spec.ReportedExit = reportedExit
	}
}

// reportedExit is the exit code the runner gave in its report, if it gave
// one (jail.Spec.ReportedExit, asked once the report is complete): a pooled
// execution then ends without waiting for the kernel to tear the runner
// down. The report is as the runner wrote it: a warm worker's begins with
// lang.ReadyMark and lang.TakenMark (see workerMarks).
func reportedExit(report []byte) (int, bool) {
	report = bytes.TrimPrefix(bytes.TrimPrefix(report, []byte{lang.ReadyMark}), []byte{lang.TakenMark})
	o, err := lang.ParseOutcome(report)
	if err != nil || o.Exit == nil {
		return 0, false
	}
	return *o.Exit, true
}

// attach gives the jail its secrets' placeholders and the network cfg
// allows (its APIs' hosts included), if any.
func (x *execution) attach(cfg *config.Config) error {
	n := apiNetwork(cfg)
	switch {
	case x.loaded != nil:
		var err error
		if x.secrets, err = x.loaded.forExecution(); err != nil {
			return err
		}
		x.protect()
		n = x.secrets.network(n)
	case len(cfg.Secrets) > 0 || hasRules(cfg):
		return errors.New("sandbox: the configuration has secrets or API rules, but they were not loaded (sandbox.LoadSecrets) and given to the execution")
	}
	var err error
	x.net, x.network, err = attachNetwork(x.spec, n, x.audit, x.secrets)
	if x.net == nil {
		return err
	}
	if x.secrets != nil {
		x.net.redact = x.secrets.redact
	}
	if x.ev.Exec != "" {
		// A one-shot execution has begun already: its decisions are its own.
		x.net.begin(x.ev.Exec, x.caller)
	}
	return err
}

// protect puts the placeholders and the trusted certificates in the jail,
// and the real values' redaction on what leaves it for the caller.
func (x *execution) protect() {
	s := x.secrets
	x.spec.Env = setEnv(x.spec.Env, s.env())
	x.spec.Files = append(slices.Clone(x.spec.Files), jail.File{Path: trustFile, Data: s.bundle, Over: hostBundles})
	// The caller's own writers get the output as it comes, redacted as
	// it goes; captured output is redacted in finish.
	shared := x.stdout == nil && x.stderr == nil && jail.SameWriter(x.spec.Stdout, x.spec.Stderr)
	if x.stdout == nil && x.spec.Stdout != nil {
		r := newRedactor(s.set, x.spec.Stdout)
		x.streams = append(x.streams, r)
		x.spec.Stdout = r
		if shared {
			x.spec.Stderr = r // one writer for both stays one (one output limit)
		}
	}
	if x.stderr == nil && x.spec.Stderr != nil && !shared {
		r := newRedactor(s.set, x.spec.Stderr)
		x.streams = append(x.streams, r)
		x.spec.Stderr = r
	}
	if x.tools != nil {
		x.tools.SetRedact(s.set.Redact)
	}
}

// begin marks the moment the execution's work starts, for caller: it gets
// its id, and its duration counts from here (not from a warm jail's birth).
func (x *execution) begin(ev audit.Execution, caller toolbridge.Caller) {
	ev.Exec, ev.Client = randomid.New("", 8), caller.Client
	x.ev, x.began, x.caller = ev, time.Now(), caller
	if x.net != nil {
		x.net.begin(ev.Exec, caller)
	}
	if x.tools != nil {
		x.tools.serve(ev.Exec, caller)
	}
}

// run attaches the network and runs the jail to its end: a one-shot
// execution, begun already.
func (x *execution) run(ctx context.Context, cfg *config.Config) (*Result, error) {
	if x.err != nil {
		return x.finish(nil, x.err)
	}
	if err := x.attach(cfg); err != nil {
		return x.finish(nil, err)
	}
	return x.finish(runJail(ctx, x.spec, x.network))
}

// finish turns the jail's result into the caller's, and records the
// execution and its violations in the audit trail.
func (x *execution) finish(res *jail.Result, err error) (*Result, error) {
	x.release()
	err = x.secrets.redactErr(err)
	if err != nil {
		x.ev.Error = err.Error()
		_ = x.audit.Log(x.ev)
		return nil, err
	}
	res.Duration = time.Since(x.began)
	if x.net != nil {
		res.Violations = append(res.Violations, x.net.result()...)
	}
	if x.tools != nil {
		res.Violations = append(res.Violations, x.tools.refused.list...)
	}
	// Before the audit trail gets them, as the result does below.
	x.secrets.redactViolations(res.Violations)
	for _, v := range res.Violations {
		_ = x.audit.Log(audit.Violation{Exec: x.ev.Exec, Client: x.ev.Client, Violation: v})
	}
	x.ev.ExitCode, x.ev.Signal, x.ev.DurationMS = res.ExitCode, res.Signal, res.Duration.Milliseconds()
	x.ev.LimitsHit, x.ev.Degraded = res.LimitsHit, res.Degraded
	_ = x.audit.Log(x.ev)

	out := newResult(res)
	if x.net != nil && !x.net.offline {
		out.Network = x.net.usage()
		out.Secrets = x.net.secretUses()
	}
	if x.tools != nil {
		out.ToolCalls = append(out.ToolCalls, x.tools.Calls()...)
	}
	if x.stdout != nil {
		out.Stdout = x.stdout.String()
	}
	if x.stderr != nil {
		out.Stderr = x.stderr.String()
	}
	if x.program {
		o := outcome(x.report.Bytes())
		if res.ResultCut {
			o = &lang.Outcome{Error: &lang.Error{Name: "CrucibleError", Message: fmt.Sprintf(
				"the program's result (or its uncaught error) is larger than its limit (sandbox.max_output, --max-output: %v): return less, or write it to a file under /workspace", config.ByteSize(x.spec.MaxOutput))}}
		}
		out.Result, out.Error = o.Result, o.Error
	}
	x.redact(out)
	return out, nil
}

// redact is the last line of defence: no real value of a secret leaves in
// a result, whatever went wrong before.
func (x *execution) redact(out *Result) {
	e := x.secrets
	if e == nil {
		return
	}
	out.Stdout, out.Stderr = e.redact(out.Stdout), e.redact(out.Stderr)
	if out.Result != nil {
		out.Result = e.set.Redact(out.Result)
	}
	if out.Error != nil {
		out.Error.Name, out.Error.Message, out.Error.Stack = e.redact(out.Error.Name), e.redact(out.Error.Message), e.redact(out.Error.Stack)
	}
	e.redactViolations(out.Violations)
}

// release ends what the execution holds besides its jail, once the jail's
// command is gone: its tools channel, whose calls still running are
// cancelled and whose record is then final. The first call does it; a
// second waits for it (a pooled jail's goroutine may still be tearing the
// jail down as its execution finishes).
func (x *execution) release() {
	x.released.Do(func() {
		if x.tools != nil {
			x.tools.Stop()
		}
		for _, r := range x.streams {
			r.close()
		}
	})
}

// programSpec is the jail that runs a program.
func programSpec(s *config.Sandbox, p *lang.Program) *jail.Spec {
	spec := jailSpec(s, p.Args, p.Env)
	spec.ReadOnly = append(slices.Clone(spec.ReadOnly), p.ReadOnly...)
	spec.Self = p.Self
	for _, path := range slices.Sorted(maps.Keys(p.Files)) {
		spec.Files = append(spec.Files, jail.File{Path: path, Data: p.Files[path]})
	}
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

// CheckConfig reports what cfg asks for that cannot be: host paths that do not
// exist (or a workspace that is not a directory) and network rules that do
// not compile, so that the operator hears of a typo before any jail is built.
func CheckConfig(cfg *config.Config) error {
	if err := checkPaths(&cfg.Sandbox); err != nil {
		return err
	}
	if err := checkServers(cfg); err != nil {
		return err
	}
	if err := checkSecrets(cfg); err != nil {
		return err
	}
	_, err := NetworkPolicy(&cfg.Network)
	var re *netpolicy.RuleError
	if errors.As(err, &re) {
		// Name the rule as the file does, with its line.
		return keyError(cfg, config.KeyPath("network."+re.List, re.Index, re.Rule), "%q: %v", re.Rule, re.Err)
	}
	return err
}

// keyError is a problem with the key at path of cfg, named as the file
// names it: "crucible.yaml:7: network.allow[2]: ...".
func keyError(cfg *config.Config, path, format string, args ...any) error {
	msg := path + ": " + fmt.Sprintf(format, args...)
	if where := cfg.Where(path); where != "" {
		msg = where + ": " + msg
	}
	return errors.New(msg)
}

// CheckAllowRule checks one allow rule as cfg's network would take it (with
// its private ranges), for a rule given on its own: a command-line flag.
func CheckAllowRule(cfg *config.Config, rule string) error {
	n := cfg.Network
	n.Allow, n.AllowAll = []string{rule}, false
	_, err := NetworkPolicy(&n)
	var re *netpolicy.RuleError
	if errors.As(err, &re) {
		return re.Err
	}
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
		if why := unsafeWorkspace(s.Workspace, fi); why != "" && !s.UnsafeWorkspace {
			return fmt.Errorf("workspace: %s %s: the code would write there as its owner; give a directory of its own owned by an unprivileged user (chown), or set sandbox.unsafe_workspace (--unsafe-workspace) if you mean it", s.Workspace, why)
		}
	}
	for _, p := range s.RO {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("ro: %w", err)
		}
	}
	return nil
}

// systemDirs are host directories that no workspace may be, or be above:
// writing there (as the directory's owner: the workspace is bound idmapped)
// changes the host itself.
var systemDirs = []string{"/bin", "/boot", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
	"/opt", "/run", "/sbin", "/srv", "/tmp", "/usr", "/var", "/var/tmp"}

// unsafeWorkspace says why dir (whose Stat is fi) must not be a workspace
// unless the operator insists, or "" if it may: owned by root, a system
// directory or above one, or a home directory or above it.
func unsafeWorkspace(dir string, fi os.FileInfo) string {
	above := func(d string) bool { return d == dir || strings.HasPrefix(d, dir+"/") }
	for _, d := range systemDirs {
		if above(d) {
			return "is a system directory"
		}
	}
	for _, home := range homes() {
		if above(home) {
			return "is a home directory, or above one"
		}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && userns.HostRoot(st.Uid) {
		return "is owned by root"
	}
	return ""
}

// homes are the invoking user's home and every account's in /etc/passwd.
func homes() []string {
	var hs []string
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		hs = append(hs, filepath.Clean(h))
	}
	b, _ := os.ReadFile("/etc/passwd")
	for line := range strings.Lines(string(b)) {
		if f := strings.Split(strings.TrimSpace(line), ":"); len(f) >= 6 && filepath.IsAbs(f[5]) && f[5] != "/" {
			hs = append(hs, filepath.Clean(f[5]))
		}
	}
	return hs
}

// Warnings are what cfg opens up that a person running it should hear of
// before every execution.
func Warnings(cfg *config.Config) []string {
	var w []string
	if cfg.Network.AllowAll {
		w = append(w, "network.allow_all is on: the code may reach every public host (private and metadata addresses stay blocked)")
	}
	if s := &cfg.Sandbox; s.Workspace != "" && s.UnsafeWorkspace {
		if fi, err := os.Stat(s.Workspace); err == nil {
			if why := unsafeWorkspace(s.Workspace, fi); why != "" {
				w = append(w, fmt.Sprintf("sandbox.unsafe_workspace is on: the workspace %s %s, and the code writes there as its owner", s.Workspace, why))
			}
		}
	}
	return w
}

// jailSpec maps the sandbox section of the configuration onto a jail.Spec.
// The command's environment is defaultEnv, then progEnv (a runtime's), then
// the configured variables.
func jailSpec(s *config.Sandbox, args []string, progEnv map[string]string) *jail.Spec {
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
	ToolCalls  []ToolCall  `json:"tool_calls"` // in the order the code made them

	// Network is what the execution's connections carried; nil without
	// a network.
	Network *NetworkUse `json:"network,omitempty"`

	// Secrets is the receipt: where each secret's value went, by request
	// and part of it; none when no secret went anywhere.
	Secrets []SecretUse `json:"secrets,omitempty"`

	// From `crucible run`: the program's value, and its uncaught error.
	Result json.RawMessage `json:"result,omitempty"`
	Error  *lang.Error     `json:"error,omitempty"`

	// Jail says how it got its jail: "warm" (a pool's, ready when the
	// execution took it), "cold" (a pool's, still starting), or "" (one
	// made for it alone).
	Jail string `json:"-"`
}

// SecretUse is a line of the receipt: Count requests of Method to
// Host's Path got the secret Name's value in their Where ("header",
// "query", "path", "body", "trailer"), or were signed with its key
// ("signature"). Path is as the code sent it (with placeholders).
type SecretUse struct {
	Name   string `json:"name"`
	Host   string `json:"host"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Where  string `json:"where"`
	Count  int    `json:"count"`
}

// NetworkUse counts the TCP connections that an execution's network
// carried to their end, and their bytes: out is what the code sent.
type NetworkUse struct {
	Connections int   `json:"connections"`
	BytesOut    int64 `json:"bytes_out"`
	BytesIn     int64 `json:"bytes_in"`
}

// Violation is one kind of denied operation (see package violation for the
// kinds).
type Violation = violation.Violation

// newResult is the caller's view of a jail's result.
func newResult(r *jail.Result) *Result {
	out := &Result{
		ExitCode:   r.ExitCode,
		Signal:     r.Signal,
		Truncated:  r.Truncated,
		DurationMS: r.Duration.Milliseconds(),
		LimitsHit:  append([]string{}, r.LimitsHit...),
		Violations: append([]Violation{}, r.Violations...),
		Degraded:   r.Degraded,
		ToolCalls:  []ToolCall{},
	}
	return out
}
