// Command crucible runs untrusted code in a fail-closed Linux sandbox.
package main

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/cruciblehq/crucible/internal/cli"
	"github.com/cruciblehq/crucible/userns"
)

// The jail's own processes and the embedded engine's worker are this binary
// too, but never get to main: they start from the inits of packages
// jail/internal/child and lang/js/worker, before the packages they do not
// need initialize (see main_test.go).
func main() {
	// As a user other than root, the commands that build jails run as root
	// of a user namespace of their own (see package userns).
	jails := len(os.Args) > 1 && slices.Contains([]string{"exec", "run", "serve", "tools", "doctor"}, os.Args[1])
	if code, _ := userns.Enter(jails); code >= 0 {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
