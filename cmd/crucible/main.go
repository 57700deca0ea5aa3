// Command crucible runs untrusted code in a fail-closed Linux sandbox.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cruciblehq/crucible/internal/cli"
	"github.com/cruciblehq/crucible/sandbox"
)

func main() {
	// The engine's worker is this binary, and never returns from here. (The
	// jail's own processes are this binary too, entered before main: see
	// package jail/internal/child.)
	sandbox.Hook()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
