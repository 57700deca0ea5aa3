package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/egress"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/policy/netpolicy"
	"github.com/cruciblehq/crucible/toolbridge"
	"github.com/cruciblehq/crucible/tracing"
	"github.com/cruciblehq/crucible/violation"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const (
	// maxNetAudit bounds the network lines one execution writes to the
	// audit trail; past it, the violations' counts still say how many
	// there were.
	maxNetAudit = 1000
	// maxNetViolations bounds the distinct refusals listed one by one (code
	// can ask for endless random names); past it, each kind's further
	// refusals are counted in one more entry.
	maxNetViolations = 100
)

// unlisted is the reason of the entry that counts a kind's refusals past
// maxNetViolations.
const unlisted = "more refusals of this kind, not listed one by one"

// NetworkPolicy compiles the network section. Its errors are one line and
// name the offending rule.
func NetworkPolicy(n *config.Network) (*netpolicy.Policy, error) {
	r := netpolicy.Rules{
		Allow: n.Allow, Deny: n.Deny, DenyReasons: n.DenyReasons,
		AllowAll: n.AllowAll,
		Hosts:    map[string]netip.Addr{},
	}
	for _, c := range n.AllowPrivate {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("network.allow_private: %q is not a CIDR", c)
		}
		r.AllowPrivate = append(r.AllowPrivate, p)
	}
	for name, a := range n.Hosts {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("network.hosts: %q is not an IP address", a)
		}
		r.Hosts[name] = ip
	}
	p, err := netpolicy.Compile(r)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	return p, nil
}

// netLog is one execution's record of its network: each decision goes to
// the audit trail, each refusal into the result's violations. Report is
// called on the network stack's packet path: it only counts and queues.
type netLog struct {
	audit   *audit.Writer
	redact  func(string) string // nil: nothing to redact
	offline bool                // the jail has no network: only its lookups are logged

	mu      sync.Mutex
	exec    string            // the execution's id, once it has begun
	caller  toolbridge.Caller // whom it runs for
	use     NetworkUse
	lines   int
	spans   int // the spans of decisions made, at most maxNetAudit
	refused violations
	placed  []SecretUse       // the receipt: where the secrets went
	line    map[SecretUse]int // its lines, by themselves with no count
}

func newNetLog(w *audit.Writer) *netLog {
	return &netLog{audit: w}
}

// begin names the execution the decisions belong to. A warm jail's network
// exists before its work; nothing in it runs, so nothing is decided, until
// then.
func (l *netLog) begin(exec string, caller toolbridge.Caller) {
	l.mu.Lock()
	l.exec, l.caller = exec, caller
	l.mu.Unlock()
}

// who is whom the execution runs for, as HTTP rules' conditions see it:
// the client's name and profile.
func (l *netLog) who() (name, profile string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.caller.Client, l.caller.Profile
}

func (l *netLog) report(e egress.Event) {
	l.mu.Lock()
	if e.Done {
		l.use.Connections++
		l.use.BytesOut += e.BytesOut
		l.use.BytesIn += e.BytesIn
	}
	if !e.Allowed {
		l.refused.add(violation.Violation{Kind: e.Kind, Host: e.Name, Port: e.Port, Reason: e.Reason})
	}
	if e.Allowed && e.Where != "" {
		l.receipt(e)
	}
	logIt := l.audit != nil && l.lines < maxNetAudit
	if logIt {
		l.lines++
	}
	parent, spanIt := l.spanParent()
	exec := l.exec
	l.mu.Unlock()
	if spanIt {
		l.span(parent, e)
	}
	if !logIt {
		return
	}
	ev := audit.Network{Exec: exec, Type: e.Kind, Name: e.Name, Port: e.Port,
		Verdict: "deny", Reason: e.Reason, Rule: e.Rule, BytesOut: e.BytesOut, BytesIn: e.BytesIn,
		Secrets: e.Secrets, Method: e.Method, Path: e.Path, Where: e.Where}
	if l.redact != nil {
		ev.Name, ev.Reason, ev.Path = l.redact(ev.Name), l.redact(ev.Reason), l.redact(ev.Path)
	}
	if e.Allowed {
		ev.Verdict = "allow"
		if e.Done {
			ev.Verdict = "done"
		}
	}
	if e.Addr.IsValid() {
		ev.Addr = e.Addr.String()
	}
	_ = l.audit.Log(ev)
}

// spanParent is the execution's span, and whether one more span of its
// network may be made (and is counted): the execution is traced, and has
// made fewer than maxNetAudit. The caller holds l.mu.
func (l *netLog) spanParent() (trace.SpanContext, bool) {
	parent := l.caller.Trace
	if !parent.IsValid() || l.spans >= maxNetAudit {
		return parent, false
	}
	l.spans++
	return parent, true
}

// trace puts the trace context of a request to an API that propagates it
// into h: that of a span of its own, the execution's child, which the
// returned end ends. Untraced, or past maxNetAudit spans, h gets nothing.
func (l *netLog) trace(name, method string, h http.Header) (end func()) {
	l.mu.Lock()
	parent, spanIt := l.spanParent()
	l.mu.Unlock()
	if !spanIt {
		return func() {}
	}
	if l.redact != nil {
		name = l.redact(name)
	}
	ctx, span := tracing.Tracer().Start(trace.ContextWithSpanContext(context.Background(), parent), "egress request",
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.String("server.address", tracing.Name(name)),
			attribute.String("http.request.method", tracing.Name(method))))
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	return func() { span.End() }
}

// span records decision e as a span of the execution's (parent): the
// host and port, the verdict and why, the request's method where e names
// one, the bytes of a connection done; redacted as the audit's line is.
func (l *netLog) span(parent trace.SpanContext, e egress.Event) {
	name, reason := e.Name, e.Reason
	if l.redact != nil {
		name, reason = l.redact(name), l.redact(reason)
	}
	verdict := "deny"
	if e.Allowed {
		verdict = "allow"
		if e.Done {
			verdict = "done"
		}
	}
	attrs := []attribute.KeyValue{attribute.String("crucible.egress.type", e.Kind), attribute.String("server.address", tracing.Name(name)),
		attribute.Int("server.port", int(e.Port)), attribute.String("crucible.egress.verdict", verdict)}
	if reason != "" {
		attrs = append(attrs, attribute.String("crucible.egress.reason", reason))
	}
	if e.Method != "" {
		attrs = append(attrs, attribute.String("http.request.method", tracing.Name(e.Method)))
	}
	if e.Done {
		attrs = append(attrs, attribute.Int64("crucible.egress.bytes_out", e.BytesOut), attribute.Int64("crucible.egress.bytes_in", e.BytesIn))
	}
	_, span := tracing.Tracer().Start(trace.ContextWithSpanContext(context.Background(), parent), "egress "+e.Kind,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if !e.Allowed {
		span.SetStatus(codes.Error, "denied")
	}
	span.End()
}

// maxReceipt bounds the receipt's lines; past it, the counts of the lines
// there still grow, and a request of a new kind is left out.
const maxReceipt = 256

// receipt counts a substitution in the receipt, as one more of its line
// (secret, host, method, path, part). The caller holds l.mu.
func (l *netLog) receipt(e egress.Event) {
	path := e.Path
	if l.redact != nil {
		path = l.redact(path)
	}
	if l.line == nil {
		l.line = map[SecretUse]int{}
	}
	for _, name := range e.Secrets {
		k := SecretUse{Name: name, Host: e.Name, Method: e.Method, Path: path, Where: e.Where}
		if i, ok := l.line[k]; ok {
			l.placed[i].Count++
		} else if len(l.placed) < maxReceipt {
			l.line[k] = len(l.placed)
			k.Count = 1
			l.placed = append(l.placed, k)
		}
	}
}

// secretUses is the receipt.
func (l *netLog) secretUses() []SecretUse {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.placed)
}

// usage is what the execution's connections carried.
func (l *netLog) usage() *NetworkUse {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.use
	return &u
}

func (l *netLog) result() []violation.Violation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused.list
}

// netSetup builds a jail's network in its network namespace, once the
// jail is created and before it starts (jail.Jail.Network).
type netSetup = func(netns *os.File) (io.Closer, error)

// attachNetwork readies the network that n allows for spec's jail, if
// any: it returns the log its decisions go to and the setup that builds
// it, for startJail (both nil without a network). With sec, the stack
// terminates TLS to the hosts of its secrets and of its APIs with rules,
// and judges the requests to the latter.
func attachNetwork(spec *jail.Spec, n *config.Network, w *audit.Writer, sec *execSecrets) (*netLog, netSetup, error) {
	if !n.Enabled() {
		log, setup := attachOffline(spec, w)
		return log, setup, nil
	}
	policy, err := NetworkPolicy(n)
	if err != nil {
		return nil, nil, err
	}
	log := newNetLog(w)
	opts := egress.Options{
		Policy: policy,
		Report: log.report,
		Limits: egress.Limits{
			Connections: n.MaxConnections,
			BytesOut:    int64(n.MaxBytesOut),
			BytesIn:     int64(n.MaxBytesIn),
			IdleTimeout: time.Duration(n.IdleTimeout),
		},
	}
	if sec != nil {
		opts.Secrets = sec.egress()
		if len(sec.apis) > 0 {
			opts.HTTP = sec.rulesFor
			opts.Client = log.who
			opts.Traced, opts.Trace = sec.traced, log.trace
		}
	}
	if n.Resolver != "" {
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, n.Resolver)
		}}
		opts.Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return r.LookupNetIP(ctx, "ip", host)
		}
	}
	spec.Nameserver = egress.Resolver
	return log, func(netns *os.File) (io.Closer, error) { return egress.Start(netns, opts) }, nil
}

// startJail starts spec's jail with the network that setup builds, if not
// nil: created, given its network, started.
func startJail(ctx context.Context, spec *jail.Spec, setup netSetup) (*jail.Jail, error) {
	j, err := jail.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	if setup != nil {
		if err := j.Network(setup); err != nil {
			_, _ = j.Close()
			return nil, err
		}
	}
	j.Start()
	return j, nil
}

// runJail runs spec's jail with setup's network to its end, as jail.Run
// runs one without.
func runJail(ctx context.Context, spec *jail.Spec, setup netSetup) (*jail.Result, error) {
	j, err := startJail(ctx, spec, setup)
	if err != nil {
		return nil, err
	}
	j.Begin()
	return j.Close()
}

// offline is why a jail without network rules reaches no host: what the
// model reads in the violation, so that it stops trying and says what the
// operator can do.
const offline = "the network is off for this execution: no host is allowed (the operator allows hosts with network.allow in crucible.yaml, or crucible run --allow-net HOST)"

// attachOffline gives a jail without a network a resolver that refuses
// every name and records each, so that a program's lookup is a violation
// with the reason, not an unexplained "connection refused". Only root can
// set up anything in a jail's network namespace; rootless, the jail's
// resolver answers nothing, as before.
func attachOffline(spec *jail.Spec, w *audit.Writer) (*netLog, netSetup) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	log := newNetLog(w)
	log.offline = true
	spec.Nameserver = egress.OfflineResolver
	return log, func(netns *os.File) (io.Closer, error) {
		r, err := egress.Offline(netns, offline, log.report)
		if err != nil {
			// It only explains a refusal, and grants nothing: without it
			// the jail is as closed, its lookups unexplained, so the
			// execution runs.
			return io.NopCloser(nil), nil
		}
		return r, nil
	}
}
