package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/mcpserver"
	"github.com/cruciblehq/crucible/mcpserver/auth"
	"github.com/cruciblehq/crucible/sandbox"
	"github.com/cruciblehq/crucible/tracing"
)

const serveUsage = `Usage: crucible serve [--config FILE] [--http ADDR] [--metrics ADDR]

Serves MCP in "code mode": an agent gets two tools, search_tools (find the
tools of the configured MCP servers, and the HTTP APIs) and execute (run a
program that calls them, in a fresh jail). Without --http it speaks MCP on stdin and stdout,
for Claude Desktop, Claude Code and other clients that start it.

With --http it serves Streamable HTTP at http://ADDR/mcp, plus /healthz,
/readyz and /metrics. Every request to /mcp, /readyz and /metrics (unless
serve.ops_public) needs "Authorization: Bearer T": T is $CRUCIBLE_TOKEN,
else serve.token (or one of serve.tokens) from the config; with neither,
serve makes a token and prints it once on stderr, which it refuses to do
for an address that is not loopback.

SIGHUP (or POST /reload with a token) reads the config file again and
serves it from the next execution on; a file that does not load, or
that changes what only a restart can, is refused and the old one serves.

Flags:
`

func runServe(ctx context.Context, args []string, env Env) int {
	fs := newFlagSet("serve", serveUsage)
	cfgFile := fs.String("config", "", configFlagHelp)
	httpAddr := fs.String("http", "", "serve Streamable HTTP on this `ADDR` (host:port) instead of stdio")
	metricsAddr := fs.String("metrics", "", "with stdio, serve /healthz, /readyz and /metrics on this `ADDR`")
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "crucible serve: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(env.Stderr, "crucible serve: "+format+"\n", a...)
		return ExitUsage
	}
	cfg, src, err := loadConfig(*cfgFile)
	if err != nil {
		return fail("%v", err)
	}
	// Always said: serve's stderr is a log nobody reads until the tools are
	// not there, and then this line says why.
	servers := "no MCP servers"
	if n := len(cfg.Servers); n > 0 {
		servers = plural(n, "MCP server")
	}
	fmt.Fprintf(env.Stderr, "crucible serve: %s; serving %s\n", src, servers)
	fmt.Fprintf(env.Stderr, "crucible serve: %s\n", sandbox.EngineNote(cfg))
	p, err := prepareServe(cfg, *httpAddr, *metricsAddr, env)
	if err != nil {
		return fail("%v", err)
	}
	warn(cfg, env)
	endTracing, err := startTracing(ctx, cfg, env)
	if err != nil {
		return fail("%v", err)
	}
	defer endTracing() // last: the spans of the executions that Close ends are flushed

	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var aw *audit.Writer
	if cfg.Audit.File != "" {
		w, err := audit.Open(cfg.Audit.File)
		if err != nil {
			return fail("%v", err)
		}
		defer func() {
			if err := w.Close(); err != nil {
				fmt.Fprintf(env.Stderr, "crucible serve: closing the audit log: %v\n", err)
			}
		}()
		aw = w
	}
	// Read once, before anything runs: a missing source is an error now.
	secrets, err := sandbox.LoadSecrets(cfg)
	if err != nil {
		return fail("%v", err)
	}
	tools, err := sandbox.NewTools(cfg, aw, log)
	if err != nil {
		return fail("%v", err)
	}
	defer tools.Close()
	srv, err := mcpserver.New(mcpserver.Options{Config: cfg, Audit: aw, Tools: tools, Secrets: secrets, Logger: log, Version: Version, ReplicaKey: p.replicaKey,
		Reread: p.reread(*cfgFile, *httpAddr, *metricsAddr, env)})
	if err != nil {
		return fail("%v", err)
	}
	defer func() { _ = srv.Close() }() // stops the executions, deletes the workspaces
	stopReloads := reloadOnHUP(srv, env)
	defer stopReloads()
	// A client that dies leaves a broken pipe on stdout (and a log reader
	// that dies, on stderr), and Go ends a process that writes to one on
	// fd 1 or 2 with SIGPIPE, before the deferred Close removes the jails
	// and the workspaces' mounts. Asked for, the signal is only delivered
	// here: the write fails with EPIPE (over stdio, that ends the session),
	// and Close runs.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)

	if *httpAddr == "" {
		return serveStdio(ctx, srv, *metricsAddr, p, env, fail)
	}
	stop, err := listen(ctx, *httpAddr, srv.Handler(p.tokens), env)
	if err != nil {
		return fail("--http: %v", err)
	}
	defer stop()
	<-ctx.Done()
	drain(srv, time.Duration(cfg.Serve.DrainTimeout), env)
	return ExitOK
}

// startTracing exports traces where the environment or serve.otel says,
// saying so; end flushes them.
func startTracing(ctx context.Context, cfg *config.Config, env Env) (end func(), err error) {
	endTracing, traced, err := tracing.Setup(ctx, tracing.Settings{Endpoint: cfg.Serve.OTel.Endpoint, ServiceName: cfg.Serve.OTel.ServiceName}, Version)
	if err != nil {
		return nil, err
	}
	if traced {
		fmt.Fprintln(env.Stderr, "crucible serve: exporting traces (OTLP over HTTP)")
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := endTracing(ctx); err != nil {
			fmt.Fprintf(env.Stderr, "crucible serve: flushing the traces: %v\n", err)
		}
	}, nil
}

// served is what serve checks and reads of cfg before it builds anything.
type served struct {
	// tokens are the anonymous tokens and the clients': of /mcp over
	// HTTP (httpAddr), else of the ops endpoints of stdio's --metrics
	// (none with serve.ops_public); nil with neither.
	tokens     *auth.Tokens
	made       string // the anonymous token serve made and printed, if any: a reload keeps it
	replicaKey []byte
}

// prepareServe checks cfg for serve, over HTTP at httpAddr ("" for
// stdio, whose ops endpoints are at metricsAddr, if any), and reads its
// clients, tokens and replica key.
func prepareServe(cfg *config.Config, httpAddr, metricsAddr string, env Env) (*served, error) {
	p := &served{}
	tokens, err := p.readTokens(cfg, httpAddr, metricsAddr, env)
	if err != nil {
		return nil, err
	}
	p.tokens = tokens
	if cfg.Serve.Replicas.Enabled() {
		if httpAddr == "" {
			return nil, errors.New("serve.replicas: the replicas serve each other's clients over HTTP: add --http ADDR")
		}
		if p.replicaKey, err = sandbox.ReadSource(cfg.Serve.Replicas.Key.From); err != nil {
			return nil, fmt.Errorf("serve.replicas.key: %w", err)
		}
	}
	return p, nil
}

// readTokens checks cfg and reads the tokens of its clients and the
// anonymous ones of the address the tokens guard (httpAddr's, else
// metricsAddr's); an anonymous token made is made once, and kept by a
// reload.
func (p *served) readTokens(cfg *config.Config, httpAddr, metricsAddr string, env Env) (*auth.Tokens, error) {
	if err := sandbox.CheckConfig(cfg); err != nil {
		return nil, err
	}
	clients, err := auth.LoadClients(cfg)
	if err != nil {
		return nil, err
	}
	addr, what := httpAddr, ""
	if addr == "" {
		addr, what = metricsAddr, "--metrics: "
	}
	if addr == "" || (httpAddr == "" && cfg.Serve.OpsPublic) {
		return nil, nil
	}
	anon, made, err := auth.Anonymous(cfg, addr, mcpserver.Loopback(addr))
	if err != nil {
		if httpAddr == "" {
			err = fmt.Errorf("%w (or let anyone read them: serve.ops_public: true)", err)
		}
		return nil, fmt.Errorf("%s%w", what, err)
	}
	if made != "" {
		if p.made == "" {
			p.made = made
			fmt.Fprintf(env.Stderr, "crucible serve: clients must send \"Authorization: Bearer %s\" (set CRUCIBLE_TOKEN to choose it)\n", made)
		}
		anon = []string{p.made}
	}
	tokens := auth.New(anon, clients)
	if name := tokens.Shared(); name != "" {
		return nil, fmt.Errorf("an anonymous token (CRUCIBLE_TOKEN, serve.token or serve.tokens) is clients.%s's token too: which would it be? Give each its own", name)
	}
	return tokens, nil
}

// reread is how serve reads its configuration again for a reload, from
// where it read it at the start: checked as then, with its tokens, taken
// once the server has taken the rest.
func (p *served) reread(cfgFile, httpAddr, metricsAddr string, env Env) mcpserver.Reread {
	return func() (*config.Config, func(), error) {
		cfg, _, err := loadConfig(cfgFile)
		if err != nil {
			return nil, nil, err
		}
		tokens, err := p.readTokens(cfg, httpAddr, metricsAddr, env)
		if err != nil {
			return nil, nil, err
		}
		return cfg, func() {
			if p.tokens != nil {
				p.tokens.Set(tokens)
			}
			fmt.Fprintf(env.Stderr, "crucible serve: %s\n", sandbox.EngineNote(cfg))
			warn(cfg, env)
		}, nil
	}
}

// reloadOnHUP reloads srv's configuration at each SIGHUP, saying on
// stderr how it went, until stop.
func reloadOnHUP(srv *mcpserver.Server, env Env) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
				restarted, stopped, err := srv.Reload()
				if err != nil {
					fmt.Fprintf(env.Stderr, "crucible serve: reload refused, the configuration before it keeps serving: %v\n", err)
					continue
				}
				fmt.Fprintf(env.Stderr, "crucible serve: %s\n", mcpserver.ReloadSummary(restarted, stopped))
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

// serveStdio serves srv over stdio, and its /healthz, /readyz and
// /metrics at metricsAddr if given, until stdin ends or ctx does.
func serveStdio(ctx context.Context, srv *mcpserver.Server, metricsAddr string, p *served, env Env, fail func(string, ...any) int) int {
	if metricsAddr != "" {
		stop, err := listen(ctx, metricsAddr, srv.OpsHandler(p.tokens), env)
		if err != nil {
			return fail("--metrics: %v", err)
		}
		defer stop()
	}
	if err := srv.ServeStdio(ctx, env.Stdin, env.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		return fail("%v", err)
	}
	return ExitOK
}

// drain lets the executions running end, for up to timeout, while the
// server answers that it is draining; a second SIGINT or SIGTERM ends the
// wait.
func drain(srv *mcpserver.Server, timeout time.Duration, env Env) {
	if timeout <= 0 {
		return
	}
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-again:
			cancel()
		case <-ctx.Done():
		}
	}()
	fmt.Fprintf(env.Stderr, "crucible serve: draining: new executions are refused; waiting up to %v for those running\n", timeout)
	if n := srv.Drain(ctx); n > 0 {
		fmt.Fprintf(env.Stderr, "crucible serve: %d executions still running are stopped\n", n)
	}
}

// listen serves h on addr until ctx ends or stop is called.
func listen(ctx context.Context, addr string, h http.Handler, env Env) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	shutdown := mcpserver.ServeHTTP(l, h)
	fmt.Fprintf(env.Stderr, "crucible serve: listening on http://%s\n", l.Addr())
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = shutdown(sctx)
	}, nil
}
