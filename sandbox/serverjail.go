package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os/exec"
	"slices"
	"strings"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/toolbridge"
)

// serverStart returns the Start of a server with jail: true: each start
// runs the server in a long-lived jail of its own, built by the same code
// as an execution's (jailSpec, attachNetwork) from the server's settings,
// and degraded where cfg's sandbox section allows. Its network decisions
// go to w (nil: nowhere) under the id "server:NAME".
//
// Each instance runs the args, env and working directory the bridge gives
// it (a client's: {client} written out).
func serverStart(name string, s config.Server, allowDegraded []string, w *audit.Writer) func(context.Context, toolbridge.Server, io.Writer) (*toolbridge.Process, error) {
	return func(ctx context.Context, inst toolbridge.Server, stderr io.Writer) (*toolbridge.Process, error) {
		s := s
		s.Args, s.Env, s.Cwd = inst.Args, inst.Env, inst.Dir
		spec, err := serverSpec(s, allowDegraded)
		if err != nil {
			return nil, err
		}
		n := s.JailNetwork()
		// The server's network decisions are enforced and audited like an
		// execution's, under the server's name: there is no execution.
		log, network, err := attachNetwork(spec, &n, w, nil)
		if err != nil {
			return nil, fmt.Errorf("servers.%s.network: %w", name, err)
		}
		if log != nil {
			log.begin("server:"+name, toolbridge.Caller{})
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		spec.Stdin, spec.Stdout, spec.Stderr = inR, outW, stderr
		ended := make(chan error, 1)
		go func() {
			res, err := runJail(ctx, spec, network)
			// The pipes end with the jail: the client reads the end of
			// the server's output, and a write to its input fails
			// instead of blocking.
			_ = outW.Close()
			inR.CloseWithError(errors.New("the server's jail has ended"))
			ended <- jailEnd(ctx, res, err)
		}()
		return &toolbridge.Process{Stdin: inW, Stdout: outR, Wait: func() error { return <-ended }}, nil
	}
}

// jailEnd says why a server's jail ended, in words safe for the code: nil
// when its context ended it (the bridge stopped it).
func jailEnd(ctx context.Context, res *jail.Result, err error) error {
	var se *jail.SetupError
	switch {
	case errors.As(err, &se):
		return se // its Error names the layer and the fix, never a host path
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("its jail failed: %w", err)
	case len(res.LimitsHit) > 0:
		return fmt.Errorf("its jail exited with code %d, at its %s limit", res.ExitCode, strings.Join(res.LimitsHit, " and "))
	case len(res.Violations) > 0:
		return fmt.Errorf("its jail exited with code %d after a denied %s", res.ExitCode, res.Violations[0].Kind)
	}
	return fmt.Errorf("its jail exited with code %d", res.ExitCode)
}

// serverSpec is the jail of a jailed server: the server's command and
// args, its env and nothing else, its ro paths and its command's (a
// command under /usr is in every jail already), its limits and no
// timeout. Its working directory is /workspace, a tmpfs of its own,
// unless cwd names another path in the jail.
func serverSpec(s config.Server, allowDegraded []string) (*jail.Spec, error) {
	cmd, err := exec.LookPath(s.Command)
	if err != nil {
		return nil, fmt.Errorf("its command %s is not found", s.Command[strings.LastIndexByte(s.Command, '/')+1:])
	}
	ro := slices.Clone(s.RO)
	if !strings.HasPrefix(cmd, "/usr/") && !slices.ContainsFunc(ro, func(p string) bool { return cmd == p || strings.HasPrefix(cmd, p+"/") }) {
		ro = append(ro, cmd)
	}
	l := s.JailLimits()
	sb := config.Default().Sandbox
	sb.Memory, sb.Pids, sb.CPUs = l.Memory, l.Pids, l.CPUs
	sb.RO, sb.AllowDegraded = ro, allowDegraded
	spec := jailSpec(&sb, append([]string{cmd}, s.Args...), nil)
	// An empty environment plus its env: not even the jail's defaults.
	spec.Env = nil
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		spec.Env = append(spec.Env, k+"="+s.Env[k])
	}
	spec.Dir = s.Cwd
	spec.Timeout = 0               // it lives until the bridge stops it
	spec.MaxOutput = math.MaxInt64 // its stdout is the MCP connection
	return spec, nil
}
