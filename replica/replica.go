// Package replica lets several replicas of crucible serve (a StatefulSet's
// pods) serve each other's clients: the ids a replica hands out (session
// ids, workspace handles, the state of a paused execution) name the
// replica that owns them, authenticated with a key the replicas share, and
// a request that carries one is forwarded to its owner, one ordinary
// reverse-proxy hop, with the client's own credentials.
//
// The key keeps a client from forging an id that names another replica, or
// a host that is no replica at all: the name goes into the peer's address.
package replica

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/cruciblehq/crucible/internal/randomid"
)

// Hop marks a request that a replica forwarded: its receiver serves it
// itself, whoever owns its ids, so that no request goes round. A client
// that sets it only keeps its request from being forwarded.
const Hop = "Crucible-Replica-Hop"

// MinKey is the shortest key New takes, in bytes.
const MinKey = 32

// namePattern is a replica's name: a DNS name (a StatefulSet's pod names
// are), since it goes into the peer's address.
var namePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$`)

// ValidName says whether name can name a replica.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Replicas is this replica's view of the set. Safe for concurrent use.
type Replicas struct {
	self  string
	key   []byte
	peer  string // URL with {name} where the owner's name goes
	proxy *httputil.ReverseProxy
}

// New makes this replica, named self, of a set whose members are reached
// at peer with {name} replaced by a member's name (e.g.
// "http://{name}.crucible-peers:8080"), sharing key.
func New(self, peer string, key []byte) (*Replicas, error) {
	switch {
	case !ValidName(self):
		return nil, fmt.Errorf("replica name %q: want a DNS name (lowercase letters, digits, '-' and '.')", self)
	case len(key) < MinKey:
		return nil, fmt.Errorf("the replicas' key has %d bytes: want at least %d", len(key), MinKey)
	}
	if err := CheckPeer(peer); err != nil {
		return nil, err
	}
	r := &Replicas{self: self, key: key, peer: strings.TrimRight(peer, "/")}
	r.proxy = &httputil.ReverseProxy{
		Rewrite:       r.rewrite,
		FlushInterval: -1, // events as they come: progress, the result
		Transport: &http.Transport{
			// An owner that is gone is known at once (refused, no such
			// name) or within seconds (a dial that hangs).
			DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 10 * time.Second}).DialContext,
			TLSHandshakeTimeout: 3 * time.Second,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		},
		ModifyResponse: lastWordOnLoss,
		ErrorHandler:   unreachable,
	}
	return r, nil
}

// CheckPeer says what is wrong with peer, a replica's URL with {name}
// where its name goes, or nil.
func CheckPeer(peer string) error {
	u, err := url.Parse(strings.ReplaceAll(peer, "{name}", "crucible-0"))
	if !strings.Contains(peer, "{name}") || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		!strings.Contains(u.Host, "crucible-0") || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("%q is not an http or https URL with {name} in its host where a replica's name goes, such as http://{name}.crucible-peers:8080", peer)
	}
	return nil
}

// Self is this replica's name.
func (r *Replicas) Self() string { return r.self }

// ID returns a new id of kind (a short prefix such as "ws_") owned by this
// replica: kind, the name, 128 random bits and a 128-bit MAC of the three.
func (r *Replicas) ID(kind string) string {
	body := randomid.New(kind+r.self+".", 16)
	return body + "." + r.mac(body)
}

// Owner is the replica that owns id, an id of kind that some replica of
// the set made; ok is false for anything else (a forgery, a change, an id
// of another kind or of no replica set).
func (r *Replicas) Owner(kind, id string) (name string, ok bool) {
	rest, found := strings.CutPrefix(id, kind)
	body, mac, ok1 := cutLast(rest, '.')
	name, _, ok2 := cutLast(body, '.')
	if !found || !ok1 || !ok2 || !hmac.Equal([]byte(mac), []byte(r.mac(kind+body))) || !ValidName(name) {
		return "", false
	}
	return name, true
}

// cutLast cuts s around its last sep.
func cutLast(s string, sep byte) (before, after string, found bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

func (r *Replicas) mac(body string) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Lost is what a client gets when the replica that owns its request's id
// cannot be reached, or ends while it answers: a message in the words of
// the request (a tool's error, a JSON-RPC error), as JSON.
type Lost struct {
	// Status is the HTTP status when nothing was sent yet: 404 for a
	// session (the client starts a new one), 200 for a message in Body.
	Status int
	// Body is a JSON-RPC message: the whole response when nothing was sent
	// yet, or the data of a last event of an event stream cut short.
	Body []byte
}

// Forward serves req by the replica named owner, as it would be served
// there, or answers lost when the owner cannot be reached or is lost
// mid-answer.
func (r *Replicas) Forward(w http.ResponseWriter, req *http.Request, owner string, lost Lost) {
	target, err := url.Parse(strings.ReplaceAll(r.peer, "{name}", owner))
	if err != nil || !ValidName(owner) {
		writeLost(w, lost) // New checked the template; Owner the name
		return
	}
	r.proxy.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), forwardKey{}, &forward{target, lost})))
}

type forwardKey struct{}

// forwardOf is what Forward put in req's context.
func forwardOf(req *http.Request) *forward {
	return req.Context().Value(forwardKey{}).(*forward)
}

// forward is what rewrite and the error paths need of one forwarded request.
type forward struct {
	target *url.URL
	lost   Lost
}

func (r *Replicas) rewrite(pr *httputil.ProxyRequest) {
	f := forwardOf(pr.In)
	pr.SetURL(f.target)
	pr.Out.URL.Path, pr.Out.URL.RawPath = pr.In.URL.Path, pr.In.URL.RawPath // not joined: the peer's own path is the same
	pr.Out.Host = pr.In.Host                                                // the client's: the owner checks it as ours did
	pr.SetXForwarded()
	pr.Out.Header.Set(Hop, r.self)
}

// unreachable answers lost for a request whose owner did not answer.
func unreachable(w http.ResponseWriter, req *http.Request, _ error) {
	writeLost(w, forwardOf(req).lost)
}

func writeLost(w http.ResponseWriter, lost Lost) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(lost.Status)
	_, _ = w.Write(lost.Body)
}

// lastWordOnLoss makes an event stream that ends with an error (the owner
// went away mid-answer) end instead with one last event, the lost message.
func lastWordOnLoss(resp *http.Response) error {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return nil
	}
	if lost := forwardOf(resp.Request).lost; lost.Body != nil {
		resp.Body = &lastWord{ReadCloser: resp.Body, event: []byte("event: message\ndata: " + string(lost.Body) + "\n\n")}
	}
	return nil
}

// lastWord is a body that, on an error other than its end, gives event
// and then ends.
type lastWord struct {
	io.ReadCloser
	event []byte
	lost  bool
}

func (l *lastWord) Read(p []byte) (int, error) {
	if l.lost {
		if len(l.event) == 0 {
			return 0, io.EOF
		}
		n := copy(p, l.event)
		l.event = l.event[n:]
		return n, nil
	}
	n, err := l.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		// An event may have been cut in two: a blank line ends it first.
		l.lost, l.event = true, append([]byte("\n\n"), l.event...)
		return n, nil
	}
	return n, err
}
