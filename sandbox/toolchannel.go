package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/cruciblehq/crucible/apis"
	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/toolbridge"
	"github.com/cruciblehq/crucible/toolchannel"
	"github.com/cruciblehq/crucible/tracing"
	"github.com/cruciblehq/crucible/violation"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// ToolsFD is the descriptor on which the command of an execution with tools
// finds its tools channel; the environment variable toolchannel.EnvVar
// says so to the runners.
const ToolsFD = 4

// Tools is the tool bridge of one Crucible process: the downstream servers
// of a configuration, each started on its first use and shared by every
// execution that is given it in [Options], and the catalog of its HTTP
// APIs, which the code lists with tools.apis(). The caller closes it, which
// stops the servers, once no execution uses it any more.
type Tools struct {
	cfg      *config.Config // made from
	bridge   *toolbridge.Bridge
	apis     *apis.Catalog // nil without APIs
	apisOnly bool          // the configuration has APIs and no servers
	maxLine  int           // the longest request line a channel reads
	records  int           // the most calls an execution lists
}

// NewTools returns the tool bridge of cfg's servers and the catalog of its
// APIs (whose docs it reads now), or nil when cfg has neither. It starts
// nothing. The network decisions of its jailed servers go to w, their
// starts and failures, in full, to log (nil: nowhere).
func NewTools(cfg *config.Config, w *audit.Writer, log *slog.Logger) (*Tools, error) {
	return ReloadTools(nil, cfg, w, log)
}

// ReloadTools is NewTools for a configuration that replaces the one of
// from (nil: none): from's servers that cfg keeps as they were
// (SameServer) are shared, running, and handed over by Commit.
func ReloadTools(from *Tools, cfg *config.Config, w *audit.Writer, log *slog.Logger) (*Tools, error) {
	if len(cfg.Servers) == 0 && len(cfg.APIs) == 0 {
		return nil, nil
	}
	if err := checkServers(cfg); err != nil {
		return nil, err
	}
	catalog, err := apis.Load(cfg)
	if err != nil {
		return nil, err
	}
	o := toolOptions(cfg, w)
	o.Logger = log
	if from != nil {
		o.From, o.Keep = from.bridge, func(name string) bool { return SameServer(from.cfg, cfg, name) }
	}
	b, err := toolbridge.New(o)
	if err != nil {
		return nil, err
	}
	// A request carries its arguments and a little JSON around them.
	args := cmp.Or(o.Limits.ArgBytes, toolbridge.DefaultArgBytes)
	calls := cmp.Or(o.Limits.Calls, toolbridge.DefaultCalls)
	t := &Tools{cfg: cfg, bridge: b, apis: catalog, apisOnly: len(cfg.Servers) == 0, maxLine: int(args) + 64<<10}
	if !t.apisOnly {
		t.records = calls + moreToolRecords // without servers, no call is made to list
	}
	return t, nil
}

// SameServer says whether server name is configured in b as in a, and so
// may keep running across a reload from a to b: its section, and what
// else its instances are made of (sandbox.allow_degraded, for a jailed
// one; tools.max_result_size, which bounds its messages), unchanged.
func SameServer(a, b *config.Config, name string) bool {
	sa, ok := a.Servers[name]
	sb, ok2 := b.Servers[name]
	return ok && ok2 && reflect.DeepEqual(sa, sb) &&
		slices.Equal(a.Sandbox.AllowDegraded, b.Sandbox.AllowDegraded) && a.Tools.MaxResultSize == b.Tools.MaxResultSize
}

// APIs is the catalog of the configuration's HTTP APIs; nil (an empty
// catalog) without any.
func (t *Tools) APIs() *apis.Catalog {
	if t == nil {
		return nil
	}
	return t.apis
}

// Commit takes over the servers shared with the Tools that ReloadTools
// replaced: the reload is taken. Without it, Close leaves them running.
func (t *Tools) Commit() {
	if t != nil {
		t.bridge.Commit()
	}
}

// Close stops the servers the bridge started.
func (t *Tools) Close() {
	if t != nil {
		t.bridge.Close()
	}
}

// ToolCall is one tool call (or resource read) of an execution, as its
// result lists them, in the order the code made them.
type ToolCall = toolchannel.Call

// moreToolRecords is how many calls past its call limit one execution lists
// in its result and writes to the audit trail: refused calls do not count
// against the limit, and the code may make them in a loop. Past that, calls
// are still answered (refused, and counted in the violations), not listed.
const moreToolRecords = 1000

// toolChannel is an execution's tools channel and the refusals it
// recorded, final once it is stopped.
type toolChannel struct {
	*toolchannel.Channel
	sess    *toolbridge.Session
	audit   *audit.Writer
	refused violations // the channel's to add to, one at a time
}

// newToolChannel makes the channel of one execution, of two pipes if
// pipes says so (lang.Program.ToolPipes), and gives its jail the command's
// end.
func newToolChannel(t *Tools, spec *jail.Spec, w *audit.Writer, pipes bool) (*toolChannel, error) {
	c := &toolChannel{sess: t.bridge.NewSession(), audit: w}
	var err error
	c.Channel, err = toolchannel.New(toolchannel.Options{
		Session: toolSession{c.sess}, APIs: apiCatalog{t.apis}, NoServers: t.apisOnly,
		Audit: w, Violate: c.refused.add, ArgsHash: toolbridge.ArgsHash,
		MaxLine: t.maxLine, Records: t.records, Pipes: pipes,
	})
	if err != nil {
		return nil, err
	}
	spec.Tools = c.Peer()
	spec.Env = append(spec.Env, fmt.Sprintf("%s=%d", toolchannel.EnvVar, ToolsFD))
	if pipes {
		spec.ToolsOut = c.PeerOut()
		spec.Env = append(spec.Env, fmt.Sprintf("%s=%d", toolchannel.OutEnvVar, ToolsFD+1))
	}
	return c, nil
}

// serve answers the channel's requests, the execution exec's, run for
// caller.
func (c *toolChannel) serve(exec string, caller toolbridge.Caller) {
	c.sess.SetCaller(c.audited(exec, caller))
	c.Serve(exec, caller.Client)
}

// toolSession is the execution's session of the bridge as its channel
// asks it: the tools by the names the code calls them, and the bridge's
// refusals and tools' errors as the channel answers them.
type toolSession struct{ *toolbridge.Session }

func (s toolSession) List(ctx context.Context) (any, error) {
	tools, err := s.Tools(ctx)
	if err != nil && len(tools) == 0 {
		return nil, err
	}
	return toolbridge.Named(tools), nil // each with the name the code calls it by (js_name)
}

func (s toolSession) Call(ctx context.Context, server, tool string, args []byte) ([]byte, error) {
	out, err := s.Session.Call(ctx, server, tool, args)
	return out, channelError(err)
}

func (s toolSession) Resource(ctx context.Context, server, uri string) ([]byte, error) {
	out, err := s.Session.Resource(ctx, server, uri)
	return out, channelError(err)
}

func channelError(err error) error {
	var refusal *toolbridge.Refusal
	var toolErr *toolbridge.ToolError
	switch {
	case errors.As(err, &refusal):
		return &toolchannel.Refusal{Kind: refusal.Kind, Reason: refusal.Reason}
	case errors.As(err, &toolErr):
		return &toolchannel.Error{Kind: "tool", Message: toolErr.Message}
	}
	return err
}

// apiCatalog is the catalog as the channel asks it: a query past the
// search's bounds is a limit the code hit.
type apiCatalog struct{ *apis.Catalog }

func (c apiCatalog) List() any { return c.Catalog.List() }

func (c apiCatalog) Find(ctx context.Context, query string) (any, error) {
	list, err := c.Catalog.Find(ctx, query)
	if errors.Is(err, apis.ErrQueryTooLong) {
		return nil, &toolchannel.Refusal{Kind: violation.Limit, Reason: err.Error()}
	}
	return list, err
}

// audited is caller, each of its approvals written to the audit trail
// with its answer, whoever answered (or did not).
func (c *toolChannel) audited(exec string, caller toolbridge.Caller) toolbridge.Caller {
	ask := caller.Approve
	caller.Approve = func(ctx context.Context, a toolbridge.Approval) toolbridge.Answer {
		began := time.Now()
		_, span := tracing.Tracer().Start(trace.ContextWithSpanContext(ctx, caller.Trace), "approval",
			trace.WithAttributes(attribute.String("crucible.server", a.Server), attribute.String("crucible.tool", tracing.Name(a.Tool)), attribute.Int("crucible.rule", a.Rule)))
		ans := toolbridge.Answer{Action: toolbridge.Unasked, Why: noApprover}
		if ask != nil {
			ans = ask(ctx, a)
		}
		if ans.Action != toolbridge.Accept && ctx.Err() == context.DeadlineExceeded {
			ans = toolbridge.Answer{Action: toolbridge.Timeout}
		}
		span.SetAttributes(attribute.String("crucible.answer", ans.Action))
		span.End()
		_ = c.audit.Log(audit.Approval{Exec: exec, Client: caller.Client, Server: a.Server, Tool: a.Tool,
			ArgsHash: a.ArgsHash, Rule: a.Rule, Answer: ans.Action, Why: ans.Why, WaitMS: time.Since(began).Milliseconds()})
		return ans
	}
	if elicit := caller.Elicit; elicit != nil {
		caller.Elicit = func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			began := time.Now()
			_, span := tracing.Tracer().Start(trace.ContextWithSpanContext(ctx, caller.Trace), "elicitation",
				trace.WithAttributes(attribute.String("crucible.server", server), attribute.String("crucible.mode", cmp.Or(p.Mode, "form"))))
			res, err := elicit(ctx, server, p)
			answer := toolbridge.Cancel
			if err == nil && res != nil {
				answer = res.Action
			}
			span.SetAttributes(attribute.String("crucible.answer", answer))
			span.End()
			_ = c.audit.Log(audit.Elicitation{Exec: exec, Client: caller.Client, Server: server, Mode: cmp.Or(p.Mode, "form"),
				Answer: answer, WaitMS: time.Since(began).Milliseconds()})
			return res, err
		}
	}
	return caller
}

// noApprover is why a call that needs approval was refused when the
// execution's caller gave no way to ask.
const noApprover = "this execution has no one to ask (crucible serve asks its MCP client; crucible run and exec approve only with --approve-all)"
