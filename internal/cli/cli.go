// Package cli implements the crucible command: argument parsing and output
// for each subcommand, on top of the sandbox package. It maps every outcome to
// an exit code; main only calls Run.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/cruciblehq/crucible/internal/asuser"
	"github.com/cruciblehq/crucible/owncgroup/systemdscope"
	"github.com/cruciblehq/crucible/userns"
)

// Exit codes of crucible itself; a command's own exit code passes through.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// Version is set at build time with -ldflags "-X ...cli.Version=v1.2.3".
var Version = "dev"

// Env is the process's world, passed in so that tests can run the CLI in
// process.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

const usage = `crucible runs untrusted code in a fresh, fail-closed Linux sandbox.

Usage:
  crucible exec [flags] -- CMD [ARGS...]   run a command in a new jail
  crucible run [flags] FILE|-              run a TypeScript, JavaScript or Python program in a new jail
  crucible serve [--http ADDR]             serve MCP (execute, search_tools) on stdio or HTTP
  crucible tools [--json | --ts]           list the tools of the configured MCP servers
  crucible login NAME                      log in to the remote MCP server NAME (OAuth)
  crucible logout NAME                     forget the login to NAME
  crucible doctor                          check what this kernel supports
  crucible version                         print the version

Run 'crucible exec -h', 'crucible run -h' or 'crucible serve -h' for their flags.
`

// Main is the crucible command, as the process's main runs it: os.Args,
// the process's stdio, SIGINT and SIGTERM to stop. As a user other than
// root, the commands that build jails run as root of a user namespace of
// their own (see package userns): the process the user started only waits
// for that copy, from the init of package asuser, and never gets here. The
// copy, on cgroup v2, asks the user's systemd for a delegated scope
// (package systemdscope), in which its jails are born.
func Main() int {
	// In the copy, Enter settles the namespace asuser made; without one,
	// this process goes on as the user.
	jails := asuser.Jails(os.Args)
	if code, _ := userns.Enter(jails); code >= 0 {
		return code
	}
	if jails {
		// A failure is the cgroup layer's to report, with its fix.
		_, _ = systemdscope.Join(context.Background())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
}

// Run runs the crucible command line args (without the program name).
func Run(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "exec":
		return runExec(ctx, args[1:], env)
	case "run":
		return runRun(ctx, args[1:], env)
	case "serve":
		return runServe(ctx, args[1:], env)
	case "tools":
		return runTools(ctx, args[1:], env)
	case "doctor":
		return runDoctor(ctx, args[1:], env)
	case "login":
		return runLogin(ctx, args[1:], env)
	case "logout":
		return runLogout(ctx, args[1:], env)
	case "version", "--version":
		fmt.Fprintln(env.Stdout, "crucible", Version)
		return ExitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(env.Stdout, usage)
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "crucible: unknown command %q (try 'crucible help')\n", args[0])
	return ExitUsage
}

// newFlagSet is the flag set of crucible name, whose help is usage and then
// the flags.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs, printing help to stdout on -h and a single
// line on error. ok is false when the caller should return code.
func parseFlags(fs *flag.FlagSet, args []string, env Env) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(env.Stdout)
		fs.Usage()
		return ExitOK, false
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible %s: %v\n", fs.Name(), err)
		return ExitUsage, false
	}
	return 0, true
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}
