package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/sandbox"
	"github.com/cruciblehq/crucible/toolbridge"
)

const execUsage = `Usage: crucible exec [flags] -- CMD [ARGS...]

Runs CMD in a brand-new jail, streams its output, and exits with its exit
code: 124 when the time limit killed it, 137 when the memory limit did, 125
when the jail could not be set up. Every flag can also be set in the config
file's sandbox section; flags win.

Flags:
`

// execFlags are the raw values of crucible exec's flags, applied on top of
// the config file once it is loaded.
type execFlags struct {
	config, timeout, memory, tmpSize, maxOutput, workspace, audit string
	pids                                                          int
	cpus                                                          float64
	ro, env, degraded, allowNet, secret                           listFlag
	json, unsafeWorkspace, approveAll                             bool
}

func (f *execFlags) register(fs *flag.FlagSet) {
	d := config.Default().Sandbox
	fs.StringVar(&f.config, "config", "", configFlagHelp)
	fs.StringVar(&f.timeout, "timeout", d.Timeout.String(), "wall-clock time limit")
	fs.StringVar(&f.memory, "memory", d.Memory.String(), "memory limit (memory+swap)")
	fs.IntVar(&f.pids, "pids", d.Pids, "most processes and threads at once")
	fs.Float64Var(&f.cpus, "cpus", d.CPUs, "CPU quota, in CPUs (fractions allowed)")
	fs.StringVar(&f.tmpSize, "tmp-size", d.TmpSize.String(), "size of the private /tmp (and of the fresh /workspace)")
	fs.StringVar(&f.workspace, "workspace", "", "host directory bound read-write at /workspace (default: a fresh empty one, removed afterwards)")
	fs.BoolVar(&f.unsafeWorkspace, "unsafe-workspace", false, "allow a --workspace owned by root, or a system or home directory (the code writes there as its owner)")
	fs.Var(&f.ro, "ro", "host `PATH` bound read-only at the same path (repeatable)")
	fs.Var(&f.env, "env", "`K=V` added to the command's environment (repeatable)")
	fs.StringVar(&f.maxOutput, "max-output", d.MaxOutput.String(), "per-stream output cap; the rest is dropped and reported")
	fs.BoolVar(&f.json, "json", false, "print one JSON result object instead of streaming")
	fs.StringVar(&f.audit, "audit", "", "append the audit trail (NDJSON: the execution, each denied operation) to this `FILE`")
	fs.Var(&f.allowNet, "allow-net", "let the code reach `HOST[:PORT]` (a name, *.domain, an IP or CIDR; default ports 80 and 443; repeatable); '*' allows every public name")
	fs.Var(&f.secret, "secret", "`NAME=SOURCE@HOST,...`: the code sees NAME as a placeholder, which only HOSTs (rules as for --allow-net) receive as the value of SOURCE, env:VAR or file:/path, over TLS (repeatable)")
	fs.Var(&f.degraded, "allow-degraded", "`LAYER,...` that may be missing: "+strings.Join(config.DegradableLayers, ", "))
	fs.BoolVar(&f.approveAll, "approve-all", false, "let out, unasked, every tool call that a rule says a human must approve (approve: true); without it they are refused, as there is no one to ask")
}

// load builds the configuration: the file loadConfig finds (or the
// defaults), then each flag that was given.
func (f *execFlags) load(fs *flag.FlagSet) (*config.Config, error) {
	// Unlike serve and tools, run and exec do not say which file they read:
	// their stderr is the command's own, which scripts capture and compare,
	// and a line on every execution would be in it. A file that fails to
	// load names itself in the error.
	cfg, _, err := loadConfig(f.config)
	if err != nil {
		return nil, err
	}
	s := &cfg.Sandbox
	fs.Visit(func(fl *flag.Flag) {
		if err != nil {
			return
		}
		switch fl.Name {
		case "timeout":
			err = s.Timeout.UnmarshalText([]byte(f.timeout))
		case "memory":
			s.Memory, err = config.ParseByteSize(f.memory)
		case "tmp-size":
			s.TmpSize, err = config.ParseByteSize(f.tmpSize)
		case "max-output":
			s.MaxOutput, err = config.ParseByteSize(f.maxOutput)
		case "pids":
			s.Pids = f.pids
		case "cpus":
			s.CPUs = f.cpus
		case "workspace":
			s.Workspace, err = filepath.Abs(f.workspace)
		case "unsafe-workspace":
			s.UnsafeWorkspace = f.unsafeWorkspace
		case "audit":
			cfg.Audit.File, err = filepath.Abs(f.audit)
		case "ro":
			for _, p := range f.ro {
				a, aerr := filepath.Abs(p)
				err = errors.Join(err, aerr)
				s.RO = append(s.RO, a)
			}
		case "env":
			if s.Env == nil {
				s.Env = map[string]string{}
			}
			for _, kv := range f.env {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					err = fmt.Errorf("--env %q: want K=V", k)
					return
				}
				s.Env[k] = v
			}
		case "allow-net":
			for _, h := range f.allowNet {
				if h == "*" {
					cfg.Network.AllowAll = true
					continue
				}
				if err = sandbox.CheckAllowRule(cfg, h); err != nil {
					err = fmt.Errorf("%q: %w", h, err)
					break
				}
				cfg.Network.Allow = append(cfg.Network.Allow, h)
			}
		case "secret":
			if cfg.Secrets == nil {
				cfg.Secrets = map[string]config.Secret{}
			}
			for _, v := range f.secret {
				// Hosts hold no '@'; a file's path may.
				name, rest, ok := strings.Cut(v, "=")
				i := strings.LastIndexByte(rest, '@')
				if !ok || i < 0 {
					// Nothing of it is quoted: it may hold the value, given by mistake.
					err = errors.New("want NAME=env:VAR@HOST[,HOST] or NAME=file:/path@HOST[,HOST]")
					break
				}
				cfg.Secrets[name] = config.Secret{From: rest[:i], Hosts: strings.Split(rest[i+1:], ",")}
			}
		case "allow-degraded":
			for _, l := range f.degraded {
				s.AllowDegraded = append(s.AllowDegraded, strings.Split(l, ",")...)
			}
		}
		if err != nil {
			err = fmt.Errorf("--%s: %w", fl.Name, err)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Normalize()
	return cfg, sandbox.CheckConfig(cfg)
}

func runExec(ctx context.Context, args []string, env Env) int {
	fs := newFlagSet("exec", execUsage)
	var f execFlags
	f.register(fs)
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(env.Stderr, "crucible exec: no command given (usage: crucible exec [flags] -- CMD [ARGS...])")
		return ExitUsage
	}
	cfg, err := f.load(fs)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible exec: %v\n", err)
		return ExitUsage
	}

	return execute(cfg, &f, env.Stdin, env, func(st sandbox.Options) (*sandbox.Result, error) {
		return sandbox.Exec(ctx, cfg, fs.Args(), st)
	})
}

// execute runs one execution with the caller's streams (or, for --json,
// captured) and reports it: streamed output and notes on stderr, or one JSON
// object. It returns crucible's exit code.
func execute(cfg *config.Config, f *execFlags, stdin io.Reader, env Env, run func(sandbox.Options) (*sandbox.Result, error)) int {
	asJSON := f.json
	st := sandbox.Options{Stdin: stdin, Stdout: env.Stdout, Stderr: env.Stderr}
	warn(cfg, env)
	if f.approveAll {
		fmt.Fprintln(env.Stderr, "crucible: warning: --approve-all: every tool call that a rule says a human must approve goes out unasked")
		st.Caller.Approve = func(context.Context, toolbridge.Approval) toolbridge.Answer {
			return toolbridge.Answer{Action: toolbridge.Accept, Why: "--approve-all: no human was asked"}
		}
	}
	if cfg.Audit.File != "" {
		// Asked for and not writable: refuse, rather than run unrecorded.
		w, err := audit.Open(cfg.Audit.File)
		if err != nil {
			fmt.Fprintf(env.Stderr, "crucible: %v\n", err)
			return ExitUsage
		}
		defer func() {
			if err := w.Close(); err != nil {
				fmt.Fprintf(env.Stderr, "crucible: closing the audit log: %v\n", err)
			}
		}()
		st.Audit = w
	}
	// Read once, before anything runs: a missing source is an error now.
	sec, err := sandbox.LoadSecrets(cfg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible: %v\n", err)
		return ExitUsage
	}
	st.Secrets = sec
	// The configured tool servers, for this one execution: each starts on
	// the code's first call of it, and stops when the execution is done.
	tools, err := sandbox.NewTools(cfg, st.Audit, nil)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible: %v\n", err)
		return ExitUsage
	}
	defer tools.Close()
	st.Tools = tools
	if asJSON {
		st.Stdout, st.Stderr = nil, nil // captured into the result
	}
	res, err := run(st)
	if err != nil {
		return execError(err, asJSON, env)
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false) // a stack's "<module>" stays readable
		_ = enc.Encode(res)
		return res.ExitCode
	}
	report(res, &cfg.Sandbox, env)
	if len(res.Result) > 0 && string(res.Result) != "null" {
		// A program's value (its return, a module's default export), after
		// its own output: as JSON, so that "1" and 1 stay apart.
		var b bytes.Buffer
		if json.Compact(&b, res.Result) != nil {
			b.Reset()
			b.Write(res.Result)
		}
		fmt.Fprintf(env.Stdout, "%s\n", b.Bytes())
	}
	return res.ExitCode
}

// warn tells the operator, before anything runs, what cfg opens up.
func warn(cfg *config.Config, env Env) {
	for _, w := range sandbox.Warnings(cfg) {
		fmt.Fprintln(env.Stderr, "crucible: warning: "+w)
	}
}

// execError prints why nothing ran, and returns the exit code for it.
func execError(err error, asJSON bool, env Env) int {
	code, name := sandbox.ExitSetup, "Error"
	var se *sandbox.SetupError
	switch {
	case errors.Is(err, context.Canceled):
		code, name, err = 130, "Interrupted", errors.New("interrupted: the jail was killed and removed")
	case errors.As(err, &se):
		name = "SetupError"
	}
	if asJSON {
		e := map[string]string{"name": name, "message": err.Error()}
		if se != nil {
			e["layer"], e["fix"] = se.Layer, se.Fix
		}
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false) // a fix's "&&" stays readable
		_ = enc.Encode(map[string]any{"error": e})
	}
	fmt.Fprintf(env.Stderr, "crucible: %v\n", err)
	if se != nil && se.Detail != "" {
		// The operator's: it may name host paths, so it never goes into the
		// JSON result, which a model may read.
		fmt.Fprintf(env.Stderr, "crucible: detail: %s\n", se.Detail)
	}
	return code
}

// report tells a person at a terminal what the jail did besides running the
// command: limits hit, output cut, operations denied, layers missing.
func report(r *sandbox.Result, s *config.Sandbox, env Env) {
	for _, l := range r.Degraded {
		fmt.Fprintf(env.Stderr, "crucible: warning: ran without %s (allowed by --allow-degraded)\n", l)
	}
	for _, l := range r.LimitsHit {
		switch l {
		case "timeout":
			fmt.Fprintf(env.Stderr, "crucible: killed: time limit of %s reached\n", s.Timeout)
		case "memory":
			fmt.Fprintf(env.Stderr, "crucible: memory limit of %s reached\n", s.Memory)
		case "pids":
			fmt.Fprintf(env.Stderr, "crucible: process limit of %d reached\n", s.Pids)
		case "output":
			fmt.Fprintf(env.Stderr, "crucible: output cut at %s per stream\n", s.MaxOutput)
		}
	}
	for _, v := range r.Violations {
		what := v.Syscall
		if v.Kind != "syscall" {
			what = strings.TrimSpace(v.Kind + " " + v.Host) // a tool's names no host
			if v.Port != 0 {
				what += ":" + strconv.Itoa(int(v.Port))
			}
		}
		fmt.Fprintf(env.Stderr, "crucible: denied: %s (%s): %s\n", what, plural(v.Count, "time"), v.Reason)
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
