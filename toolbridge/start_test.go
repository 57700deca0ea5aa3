package toolbridge

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// execStart is a Start that runs s's command as the bridge would, through
// the process interface a jail uses; exited is closed once it has exited.
func execStart(s Server, exited chan struct{}) func(context.Context, Server, io.Writer) (*Process, error) {
	return func(ctx context.Context, _ Server, stderr io.Writer) (*Process, error) {
		cmd := exec.CommandContext(ctx, s.Command, s.Args...)
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return &Process{Stdin: in, Stdout: out, Wait: func() error {
			err := cmd.Wait()
			close(exited)
			if ctx.Err() != nil {
				return nil
			}
			return err
		}}, nil
	}
}

// A server with a Start is started by it, spoken to over its pipes, and
// stopped (waited for) when the bridge closes.
func TestStart(t *testing.T) {
	srv := goServer(t)
	exited := make(chan struct{})
	srv.Start = execStart(srv, exited)
	srv.Command = "not-run-by-the-bridge"
	b, err := New(Options{Servers: map[string]Server{"go": srv}})
	if err != nil {
		t.Fatal(err)
	}
	if out := mustCall(t, b.NewSession(), "go", "echo", `{"text": "hi"}`); out != `"hi"` {
		t.Errorf("echo = %s", out)
	}
	b.Close()
	select {
	case <-exited:
	default:
		t.Error("Close returned before the process had exited")
	}
}

// A process that cannot run fails the call with its own account of why,
// at once; so does a Start that fails.
func TestStartFails(t *testing.T) {
	const why = "jail: cgroup: no cgroup v2 (fix: run `crucible doctor`)"
	srv := goServer(t)
	srv.Start = func(context.Context, Server, io.Writer) (*Process, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		_ = outW.Close() // as a jail that ended before it began
		_ = inR.Close()
		return &Process{Stdin: inW, Stdout: outR, Wait: func() error { return errors.New(why) }}, nil
	}
	failing := goServer(t)
	failing.Start = func(context.Context, Server, io.Writer) (*Process, error) {
		return nil, errors.New("its command " + failing.Command + " is not found")
	}
	b := newBridge(t, Options{Servers: map[string]Server{"go": srv, "none": failing}})
	s := b.NewSession()
	if _, err := call(t, s, "go", "echo", `{}`); err == nil || !strings.Contains(err.Error(), "tool server go is not available: "+why) {
		t.Errorf("err = %v; want the process's own error", err)
	}
	_, err := call(t, s, "none", "echo", `{}`)
	if err == nil || !strings.Contains(err.Error(), "is not found") || strings.Contains(err.Error(), failing.Command) {
		t.Errorf("err = %v; want Start's error, the command's path redacted", err)
	}
}

// A jailed server sees its read-only binds at their host paths: they are
// redacted to their last element.
func TestRedactPaths(t *testing.T) {
	r := redactor(Server{Command: "node", Paths: []string{"/srv/mcp/node_modules/", "/", "/srv"}}, "")
	got := r.Replace("at /srv/mcp/node_modules/x/index.js:3 (/srv/mcp/node_modules) /srv/other")
	if want := "at node_modules/x/index.js:3 (node_modules) /srv/other"; got != want {
		t.Errorf("redacted: %q; want %q", got, want)
	}
}
