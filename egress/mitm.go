package egress

// Secrets on the wire. A connection to a host that may receive secrets is
// not passed through: the stack ends the jail's TLS with a leaf of its own
// CA, opens its own verified TLS to the host, and runs the same HTTP relay
// as for plain HTTP in between, with the placeholders swapped for values on
// the way out and the values swapped back on the way in. Every other
// connection keeps the pass-through relay; plain HTTP is only checked that
// it carries no placeholder, since a value must never travel in cleartext.

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cruciblehq/crucible/secrets"
)

// errCleartext ends a plain HTTP request whose body turned out to carry a
// placeholder, before the bytes that hold it are sent.
var errCleartext = errors.New("egress: a placeholder in a plain HTTP request")

// http11 is the only protocol offered either way: the relay speaks HTTP/1.
var http11 = []string{"http/1.1"}

// secretsFor returns the secrets this connection's destination may
// receive, nil for none (then TLS passes through).
func (f *flow) secretsFor() []string {
	s := f.p.secrets
	if s == nil || s.For == nil || f.name == "" {
		return nil
	}
	if names := s.For(f.name, f.dst.Port()); len(names) > 0 {
		return names
	}
	return nil
}

// serveTerminated ends the jail's TLS, whose ClientHello f.br holds and
// whose server name was checked, then relays HTTP inside it.
func (f *flow) serveTerminated() {
	leaf, err := f.p.secrets.CA.leaf(f.name)
	if err != nil {
		f.deny(KindProtocol, "the sandbox could not make a certificate for "+f.name, false)
		return
	}
	f.lim.N = math.MaxInt64
	tc := tls.Server(bufConn{f.c, f.br}, &tls.Config{
		Certificates: []tls.Certificate{*leaf},
		NextProtos:   http11,
		MinVersion:   tls.VersionTLS12,
	})
	ctx, cancel := context.WithTimeout(f.p.ctx, dialTimeout)
	err = tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		f.p.report(Event{Kind: KindProtocol, Name: f.name, Port: f.dst.Port(),
			Reason: "the TLS handshake failed: a client must trust the sandbox's CA to reach a host that receives secrets or has HTTP rules, and speak HTTP/1.1"})
		f.abort()
		return
	}
	f.c = tc
	f.lim = &io.LimitedReader{R: tc, N: maxHead}
	f.br = bufio.NewReaderSize(f.lim, maxHead)
	f.serveHTTP()
	// A close_notify tells the jail that an answer delimited by the end
	// of the connection is whole; after a cut one, its absence says that
	// it is not.
	if f.whole {
		_ = tc.CloseWrite()
	}
}

// bufConn is a connection whose first bytes were read into r already.
type bufConn struct {
	net.Conn
	r io.Reader
}

func (c bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// upstreamTLS opens TLS to the host on f.up, verified for f.name. On
// failure not a byte of the request has gone out: the jail is told why,
// and the connection is dropped.
func (f *flow) upstreamTLS() bool {
	s := f.p.secrets
	tc := tls.Client(f.up, &tls.Config{
		ServerName: f.name,
		RootCAs:    s.Roots,
		NextProtos: http11,
		MinVersion: tls.VersionTLS12,
	})
	ctx, cancel := context.WithTimeout(f.p.ctx, dialTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if p := tc.ConnectionState().NegotiatedProtocol; err == nil && p != "" && p != "http/1.1" {
		err = errors.New("egress: upstream chose " + p)
	}
	if err == nil {
		f.upc = tc
		return true
	}
	reason := f.upstreamReason(err)
	f.p.report(Event{Kind: KindSecret, Name: f.name, Port: f.dst.Port(), Reason: reason, Secrets: f.allow})
	f.refuse(reason, true, http.StatusBadGateway)
	f.p.mu.Lock()
	up := f.up
	f.up = nil
	f.p.mu.Unlock()
	f.p.untrack(up.Conn)
	return false
}

// upstreamReason says, in a line safe for the model, why the host's TLS
// was refused.
func (f *flow) upstreamReason(err error) string {
	host := f.name + ":" + strconv.Itoa(int(f.dst.Port()))
	var (
		unknown x509.UnknownAuthorityError
		name    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	why := "the TLS handshake with " + host + " failed"
	switch {
	case errors.As(err, &unknown):
		why = "the certificate of " + host + " is not signed by an authority the sandbox trusts"
	case errors.As(err, &name):
		why = "the certificate of " + host + " is not valid for " + f.name
	case errors.As(err, &invalid):
		why = "the certificate of " + host + " is not valid (expired, not yet valid, or not for a server)"
	}
	return why + "; nothing was sent"
}

// admit checks a request before anything of it goes out: on a terminated
// connection TRACE and TRACK are refused (they echo the request, secrets
// included); on a plain one, a request that carries a placeholder.
func (f *flow) admit(req *http.Request) bool {
	if f.p.secrets == nil {
		return true
	}
	if f.allow != nil {
		if req.Method != "TRACE" && req.Method != "TRACK" {
			return true
		}
		reason := req.Method + " is refused on a host that receives secrets"
		f.p.report(Event{Kind: KindSecret, Name: f.name, Port: f.dst.Port(), Reason: reason})
		f.refuse(reason, true, http.StatusMethodNotAllowed)
		return false
	}
	if names := f.cleartext(req); len(names) > 0 {
		f.refuseCleartext(names)
		return false
	}
	return true
}

// cleartext returns the secrets whose placeholder req carries in its
// target, head, or the part of its body already read.
func (f *flow) cleartext(req *http.Request) []string {
	// The body's framing never holds a match: a chunk's data is the only
	// place a placeholder fits whole.
	b, _ := f.br.Peek(f.br.Buffered())
	return placeholders(f.p.secrets.Set, req.Header, req.RequestURI, req.Host, string(b))
}

// placeholders returns the secrets whose placeholder h (names or values)
// or one of texts holds.
func placeholders(set *secrets.Set, h http.Header, texts ...string) []string {
	var names []string
	scan := func(t string) {
		_, u := set.Forward([]byte(t), nil)
		names = append(names, u.Refused...)
	}
	for k, vs := range h {
		scan(k)
		for _, v := range vs {
			scan(v)
		}
	}
	for _, t := range texts {
		scan(t)
	}
	return sortedSet(names)
}

func (f *flow) refuseCleartext(names []string) {
	reason := "the request carries the placeholder of " + strings.Join(names, ", ") +
		" over plain HTTP; secrets go only over HTTPS, to their own hosts"
	f.p.report(Event{Kind: KindSecret, Name: f.target(), Port: f.dst.Port(), Reason: reason, Secrets: names})
	f.refuse(reason, true, http.StatusForbidden)
}

// forward swaps the placeholders of the secrets f.allow names in req for
// their values, each only in the parts of the request its Where allows
// (its path, query, headers, body, trailers); on a plain connection, it
// makes the body fail before it sends a placeholder. The request's uses
// are reported once it was sent.
func (f *flow) forward(req *http.Request) *uses {
	s := f.p.secrets
	if s == nil {
		return nil
	}
	u := &uses{f: f, method: req.Method, path: req.URL.EscapedPath()}
	if f.allow == nil {
		if req.Body != http.NoBody {
			u.body = s.Set.ForwardReader(req.Body, nil)
			req.Body = &swapped{r: u.body, c: req.Body, guard: true, end: func() error {
				if names := placeholders(s.Set, req.Trailer); names != nil {
					u.add(InTrailer, secrets.Use{Refused: names})
					return errCleartext
				}
				return nil
			}}
		}
		return u
	}
	// The swap is made in the target as judged and as Request.Write will
	// write it, its path and query apart; one that would not be written
	// as it reads is not swapped.
	path, query, hasQuery := strings.Cut(req.URL.RequestURI(), "?")
	path, inPath := s.Set.ForwardURL(path, f.allowIn(InPath, ""))
	var inQuery secrets.Use
	target := path
	if hasQuery {
		query, inQuery = s.Set.ForwardURL(query, f.allowIn(InQuery, ""))
		target += "?" + query
	}
	if len(inPath.Replaced)+len(inQuery.Replaced) > 0 {
		if to, err := url.ParseRequestURI(target); err == nil && to.RequestURI() == target {
			req.URL = to
		} else {
			inPath = secrets.Use{Refused: slices.Concat(inPath.Refused, inPath.Replaced)}
			inQuery = secrets.Use{Refused: slices.Concat(inQuery.Refused, inQuery.Replaced)}
		}
	}
	u.add(InPath, inPath)
	u.add(InQuery, inQuery)
	f.forwardHeader(u, InHeader, req.Header)
	f.stripRanges(req)
	// The responses are scanned for values: they must come as they are.
	req.Header.Set("Accept-Encoding", "identity")
	// After an upgrade the relay swaps the raw bytes: a WebSocket's, which
	// the host sends unmasked, and only uncompressed. Another protocol (h2c
	// compresses its headers) could carry a value past the swap.
	req.Header.Del("Sec-WebSocket-Extensions")
	if up := req.Header.Get("Upgrade"); up != "" && !strings.EqualFold(up, "websocket") {
		req.Header.Del("Upgrade")
	}
	if req.Body != http.NoBody {
		u.body = s.Set.ForwardReader(req.Body, f.allowIn(InBody, ""))
		req.Body = &swapped{r: u.body, c: req.Body, end: func() error {
			f.forwardHeader(u, InTrailer, req.Trailer)
			return nil
		}}
	}
	return u
}

// forwardHeader swaps placeholders in each value of h (the head, or the
// trailers: in) for the secrets allowed in a header of that name.
func (f *flow) forwardHeader(u *uses, in string, h http.Header) {
	set := f.p.secrets.Set
	for name, vs := range h {
		u.add(in, set.ForwardHeader(http.Header{name: vs}, f.allowIn(in, name)))
	}
}

// partial are the request headers that ask for part of a response.
var partial = []string{"Range", "If-Range"}

// stripRanges removes from a request to a host that receives secrets the
// headers that ask for part of a response: a value echoed there (stored
// by the code through the host's API, say) could be fetched in pieces,
// each too short for the reverse swap to know.
func (f *flow) stripRanges(req *http.Request) {
	if len(f.allow) == 0 {
		return
	}
	for _, h := range partial {
		if req.Header.Get(h) == "" {
			continue
		}
		req.Header.Del(h)
		f.p.report(Event{Kind: KindSecret, Name: f.name, Port: f.dst.Port(), Secrets: f.allow,
			Reason: fmt.Sprintf("the %s header was removed from a request to %s:%d, which receives %s: a value it echoes must not be fetched in pieces",
				h, f.name, f.dst.Port(), strings.Join(f.allow, ", "))})
	}
}

// backward swaps the values in a response from a terminated connection
// back into placeholders: status line, head, body and trailers. A body
// in an encoding it cannot scan is refused.
func (f *flow) backward(resp *http.Response) bool {
	if f.allow == nil {
		return true
	}
	set := f.p.secrets.Set
	set.ReverseHeader(resp.Header)
	resp.Status = set.RedactString(resp.Status)
	if resp.Body == http.NoBody {
		return true
	}
	if ce := encoded(resp.Header); ce != "" {
		reason := fmt.Sprintf("%s:%d answered with Content-Encoding %q, which the sandbox cannot scan for secrets", f.name, f.dst.Port(), truncate(ce, 40))
		f.p.report(Event{Kind: KindSecret, Name: f.name, Port: f.dst.Port(), Reason: reason})
		_ = resp.Body.Close()
		f.refuse(reason, true, http.StatusBadGateway)
		return false
	}
	resp.Body = &swapped{r: set.ReverseReader(resp.Body), c: resp.Body, end: func() error {
		set.ReverseHeader(resp.Trailer)
		return nil
	}}
	return true
}

// encoded returns the Content-Encoding of h (its lines joined) if any of
// its codings is other than identity, else "". Every line counts: a
// client applies them all, in order (RFC 9110), not just the first.
func encoded(h http.Header) string {
	vs := h.Values("Content-Encoding")
	for _, v := range vs {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return strings.Join(vs, ", ")
			}
		}
	}
	return ""
}

// swapped is a body read through a substitution. end runs at the
// source's EOF, before it is returned: the trailers are read by then. With
// guard, a placeholder found ends the body with errCleartext instead of
// the bytes that hold it.
type swapped struct {
	r     *secrets.Reader
	c     io.Closer
	guard bool
	end   func() error
}

func (b *swapped) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.guard && len(b.r.Use().Refused) > 0 {
		return 0, errCleartext
	}
	if err == io.EOF {
		if e := b.end(); e != nil {
			return n, e
		}
	}
	return n, err
}

func (b *swapped) Close() error { return b.c.Close() }

// uses gathers what one request's substitutions met, by part.
type uses struct {
	f            *flow
	method, path string
	body         *secrets.Reader

	mu  sync.Mutex
	got []placed
}

// placed is what a substitution in one part of a request met.
type placed struct {
	in  string
	use secrets.Use
}

func (u *uses) add(in string, got secrets.Use) {
	if len(got.Replaced)+len(got.Refused) == 0 {
		return
	}
	u.mu.Lock()
	u.got = append(u.got, placed{in, got})
	u.mu.Unlock()
}

// report reports the request's substitutions, once it was sent or failed.
// A plain request cut off for a placeholder is answered here, unless a
// response already was.
func (u *uses) report(answered bool) {
	if u == nil {
		return
	}
	u.mu.Lock()
	all := slices.Clone(u.got)
	u.mu.Unlock()
	if u.body != nil {
		all = append(all, placed{InBody, u.body.Use()})
	}
	var got secrets.Use
	for _, g := range all {
		got.Replaced = append(got.Replaced, g.use.Replaced...)
		got.Refused = append(got.Refused, g.use.Refused...)
	}
	if u.f.allow == nil {
		// The body stops at the first placeholder found (Request.Write
		// does not wrap errCleartext so that errors.Is would find it).
		if names := sortedSet(got.Refused); names != nil {
			if answered {
				u.f.p.report(Event{Kind: KindSecret, Name: u.f.target(), Port: u.f.dst.Port(), Secrets: names,
					Reason: "the request carries the placeholder of " + strings.Join(names, ", ") + " over plain HTTP; it was cut off before it"})
				return
			}
			u.f.refuseCleartext(names)
		}
		return
	}
	u.reportUse(all)
}

// reportUse reports, part by part, the secrets swapped on a terminated
// connection (where each went: the receipt), the placeholders found there
// of secrets the host may not receive, and those found in a part their
// secret may not go in.
func (u *uses) reportUse(all []placed) {
	f := u.f
	var elsewhere []string
	for _, g := range all {
		if names := sortedSet(g.use.Replaced); names != nil {
			f.p.report(Event{Kind: KindSecret, Allowed: true, Name: f.name, Port: f.dst.Port(), Secrets: names,
				Method: u.method, Path: u.path, Where: g.in})
		}
		for _, n := range sortedSet(g.use.Refused) {
			if !slices.Contains(f.allow, n) {
				elsewhere = append(elsewhere, n)
				continue
			}
			f.p.report(Event{Kind: KindSecret, Name: f.name, Port: f.dst.Port(), Secrets: []string{n},
				Reason: fmt.Sprintf("the placeholder of %s was in the %s of a request to %s:%d; secrets.%s.in allows %s, so it went as it was",
					n, g.in, f.name, f.dst.Port(), n, f.where(n))})
		}
	}
	if names := sortedSet(elsewhere); names != nil {
		f.p.report(Event{Kind: KindSecret, Name: f.name, Port: f.dst.Port(), Secrets: names,
			Reason: fmt.Sprintf("the placeholder of %s was sent to %s:%d, which may not receive it; it went as it was",
				strings.Join(names, ", "), f.name, f.dst.Port())})
	}
}

func sortedSet(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	names = slices.Clone(names)
	slices.Sort(names)
	return slices.Compact(names)
}
