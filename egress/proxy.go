package egress

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cruciblehq/crucible/policy/httprule"
	"github.com/cruciblehq/crucible/policy/netpolicy"
	"github.com/cruciblehq/crucible/secrets"
)

// Defaults of [Limits].
const (
	defaultConnections = 64
	defaultBytesOut    = 64 << 20
	defaultBytesIn     = 1 << 30
	defaultIdleTimeout = 60 * time.Second
)

const (
	// maxHello bounds what is buffered to find a ClientHello's SNI, and
	// maxHead an HTTP request's or response's head: a peer that sends more
	// is refused, not buffered.
	maxHello = 64<<10 + 1024
	maxHead  = 64 << 10
	// dialTimeout bounds one attempt to reach an allowed host.
	dialTimeout = 10 * time.Second
)

var errLimit = errors.New("egress: limit reached")

// proxy is the part of the stack that decides and relays one TCP connection
// at a time, on any net.Conn: the stack hands it connections from the jail.
type proxy struct {
	ctx    context.Context
	cancel context.CancelFunc
	policy Policy
	report func(Event)
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	dial   func(ctx context.Context, a netip.AddrPort) (net.Conn, error)
	limits Limits
	// secrets, when set, are swapped on the connections to their hosts
	// (mitm.go).
	secrets *Secrets
	http    func(name string, port uint16) []*httprule.Set // see rules.go
	client  func() (name, profile string)                  // nil: no one
	traced  func(name string, port uint16) bool            // nil: none
	trace   func(name, method string, h http.Header) func()
	names   func(string) string // placeholders as ${NAME}, for rules; nil without secrets

	sent, recv atomic.Int64 // bytes of the whole execution, each way
	held       atomic.Int64 // bytes of request bodies held to be signed (sign.go)
	overOut    atomic.Bool  // the byte limits were reported (once each)
	overIn     atomic.Bool

	mu     sync.Mutex
	closed bool
	open   int               // connections counted against limits.Connections
	conns  map[net.Conn]bool // everything to close on shutdown
	wg     sync.WaitGroup    // goroutines that may still use the stack
}

func newProxy(o *Options) *proxy {
	ctx, cancel := context.WithCancel(context.Background())
	p := &proxy{
		ctx: ctx, cancel: cancel,
		policy: o.Policy, report: o.Report, lookup: o.Lookup, dial: o.Dial,
		limits: o.Limits, secrets: o.Secrets, http: o.HTTP, client: o.Client,
		traced: o.Traced, trace: o.Trace,
		conns: map[net.Conn]bool{},
	}
	if o.Secrets != nil && o.HTTP != nil {
		p.names = placeholderNames(o.Secrets.Set)
	}
	if p.report == nil {
		p.report = func(Event) {}
	}
	if p.lookup == nil {
		p.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if p.dial == nil {
		p.dial = func(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
			d := net.Dialer{Timeout: dialTimeout}
			return d.DialContext(ctx, "tcp", a.String())
		}
	}
	l := &p.limits
	l.Connections = cmp(l.Connections, defaultConnections)
	l.BytesOut = cmp(l.BytesOut, defaultBytesOut)
	l.BytesIn = cmp(l.BytesIn, defaultBytesIn)
	l.IdleTimeout = cmp(l.IdleTimeout, defaultIdleTimeout)
	return p
}

// cmp returns v, or def when v is zero.
func cmp[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// begin counts a goroutine that will use the stack; false once shutdown has
// started, so that shutdown's Wait never races an Add.
func (p *proxy) begin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// acquire takes one of the execution's connections, or reports the limit.
func (p *proxy) acquire(name string, port uint16) bool {
	p.mu.Lock()
	ok := p.open < p.limits.Connections
	if ok {
		p.open++
	}
	p.mu.Unlock()
	if !ok {
		p.report(Event{Kind: KindLimit, Name: name, Port: port,
			Reason: fmt.Sprintf("more than %d connections open at once", p.limits.Connections)})
	}
	return ok
}

func (p *proxy) release() {
	p.mu.Lock()
	p.open--
	p.mu.Unlock()
}

// track registers c to be closed by shutdown; false (and c closed) if
// shutdown has started.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// shutdown refuses new work, closes every connection and waits for the
// goroutines that use them.
func (p *proxy) shutdown() {
	p.mu.Lock()
	p.closed = true
	p.cancel()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// flow is one accepted connection from the jail.
type flow struct {
	p     *proxy
	c     net.Conn       // the jail's side: raw, or the TLS the stack terminated
	raw   net.Conn       // the jail's side as accepted
	abort func()         // resets the jail's side (a denied TLS connection)
	name  string         // the name behind the address, "" for an allowed literal address
	dst   netip.AddrPort // where the jail connected
	br    *bufio.Reader  // reads c through lim
	lim   *io.LimitedReader
	up    *metered // the host's side, once dialed
	upc   net.Conn // what is relayed over it: up, or TLS on it
	upBr  *bufio.Reader
	upLim io.LimitedReader
	// allow names the secrets this connection may carry, when the stack
	// terminated its TLS to swap them (see mitm.go); else nil.
	allow []string
	// rules judge each HTTP request (see rules.go); nil for none.
	rules []*httprule.Set
	// signer signs each request inside terminated TLS with the key of
	// the secret signFor (see sign.go); nil for none.
	signer  Signer
	signFor string
	// traced: each request carries the execution's trace context in
	// place of the program's (Options.Traced).
	traced bool
	// The HTTP relay's buffers, each way: see startHTTP.
	toJail, toUp *bufio.Writer
	idle         *time.Timer
	answered     int  // responses relayed to the jail
	whole        bool // the last answer to the jail was sent whole
	// Bytes of this connection, each way.
	out, in atomic.Int64
}

// serve decides and relays one connection from the jail; the caller closes
// c afterwards.
func (p *proxy) serve(c net.Conn, abort func(), name string, dst netip.AddrPort) {
	f := &flow{p: p, c: c, raw: c, abort: abort, name: name, dst: dst}
	f.rules = f.rulesFor()
	f.traced = p.traced != nil && p.trace != nil && p.traced(f.target(), dst.Port())
	f.idle = time.AfterFunc(p.limits.IdleTimeout, f.timeout)
	defer f.idle.Stop()
	defer func() {
		if up := f.upstream(); up != nil {
			p.untrack(up.Conn)
			p.report(Event{Kind: KindConnect, Allowed: true, Done: true, Name: f.target(), Port: dst.Port(),
				BytesOut: f.out.Load(), BytesIn: f.in.Load()})
		}
	}()
	f.lim = &io.LimitedReader{R: activity{c, f}, N: maxHello}
	f.br = bufio.NewReaderSize(f.lim, maxHello)

	first, err := f.br.Peek(1)
	if err != nil {
		return // closed before a byte, or idle
	}
	switch {
	case looksLikeTLS(first):
		f.serveTLS()
	case first[0] >= 'A' && first[0] <= 'Z':
		f.serveHTTP()
	default:
		f.deny(KindProtocol, "only TLS and HTTP/1 connections are allowed", false)
	}
}

// timeout ends an idle connection.
func (f *flow) timeout() {
	f.p.report(Event{Kind: KindLimit, Name: f.target(), Port: f.dst.Port(),
		Reason: fmt.Sprintf("no traffic for %v", f.p.limits.IdleTimeout)})
	f.raw.Close()
	if up := f.upstream(); up != nil {
		up.Close()
	}
}

func (f *flow) upstream() *metered {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	return f.up
}

// target is what the jail asked for: the name, or the literal address.
func (f *flow) target() string {
	if f.name != "" {
		return f.name
	}
	return f.dst.Addr().String()
}

// deny reports a refusal and ends the connection: an HTTP client gets a 403
// whose body says why, anything else a reset.
func (f *flow) deny(kind, reason string, isHTTP bool) {
	f.p.report(Event{Kind: kind, Name: f.target(), Port: f.dst.Port(), Reason: reason})
	f.refuse(reason, isHTTP, http.StatusForbidden)
}

// refuse answers a refused connection: a reset, or for HTTP a response with
// status whose body is the reason, for the model to read.
func (f *flow) refuse(reason string, isHTTP bool, status int) {
	if !isHTTP {
		f.abort()
		return
	}
	f.whole = true
	body := "crucible: " + reason + "\n"
	_, _ = fmt.Fprintf(f.c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

func (f *flow) serveTLS() {
	var sni string
	for {
		b, _ := f.br.Peek(f.br.Buffered())
		name, need, err := serverName(b)
		if err == nil {
			sni = name
			break
		}
		switch {
		case errors.Is(err, errECH):
			f.deny(KindProtocol, "an encrypted ClientHello (ECH) hides the server name; connect without ECH", false)
			return
		case !errors.Is(err, errNeedMore):
			f.deny(KindProtocol, "the TLS ClientHello is malformed", false)
			return
		case need > f.br.Size():
			f.deny(KindProtocol, "the TLS ClientHello is too large", false)
			return
		}
		if _, err := f.br.Peek(need); err != nil {
			return // closed, or idle
		}
	}
	if f.name != "" && sni != f.name {
		reason := fmt.Sprintf("the TLS server name %q is not %s, the name this address was given for", sni, f.name)
		if sni == "" {
			reason = "the TLS ClientHello names no server (SNI); connect by name"
		}
		f.deny(KindSNIMismatch, reason, false)
		return
	}
	f.allow = f.secretsFor()
	if f.signer, f.signFor = f.signerFor(); f.allow != nil || f.rules != nil || f.signer != nil || f.traced {
		// A host with rules, a signer or a trace only: terminated all the
		// same, carrying no secret (allow empty, not nil).
		if f.p.secrets == nil {
			f.deny(KindHTTP, "the sandbox cannot judge HTTPS requests to "+f.target()+" (it has no CA)", false)
			return
		}
		f.allow = append([]string{}, f.allow...)
		f.serveTerminated()
		return
	}
	if !f.connect(false) {
		return
	}
	f.lim.N = math.MaxInt64
	f.pipe(f.br, f.upc)
}

func (f *flow) serveHTTP() {
	for first := true; ; first = false {
		f.lim.N = maxHead
		req, err := http.ReadRequest(f.br)
		if err != nil {
			if first && f.allow != nil {
				f.deny(KindProtocol, "the connection carries no HTTP/1.1 request inside its TLS", false)
			} else if first {
				f.deny(KindProtocol, "the connection is neither TLS nor an HTTP/1 request", false)
			}
			return
		}
		f.lim.N = math.MaxInt64
		if f.name != "" && !hostMatches(req.Host, f.name, f.dst.Port()) {
			f.deny(KindHostMismatch, fmt.Sprintf("the HTTP Host %q is not %s", truncate(req.Host, 100), f.name+":"+strconv.Itoa(int(f.dst.Port()))), true)
			return
		}
		if !f.judge(req) || !f.admit(req) {
			return
		}
		if first {
			if !f.connect(true) {
				return
			}
			f.startHTTP()
		}
		if !f.exchange(req) {
			return
		}
	}
}

// startHTTP sets up the HTTP relay's buffers. Each is flushed before the
// relay next reads the network the other way, its only wait: a streamed body
// (server-sent events, a long poll, an upload made as it goes) is never held
// back, while a head and a body that arrived together leave together.
func (f *flow) startHTTP() {
	f.toUp = bufio.NewWriterSize(f.upc, 32<<10)
	f.toJail = bufio.NewWriterSize(f.c, 32<<10)
	f.lim.R = flushFirst{f.lim.R, f.toUp}
	f.upLim.R = flushFirst{f.upLim.R, f.toJail}
}

// exchange forwards one request and the responses to it; false ends the
// connection. The request goes out on its own goroutine while the responses
// come back: a client that sends Expect: 100-continue waits for the 100
// before it sends its body.
func (f *flow) exchange(req *http.Request) bool {
	// Request.Write would add a User-Agent the client did not send.
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""}
	}
	// The code's own signature goes before the swap reads the request: it
	// carries the placeholder of the key's id, which is no misplaced
	// secret there, since the signature is replaced.
	hold := f.signer != nil && f.signer.Strip(req.Header)
	uses := f.forward(req)
	if f.traced {
		// Before the signature, which may cover every header.
		req.Header.Del("Traceparent")
		req.Header.Del("Tracestate")
		defer f.p.trace(f.target(), req.Method, req.Header)()
	}
	if f.rules != nil || f.signer != nil {
		// Trailers come after the head was judged (one a server merges
		// into the head could name an override, see judge) and signed.
		req.Trailer = nil
	}
	if f.signer != nil {
		held, ok := f.sign(req, hold, uses)
		defer f.p.held.Add(-held) // once the request was sent
		if !ok {
			return false
		}
	}
	body := &reqBody{ReadCloser: req.Body, left: req.ContentLength}
	if req.Body == http.NoBody { // NoBody tells Write there is none
		body.whole.Store(true)
	} else {
		req.Body = body
	}
	sent := make(chan error, 1)
	f.whole = false
	go func() { sent <- f.send(req) }()
	answered := f.answered
	keep, upgrade := f.answer(req, body)
	if !keep {
		// Stop the sender: it may be waiting for a body the client will
		// not send now that it has its answer, or on a host that does not
		// read it.
		_ = f.c.SetReadDeadline(time.Now())
		f.up.Close()
	}
	err := <-sent
	uses.report(f.answered != answered)
	if err != nil || !keep {
		return false
	}
	if upgrade {
		f.pipe(f.br, f.upc)
		return false
	}
	return true
}

// send writes req to the host. If the request itself failed (the jail's
// side broke, or the byte limit cut it) rather than the host's side, it
// closes the host's side, which would otherwise wait for the rest, or
// answer a request the jail never sent whole.
func (f *flow) send(req *http.Request) error {
	err := req.Write(bufWriter{f.toUp})
	if err == nil {
		err = f.toUp.Flush()
	}
	// A failed write to the host stays in toUp: Flush returns it again.
	if err != nil {
		if werr := f.toUp.Flush(); werr == nil || errors.Is(werr, errLimit) {
			f.up.Close()
		}
	}
	return err
}

// answer relays the host's responses to req: each 1xx as it comes, then the
// final one. keep reports whether the connection may carry another request,
// upgrade whether it now speaks another protocol.
func (f *flow) answer(req *http.Request, body *reqBody) (keep, upgrade bool) {
	for {
		f.upLim.N = maxHead
		resp, err := http.ReadResponse(f.upBr, req)
		if err != nil {
			return false, false
		}
		f.upLim.N = math.MaxInt64
		if !f.backward(resp) {
			return false, false
		}
		f.answered++
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			// The connection now speaks another protocol (a WebSocket):
			// exchange relays its bytes as they are, judged no more. Where
			// requests are judged or secrets swapped, that is only for a
			// WebSocket the request asked for and the host accepted: a 101
			// that switches to nothing would leave the next requests unjudged.
			if (f.rules != nil || f.allow != nil) && !websocketAccepted(req, resp) {
				reason := fmt.Sprintf("%s:%d answered 101 Switching Protocols, but not as the WebSocket handshake of a request that asked for one; the connection was ended",
					f.target(), f.dst.Port())
				f.p.report(Event{Kind: KindProtocol, Name: f.target(), Port: f.dst.Port(), Reason: reason})
				_ = f.toJail.Flush()
				f.refuse(reason, true, http.StatusBadGateway)
				return false, false
			}
			err := writeHead(f.toJail, resp, false)
			return err == nil && f.toJail.Flush() == nil && body.whole.Load(), true
		case resp.StatusCode < 200:
			// Flushed before the next response is read.
			if writeHead(f.toJail, resp, false) != nil {
				return false, false
			}
			continue
		}
		// An answer that comes before the client sent its whole body (a
		// 417 or 401 to Expect: 100-continue, a host that refuses without
		// reading): the rest of the body will not come, or would be read as
		// the next request. The connection ends, and the jail is told.
		early := !body.whole.Load()
		tell := early && !resp.Close
		resp.Close = resp.Close || early
		if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
			err = writeHead(f.toJail, resp, tell)
		} else {
			err = resp.Write(bufWriter{f.toJail})
		}
		_ = resp.Body.Close()
		if err != nil || f.toJail.Flush() != nil {
			return false, false
		}
		f.whole = true
		return !resp.Close && !req.Close, false
	}
}

// websocketAccepted reports whether resp, a 101, completes the WebSocket
// handshake req asked for (RFC 6455 4.1): the request asks to upgrade to
// websocket with a key, and the response switches to websocket with the
// accept value of that key.
func websocketAccepted(req *http.Request, resp *http.Response) bool {
	key := req.Header.Values("Sec-WebSocket-Key")
	if len(key) != 1 || key[0] == "" ||
		!hasToken(req.Header.Values("Connection"), "upgrade") ||
		!hasToken(req.Header.Values("Upgrade"), "websocket") ||
		!hasToken(resp.Header.Values("Upgrade"), "websocket") {
		return false
	}
	sum := sha1.Sum([]byte(key[0] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")) //nolint:gosec // RFC 6455's handshake, not a security hash
	return resp.Header.Get("Sec-WebSocket-Accept") == base64.StdEncoding.EncodeToString(sum[:])
}

// hasToken reports whether one of the comma-separated lists vs holds
// token, in any case.
func hasToken(vs []string, token string) bool {
	for _, v := range vs {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// writeHead writes a response that has no body (1xx, 204, 304) as it came,
// adding Connection: close if told to. Response.Write would add a
// Content-Length: 0 to one that answers a POST, which RFC 9110 forbids in a
// 1xx or 204 and which in a 304 misdescribes the resource.
func writeHead(w *bufio.Writer, r *http.Response, addClose bool) error {
	_, reason, _ := strings.Cut(r.Status, " ")
	fmt.Fprintf(w, "HTTP/%d.%d %03d %s\r\n", r.ProtoMajor, r.ProtoMinor, r.StatusCode, reason)
	_ = r.Header.Write(w)
	if addClose {
		_, _ = w.WriteString("Connection: close\r\n")
	}
	_, err := w.WriteString("\r\n") // a bufio.Writer's errors are sticky
	return err
}

// bufWriter is a bufio.Writer without its ReadFrom. Request.Write and
// Response.Write copy a body into a *bufio.Writer with ReadFrom, which reads
// straight into the writer's free buffer; a flush of that same writer during
// the read (flushFirst's, when the body waits for the network) moves the
// buffer's start, and the body lands over the head already sent. Without
// ReadFrom the copy reads into a buffer of its own. WriteByte keeps
// Request.Write from wrapping it in a bufio.Writer of its own, which would
// hold the head back where no flush reaches it.
type bufWriter struct{ b *bufio.Writer }

func (w bufWriter) Write(p []byte) (int, error)       { return w.b.Write(p) }
func (w bufWriter) WriteByte(c byte) error            { return w.b.WriteByte(c) }
func (w bufWriter) WriteString(s string) (int, error) { return w.b.WriteString(s) }

// flushFirst flushes w before each read of r: see startHTTP.
type flushFirst struct {
	r io.Reader
	w *bufio.Writer
}

func (f flushFirst) Read(p []byte) (int, error) {
	if err := f.w.Flush(); err != nil {
		return 0, err
	}
	return f.r.Read(p)
}

// reqBody is a request's body as send reads it from the jail. whole is set
// by the read that completes it, before its last bytes go out: a response
// that finds it unset came before the client had sent its whole body.
type reqBody struct {
	io.ReadCloser
	left  int64 // bytes to come, when the length is known; else negative
	whole atomic.Bool
}

func (b *reqBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left == 0 || err == io.EOF {
		b.whole.Store(true)
	}
	return n, err
}

// connect asks the policy, resolves the name itself, checks the addresses
// and dials one. It reports the decision and, on refusal, answers the jail.
func (f *flow) connect(isHTTP bool) bool {
	p, port := f.p, f.dst.Port()
	var addrs []netip.Addr
	if f.name == "" {
		addrs = []netip.Addr{f.dst.Addr()} // the stack decided on it already
	} else {
		v := p.policy.Decide(p.ctx, netpolicy.Request{Name: f.name, Port: port})
		if !v.Allow {
			p.report(Event{Kind: KindConnect, Name: f.name, Port: port, Reason: v.Reason, Rule: v.Rule})
			f.refuse(v.Reason, isHTTP, http.StatusForbidden)
			return false
		}
		var err error
		addrs, err = f.resolve()
		if err != nil {
			p.report(Event{Kind: KindConnect, Allowed: true, Done: true, Name: f.name, Port: port, Reason: err.Error()})
			f.refuse(err.Error(), isHTTP, http.StatusBadGateway)
			return false
		}
		var ok []netip.Addr
		var why string
		for _, a := range addrs {
			if allowed, reason := p.policy.AddressAllowed(a); allowed {
				ok = append(ok, a)
			} else {
				why = reason
			}
		}
		if len(ok) == 0 {
			reason := f.name + " resolves to an address the sandbox may not reach: " + why
			p.report(Event{Kind: KindPrivate, Name: f.name, Port: port, Reason: reason, Addr: addrs[0]})
			f.refuse(reason, isHTTP, http.StatusForbidden)
			return false
		}
		addrs = ok
	}
	var up net.Conn
	var err error
	for _, a := range addrs[:min(len(addrs), 4)] {
		if up, err = p.dial(p.ctx, netip.AddrPortFrom(a, port)); err == nil {
			break
		}
	}
	if up == nil {
		reason := "could not connect to " + f.target() + ":" + strconv.Itoa(int(port))
		p.report(Event{Kind: KindConnect, Allowed: true, Done: true, Name: f.target(), Port: port, Reason: reason, Addr: addrs[0]})
		f.refuse(reason, isHTTP, http.StatusBadGateway)
		return false
	}
	if !p.track(up) {
		return false
	}
	p.mu.Lock()
	f.up = &metered{Conn: up, f: f}
	p.mu.Unlock()
	f.upc = f.up
	if f.allow != nil && !f.upstreamTLS() {
		return false
	}
	f.upLim = io.LimitedReader{R: f.upc, N: math.MaxInt64}
	// Large reads: each one becomes at most one write into the stack, and
	// the stack's cost is per segment (4 KiB reads ran at a fifth of
	// loopback's speed).
	f.upBr = bufio.NewReaderSize(&f.upLim, 64<<10)
	remote, _ := netip.ParseAddrPort(up.RemoteAddr().String())
	p.report(Event{Kind: KindConnect, Allowed: true, Name: f.target(), Port: port, Addr: remote.Addr()})
	return true
}

// resolve returns the addresses of f.name: pinned by the policy, or from the
// host's resolver (never the jail's).
func (f *flow) resolve() ([]netip.Addr, error) {
	if a, ok := f.p.policy.Host(f.name); ok {
		return []netip.Addr{a}, nil
	}
	ctx, cancel := context.WithTimeout(f.p.ctx, dialTimeout)
	defer cancel()
	addrs, err := f.p.lookup(ctx, f.name)
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("could not resolve %s", f.name)
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// pipe relays both ways until both sides are done; on a connection that
// carries secrets (after an upgrade), swapping them each way: what the
// jail sends then is a body, where a secret goes only if its Where says.
func (f *flow) pipe(client io.Reader, up net.Conn) {
	var back io.Reader = f.upBr
	var fwd *secrets.Reader
	if f.allow != nil {
		fwd = f.p.secrets.Set.ForwardReader(client, f.allowIn(InBody, ""))
		client, back = fwd, f.p.secrets.Set.ReverseReader(back)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := io.Copy(up, client)
		closeWrite(up, err)
	}()
	_, err := io.Copy(f.c, back)
	closeWrite(f.c, err)
	<-done
	if fwd != nil {
		(&uses{f: f}).reportUse([]placed{{InBody, fwd.Use()}})
	}
}

// closeWrite half-closes c after a clean end of its input, and closes it
// after an error, which also ends the other direction.
func closeWrite(c net.Conn, err error) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok && err == nil {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// activity resets the idle timer on every read from the jail.
type activity struct {
	r io.Reader
	f *flow
}

func (a activity) Read(b []byte) (int, error) {
	n, err := a.r.Read(b)
	if n > 0 {
		a.f.idle.Reset(a.f.p.limits.IdleTimeout)
	}
	return n, err
}

// metered is the host side of a flow: it counts bytes against the limits
// and resets the idle timer.
type metered struct {
	net.Conn
	f *flow
}

func (m *metered) Write(b []byte) (int, error) {
	p := m.f.p
	if p.sent.Add(int64(len(b))) > p.limits.BytesOut {
		if !p.overOut.Swap(true) {
			p.report(Event{Kind: KindLimit, Name: m.f.target(), Port: m.f.dst.Port(),
				Reason: fmt.Sprintf("more than %d bytes sent in one execution", p.limits.BytesOut)})
		}
		return 0, errLimit
	}
	n, err := m.Conn.Write(b)
	m.f.out.Add(int64(n))
	m.f.idle.Reset(p.limits.IdleTimeout)
	return n, err
}

// CloseWrite passes the jail's half-close on: without it, closeWrite would
// close the host's side whole and lose the rest of its answer.
func (m *metered) CloseWrite() error {
	if cw, ok := m.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return m.Close()
}

func (m *metered) Read(b []byte) (int, error) {
	p := m.f.p
	n, err := m.Conn.Read(b)
	if n > 0 {
		m.f.in.Add(int64(n))
		m.f.idle.Reset(p.limits.IdleTimeout)
		if p.recv.Add(int64(n)) > p.limits.BytesIn {
			if !p.overIn.Swap(true) {
				p.report(Event{Kind: KindLimit, Name: m.f.target(), Port: m.f.dst.Port(),
					Reason: fmt.Sprintf("more than %d bytes received in one execution", p.limits.BytesIn)})
			}
			return 0, errLimit
		}
	}
	return n, err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…" // not half a character
}
