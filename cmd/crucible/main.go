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
	// The jail's child processes are this binary; they never return from here.
	sandbox.Hook()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
