package egress

// The HTTP relay under the network's real shapes: heads and bodies in
// separate segments, bodies in parts, 1xx responses, responses without a
// body, answers that come before the request's body, and random
// segmentation of whole conversations.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// part is what one side sends at once, and what the other side must get
// for it after the relay's normalisation ("" means the same).
type part struct{ send, want string }

func (p part) wanted() string {
	if p.want == "" {
		return p.send
	}
	return p.want
}

// readPart reads what p must come out as; an error names what was missing.
func readPart(r io.Reader, p part) (string, error) {
	b := make([]byte, len(p.wanted()))
	if n, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("waiting for %q, got %q: %w", p.wanted(), b[:n], err)
	}
	return string(b), nil
}

// await returns the next value of ch, or false when the test ends first.
func await[T any](ctx context.Context, ch <-chan T) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	case <-ctx.Done():
		var zero T
		return zero, false
	}
}

// TestRelayResponseInParts: a response whose head and body parts arrive in
// separate segments (each sent only once the jail has the one before)
// reaches the jail byte for byte, each part as soon as it arrives. The
// body once landed over the head already sent (issue 10, item 1), and a
// chunk whose segment ended inside its framing waited for the next one.
func TestRelayResponseInParts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []part
	}{
		{"length", []part{
			{send: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-Part: 1\r\n\r\n"},
			{send: "hello"},
			{send: "world"},
		}},
		{"chunked", []part{
			{send: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Part: 1\r\n\r\n"},
			{send: "5\r\nhello\r\n"},
			{send: "5\r\nworld\r\n"},
			{send: "0\r\n\r\n"},
		}},
		{"chunked, cut in the framing", []part{ // the relay re-frames
			{send: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"},
			{send: "5\r\nhello\r", want: "5\r\nhello\r\n"},
			{send: "\n5\r\nworld\r\n2", want: "5\r\nworld\r\n"},
			{send: "\r\n!!\r\n0\r\n\r\n", want: "2\r\n!!\r\n0\r\n\r\n"},
		}},
		{"until close", []part{ // HTTP/1.0 as python3 -m http.server answers
			{send: "HTTP/1.0 200 OK\r\nX-Part: 1\r\n\r\n", want: "HTTP/1.0 200 OK\r\nConnection: close\r\nX-Part: 1\r\n\r\n"},
			{send: "hello"},
			{send: "world"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := make(chan struct{}, len(tc.parts))
			f := newRawFix(t, func(c net.Conn) {
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				for _, p := range tc.parts {
					if _, err := io.WriteString(c, p.send); err != nil {
						return
					}
					if _, ok := await(t.Context(), next); !ok {
						return
					}
				}
			}, Limits{})
			c := f.dial(t)
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n", svc, f.port)
			for _, p := range tc.parts {
				got, err := readPart(c, p)
				if err != nil {
					t.Fatal(err)
				}
				if got != p.wanted() {
					t.Fatalf("the jail got %q, want %q", got, p.wanted())
				}
				next <- struct{}{}
			}
		})
	}
}

// TestRelayRequestBodyInParts: a request whose body the jail sends in parts
// (each only once the host has the one before) reaches the host byte for
// byte, each part as soon as it is sent.
func TestRelayRequestBodyInParts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		framing string
		body    []string
	}{
		{"length", "Content-Length: 15", []string{"hello", "world", "again"}},
		{"chunked", "Transfer-Encoding: chunked", []string{"5\r\nhello\r\n", "5\r\nworld\r\n", "0\r\n\r\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan string, 8)
			partsCh := make(chan []part, 1)
			f := newRawFix(t, func(c net.Conn) {
				parts, _ := await(t.Context(), partsCh)
				for _, p := range parts {
					s, err := readPart(c, p)
					if err != nil {
						s = err.Error()
					}
					got <- s
				}
				_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
			}, Limits{})
			parts := []part{{send: fmt.Sprintf("POST /up HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n\r\n", svc, f.port, tc.framing)}}
			for _, b := range tc.body {
				parts = append(parts, part{send: b})
			}
			partsCh <- parts
			c := f.dial(t)
			for _, p := range parts {
				if _, err := io.WriteString(c, p.send); err != nil {
					t.Fatal(err)
				}
				s, ok := await(t.Context(), got)
				if !ok {
					t.Fatal("the host never answered")
				}
				if s != p.wanted() {
					t.Fatalf("the host got %q, want %q", s, p.wanted())
				}
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != http.StatusNoContent {
				t.Fatalf("response %v, %v", resp, err)
			}
		})
	}
}

// writeCounter counts the writes of the proxy to the jail.
type writeCounter struct {
	net.Conn
	n atomic.Int32
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.n.Add(1)
	return w.Conn.Write(b)
}

// TestRelayOneWrite: a head and a body that arrive together leave together,
// in one write (one segment of the jail's network), not one per part.
func TestRelayOneWrite(t *testing.T) {
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello"
	f := newRawFix(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			_, _ = io.WriteString(c, answer)
		}
	}, Limits{})
	var w *writeCounter
	c := f.dialWrap(t, func(c net.Conn) net.Conn {
		w = &writeCounter{Conn: c}
		return w
	})
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n", svc, f.port)
	got, err := readPart(c, part{send: answer})
	if err != nil || got != answer {
		t.Fatalf("the jail got %q, %v", got, err)
	}
	if n := w.n.Load(); n != 1 {
		t.Errorf("the answer took %d writes, want 1", n)
	}
}

// TestRelayExpectContinue: a client that sends Expect: 100-continue gets the
// host's 100 Continue before it sends its body, then the answer, and the
// connection carries on. The relay once wrote the whole request before
// reading any response: the client waited for a 100 that never came.
func TestRelayExpectContinue(t *testing.T) {
	f := newProxyFix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body) // the server sends 100 Continue on this read
		fmt.Fprintf(w, "%s %s", r.Method, b)
	}), Limits{})
	c := f.dial(t)
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", svc, f.port)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no 100 Continue before the body: %v", err)
	}
	if resp.StatusCode != http.StatusContinue {
		t.Fatalf("status %d before the body, want 100", resp.StatusCode)
	}
	if _, ok := resp.Header["Content-Length"]; ok {
		t.Error("a Content-Length in a 1xx response (RFC 9110 forbids it)")
	}
	_, _ = io.WriteString(c, "hello")
	for _, want := range []string{"POST hello", "GET "} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(b) != want {
			t.Errorf("response %d %q, want 200 %q", resp.StatusCode, b, want)
		}
		if want == "POST hello" {
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n", svc, f.port)
		}
	}
}

// TestRelayExpectContinueClient: Go's own client, told to wait a minute for
// 100 Continue, gets it through the relay.
func TestRelayExpectContinueClient(t *testing.T) {
	f := newProxyFix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d", len(b))
	}), Limits{})
	tr := &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			return f.open(nil)
		},
		ExpectContinueTimeout: time.Minute,
		ResponseHeaderTimeout: testDeadline,
	}
	defer tr.CloseIdleConnections()
	var got100 atomic.Bool
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{Got100Continue: func() { got100.Store(true) }})
	body := strings.Repeat("x", 1<<20)
	req, err := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("http://%s:%d/", svc, f.port), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Expect", "100-continue")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != fmt.Sprint(len(body)) || !got100.Load() {
		t.Errorf("the host read %s bytes, want %d; 100 Continue seen: %v", b, len(body), got100.Load())
	}
}

// TestRelayEarlyAnswer: a host that answers before it has the request's
// body (a 417 to Expect, a 401 at once) is heard at once, and since the
// rest of the body will not follow, the relay says it closes the connection
// and does.
func TestRelayEarlyAnswer(t *testing.T) {
	t.Run("417 to Expect", func(t *testing.T) {
		f := newProxyFix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusExpectationFailed)
			_, _ = io.WriteString(w, "no")
		}), Limits{})
		c := f.dial(t)
		fmt.Fprintf(c, "PUT / HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", svc, f.port)
		checkEarly(t, c, http.StatusExpectationFailed, "no")
	})
	t.Run("401 keeping the connection", func(t *testing.T) {
		f := newRawFix(t, func(c net.Conn) {
			if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
				return
			}
			_, _ = io.WriteString(c, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nauth")
			_, _ = io.Copy(io.Discard, c)
		}, Limits{})
		c := f.dial(t)
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: 100000\r\n\r\n", svc, f.port)
		checkEarly(t, c, http.StatusUnauthorized, "auth")
	})
}

func checkEarly(t *testing.T, c net.Conn, status int, body string) {
	t.Helper()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer before the body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || string(b) != body || !resp.Close {
		t.Errorf("response %d %q (closing: %v), want %d %q closing", resp.StatusCode, b, resp.Close, status, body)
	}
	if rest, err := io.ReadAll(br); len(rest) > 0 || (err != nil && !isClosed(err)) {
		t.Errorf("after the answer: %q, %v; want the end", rest, err)
	}
}

// TestRelayIdleMidRequest: a client that stops in the middle of its body,
// while the host waits for the rest, is ended by the idle limit, both
// goroutines of the exchange with it.
func TestRelayIdleMidRequest(t *testing.T) {
	f := newRawFix(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }, Limits{IdleTimeout: time.Second})
	c := f.dial(t)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\nabc", svc, f.port)
	if b, err := io.ReadAll(c); len(b) > 0 || (err != nil && !isClosed(err)) {
		t.Fatalf("the jail got %q, %v; want the end", b, err)
	}
	if n := f.events(KindLimit, "no traffic"); n != 1 {
		t.Errorf("%d idle events, want 1", n)
	}
}

// TestRelayNoBody: responses that carry no body whatever their headers say
// (to HEAD; 204; 304) are relayed without waiting for one or inventing
// one, as they came, and the connection carries on.
func TestRelayNoBody(t *testing.T) {
	answers := map[string]string{
		"HEAD /":     "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nX-A: b\r\n\r\n",
		"GET /204":   "HTTP/1.1 204 No Content\r\nX-A: b\r\n\r\n",
		"GET /304":   "HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\nEtag: \"v1\"\r\n\r\n",
		"POST /204":  "HTTP/1.1 204 No Content\r\n\r\n",
		"GET /last":  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HEAD /te":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		"PUT /304":   "HTTP/1.1 304 Not Modified\r\n\r\n",
		"DELETE /20": "HTTP/1.1 204 No Content\r\n\r\n",
	}
	f := newRawFix(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			_, _ = io.WriteString(c, answers[req.Method+" "+req.URL.Path])
		}
	}, Limits{})
	c := f.dial(t)
	br := bufio.NewReader(c)
	for _, tc := range []struct {
		req      string
		status   int
		length   string // the Content-Length header the jail must see
		body     string
		chunked  bool
		sendBody string
	}{
		{"HEAD /", 200, "1234", "", false, ""},
		{"GET /204", 204, "", "", false, ""},
		{"GET /304", 304, "1234", "", false, ""},
		{"POST /204", 204, "", "", false, "hi"},
		{"HEAD /te", 200, "", "", true, ""},
		{"PUT /304", 304, "", "", false, "data"},
		{"DELETE /20", 204, "", "", false, ""},
		{"GET /last", 200, "2", "ok", false, ""},
	} {
		method, path, _ := strings.Cut(tc.req, " ")
		framing := ""
		if tc.sendBody != "" {
			framing = fmt.Sprintf("Content-Length: %d\r\n", len(tc.sendBody))
		}
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n%s", method, path, svc, f.port, framing, tc.sendBody)
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%s: %v", tc.req, err)
		}
		b, _ := io.ReadAll(resp.Body)
		length := strings.Join(resp.Header["Content-Length"], ",")
		if resp.StatusCode != tc.status || string(b) != tc.body || length != tc.length || (len(resp.TransferEncoding) > 0) != tc.chunked {
			t.Errorf("%s: %d %q Content-Length %q Transfer-Encoding %q; want %d %q %q chunked %v",
				tc.req, resp.StatusCode, b, length, resp.TransferEncoding, tc.status, tc.body, tc.length, tc.chunked)
		}
	}
}

// TestRelayEarlyHints: a 103 reaches the jail when it comes, before the
// final response (which the host sends only once the jail has the 103).
func TestRelayEarlyHints(t *testing.T) {
	next := make(chan struct{}, 1)
	f := newRawFix(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			_, _ = io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
			if _, ok := await(t.Context(), next); !ok {
				return
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	}, Limits{})
	c := f.dial(t)
	br := bufio.NewReader(c)
	for range 2 { // the connection is kept for a second request
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n", svc, f.port)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no 103 before the answer: %v", err)
		}
		if resp.StatusCode != http.StatusEarlyHints || resp.Header.Get("Link") != "</style.css>; rel=preload" {
			t.Fatalf("got %d %v, want the 103", resp.StatusCode, resp.Header)
		}
		next <- struct{}{}
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != "ok" {
			t.Fatalf("answer %d %q", resp.StatusCode, b)
		}
	}
}

// A conversation of one connection for the random segmentation tests.
type relayCase struct {
	ex []relayExchange
	// cuts are the lengths of what each side writes at once, in turn: a
	// byte c cuts 1+c*c bytes, and an odd c pauses after them, so that
	// the piece travels alone.
	cuts []byte
}

type relayExchange struct {
	post        bool // else a GET without a body
	chunkedReq  bool
	chunkedResp bool
	closeResp   bool // an HTTP/1.0 answer ended by closing; only the last
	reqBody     string
	respBody    string
}

// framed is the framing headers, the end of the head, and the body.
func framed(body string, chunked bool) string {
	if !chunked {
		return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	var b strings.Builder
	b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	for len(body) > 0 {
		n := min(len(body), 1000)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

func (e relayExchange) request(i int, host string) string {
	if !e.post {
		return fmt.Sprintf("GET /%d HTTP/1.1\r\nHost: %s\r\nX-Seq: %d\r\n\r\n", i, host, i)
	}
	return fmt.Sprintf("POST /%d HTTP/1.1\r\nHost: %s\r\nX-Seq: %d\r\n", i, host, i) + framed(e.reqBody, e.chunkedReq)
}

func (e relayExchange) response(i int) string {
	if e.closeResp {
		return fmt.Sprintf("HTTP/1.0 200 OK\r\nX-Seq: %d\r\n\r\n%s", i, e.respBody)
	}
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nX-Seq: %d\r\n", i) + framed(e.respBody, e.chunkedResp)
}

// What each side must see of exchange i, in a form that ignores only what
// the relay may normalise (the order of header lines, the chunk sizes).
func (e relayExchange) wantRequest(i int) string {
	switch {
	case !e.post:
		return fmt.Sprintf("GET /%d seq=%d te=[] length=0 body=%q", i, i, "")
	case e.chunkedReq:
		return fmt.Sprintf("POST /%d seq=%d te=[chunked] length=-1 body=%q", i, i, e.reqBody)
	}
	return fmt.Sprintf("POST /%d seq=%d te=[] length=%d body=%q", i, i, len(e.reqBody), e.reqBody)
}

func (e relayExchange) wantResponse(i int) string {
	switch {
	case e.closeResp:
		return fmt.Sprintf("HTTP/1.0 200 seq=%d te=[] length=-1 body=%q", i, e.respBody)
	case e.chunkedResp:
		return fmt.Sprintf("HTTP/1.1 200 seq=%d te=[chunked] length=-1 body=%q", i, e.respBody)
	}
	return fmt.Sprintf("HTTP/1.1 200 seq=%d te=[] length=%d body=%q", i, len(e.respBody), e.respBody)
}

func sawRequest(r *http.Request, body []byte) string {
	return fmt.Sprintf("%s %s seq=%s te=%v length=%d body=%q", r.Method, r.URL.Path, r.Header.Get("X-Seq"), r.TransferEncoding, r.ContentLength, body)
}

func sawResponse(r *http.Response, body []byte) string {
	return fmt.Sprintf("%s %d seq=%s te=%v length=%d body=%q", r.Proto, r.StatusCode, r.Header.Get("X-Seq"), r.TransferEncoding, r.ContentLength, body)
}

// send writes s in pieces cut by rc.cuts, at most about 200 of them.
func (rc *relayCase) send(w io.Writer, s string) error {
	least := 1 + len(s)/200
	for i := 0; len(s) > 0; i++ {
		c := 255
		if len(rc.cuts) > 0 {
			c = int(rc.cuts[i%len(rc.cuts)])
		}
		n := min(len(s), max(least, 1+c*c))
		if _, err := io.WriteString(w, s[:n]); err != nil {
			return err
		}
		s = s[n:]
		if c%2 == 1 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}

// checkRelay runs rc through the relay: the jail sends its requests
// (pipelined) and the host its answers, both cut into pieces, and each side
// must see exactly what the other sent, and nothing after.
func checkRelay(t *testing.T, rc *relayCase) {
	// The host reports what it saw of each request, then "end" and what
	// came after the last.
	seen := make(chan string, len(rc.ex)+1)
	f := newRawFix(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i, e := range rc.ex {
			req, err := http.ReadRequest(br)
			if err != nil {
				seen <- fmt.Sprintf("request %d: %v", i, err)
				return
			}
			b, err := io.ReadAll(req.Body)
			if err != nil {
				seen <- fmt.Sprintf("request %d: body: %v", i, err)
				return
			}
			seen <- sawRequest(req, b)
			if rc.send(c, e.response(i)) != nil {
				return
			}
			if e.closeResp {
				seen <- "end"
				return
			}
		}
		if b, err := io.ReadAll(br); len(b) > 0 || err != nil {
			seen <- fmt.Sprintf("%.100q, %v", b, err)
			return
		}
		seen <- "end"
	}, Limits{})
	host := fmt.Sprintf("%s:%d", svc, f.port)
	var all strings.Builder
	for i, e := range rc.ex {
		all.WriteString(e.request(i, host))
	}
	c := f.dial(t)
	go func() {
		if rc.send(c, all.String()) == nil {
			_ = c.(*net.TCPConn).CloseWrite()
		}
	}()
	br := bufio.NewReader(c)
	for i, e := range rc.ex {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response %d: body: %v", i, err)
		}
		if got, want := sawResponse(resp, b), e.wantResponse(i); got != want {
			t.Errorf("the jail got %s", difference(got, want))
		}
		got, _ := await(t.Context(), seen)
		if want := e.wantRequest(i); got != want {
			t.Errorf("the host got %s", difference(got, want))
		}
	}
	if b, err := io.ReadAll(br); len(b) > 0 || err != nil {
		t.Errorf("after the responses: %.100q, %v", b, err)
	}
	if got, _ := await(t.Context(), seen); got != "end" {
		t.Errorf("the host, after the requests: %s", got)
	}
}

// difference shows where got first differs from want.
func difference(got, want string) string {
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	from := max(0, i-40)
	return fmt.Sprintf("%.120s\nwant %.120s\n(from byte %d of %d, want %d)", got[from:], want[from:], from, len(got), len(want))
}

// randomCase draws a conversation: up to three exchanges, bodies from empty
// to well past the relay's buffers, cut anywhere.
func randomCase(r *rand.Rand) *relayCase {
	body := func() string {
		n := r.IntN(300)
		if r.IntN(5) == 0 {
			n = r.IntN(200 << 10)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return string(b)
	}
	rc := &relayCase{}
	for i := range 1 + r.IntN(3) {
		rc.ex = append(rc.ex, relayExchange{
			post:        r.IntN(3) > 0,
			chunkedReq:  r.IntN(3) == 0,
			chunkedResp: r.IntN(3) == 0,
			closeResp:   i == 2 && r.IntN(2) == 0,
			reqBody:     body(),
			respBody:    body(),
		})
	}
	// Mostly small pieces, a few large.
	for range 1 + r.IntN(8) {
		rc.cuts = append(rc.cuts, byte(r.IntN(1+r.IntN(256))))
	}
	return rc
}

// TestRelaySegmented: random conversations, randomly cut, reach each side
// unchanged. The seed is fixed, so that a failure repeats.
func TestRelaySegmented(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 1))
	n := 100
	if testing.Short() {
		n = 20
	}
	for i := range n {
		rc := randomCase(r)
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkRelay(t, rc) })
	}
}

// FuzzRelay: as TestRelaySegmented, with the bodies, the cuts and the shape
// of the conversation from the fuzzer. mode's lowest two bits give the
// number of exchanges (one to three), the next three bits of each exchange a
// POST, a chunked request and a chunked response, and bit 11 an HTTP/1.0
// last answer.
func FuzzRelay(f *testing.F) {
	f.Add([]byte("hello"), []byte("world"), []byte{0, 3, 200}, uint16(0b0_111_111_111_10))
	f.Add([]byte(""), []byte(""), []byte{1}, uint16(0b0_000_000_001_00))
	f.Add([]byte(strings.Repeat("a", 70000)), []byte(strings.Repeat("HTTP/1.1 200 OK\r\n", 4000)), []byte{255, 7, 2}, uint16(0b1_011_101_110_10))
	f.Add([]byte("0\r\n\r\n"), []byte("5\r\nhello\r\n"), []byte{2, 4, 6}, uint16(0b0_000_000_111_00))
	f.Fuzz(func(t *testing.T, reqBody, respBody, cuts []byte, mode uint16) {
		rc := &relayCase{cuts: cuts}
		n := 1 + int(mode&3)%3
		for i := range n {
			bits := mode >> (2 + 3*i)
			rc.ex = append(rc.ex, relayExchange{
				post:        bits&1 != 0,
				chunkedReq:  bits&2 != 0,
				chunkedResp: bits&4 != 0,
				closeResp:   i == n-1 && mode&(1<<11) != 0,
				reqBody:     string(reqBody[:min(len(reqBody), 256<<10)]),
				respBody:    string(respBody[:min(len(respBody), 256<<10)]),
			})
		}
		checkRelay(t, rc)
	})
}
