package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// maxFetches bounds the fetches in flight at once; the jail's network has
// its own limit on connections.
const maxFetches = 64

// fetches are the program's requests in flight, and the bodies of their
// responses until the program reads them.
type fetches struct {
	mu     sync.Mutex // guards cancel; bodies are the VM goroutine's alone
	seq    int
	cancel map[int]context.CancelFunc
	bodies map[int][]byte
}

func (f *fetches) init() {
	f.cancel = map[int]context.CancelFunc{}
	f.bodies = map[int][]byte{}
}

func (f *fetches) abort(id int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.cancel[id]; c != nil {
		c()
	}
}

func (f *fetches) cancelAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cancel {
		c()
	}
}

// fetchRequest is what the prelude's fetch asks for.
type fetchRequest struct {
	Method   string      `json:"method"`
	URL      string      `json:"url"`
	Headers  [][2]string `json:"headers"`
	Body     *string     `json:"body"`   // nil: none
	Binary   bool        `json:"binary"` // Body is latin1, not text
	Redirect string      `json:"redirect"`
}

// fetchResponse is what the prelude builds a Response from; the body stays
// here, under the request's id, until the program takes it.
type fetchResponse struct {
	Status     int         `json:"status"`
	StatusText string      `json:"statusText"`
	URL        string      `json:"url"`
	Redirected bool        `json:"redirected"`
	Headers    [][2]string `json:"headers"`
}

// startFetch starts a request and returns its id; the prelude's dispatcher
// hears of it as ("fetch", id, true, response) or ("fetch", id, false,
// message).
func (r *Runtime) startFetch(a []any) (any, error) {
	if r.o.HTTP == nil {
		return nil, errors.New("fetch is not available here")
	}
	if r.busy >= maxFetches {
		return nil, fmt.Errorf("more than %d fetches in flight", maxFetches)
	}
	var req fetchRequest
	if err := json.Unmarshal([]byte(argString(a, 0)), &req); err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	hreq, err := r.httpRequest(&req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.fetch.mu.Lock()
	r.fetch.seq++
	id := r.fetch.seq
	r.fetch.cancel[id] = cancel
	r.fetch.mu.Unlock()
	r.busy++
	client := *r.o.HTTP
	client.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		switch {
		case req.Redirect == "manual":
			return http.ErrUseLastResponse
		case req.Redirect == "error":
			return errors.New("redirect refused (redirect: \"error\")")
		case len(via) >= 20:
			return errors.New("too many redirects")
		}
		return nil
	}
	limit := r.o.Heap
	go func() {
		resp, body, err := do(&client, hreq.WithContext(ctx), limit)
		r.post(func() {
			r.busy--
			r.fetch.mu.Lock()
			delete(r.fetch.cancel, id)
			r.fetch.mu.Unlock()
			cancel()
			if err != nil {
				_ = r.call("fetch", id, false, fetchError(err))
				return
			}
			r.fetch.bodies[id] = body
			b, _ := json.Marshal(resp)
			_ = r.call("fetch", id, true, string(b))
		})
	}()
	return id, nil
}

func (r *Runtime) httpRequest(req *fetchRequest) (*http.Request, error) {
	var body io.Reader
	if req.Body != nil {
		b := []byte(*req.Body)
		if req.Binary {
			var err error
			if b, err = fromLatin1(*req.Body); err != nil {
				return nil, err
			}
		}
		body = strings.NewReader(string(b))
	}
	hreq, err := http.NewRequest(req.Method, req.URL, body)
	if err != nil {
		return nil, fmt.Errorf("fetch: %s", shorten(err.Error()))
	}
	if hreq.URL.Scheme != "http" && hreq.URL.Scheme != "https" {
		return nil, fmt.Errorf("fetch: the scheme %q is not supported (http and https are)", shorten(hreq.URL.Scheme))
	}
	hreq.Header.Set("User-Agent", "crucible")
	hreq.Header.Set("Accept", "*/*")
	for _, h := range req.Headers {
		if strings.EqualFold(h[0], "host") {
			hreq.Host = h[1]
			continue
		}
		hreq.Header.Add(h[0], h[1])
	}
	return hreq, nil
}

// do runs one request and reads its whole response body, up to limit bytes.
func do(c *http.Client, req *http.Request, limit int64) (*fetchResponse, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(body)) > limit {
		return nil, nil, fmt.Errorf("the response body is larger than the heap limit (%d MiB)", limit>>20)
	}
	out := &fetchResponse{
		Status:     resp.StatusCode,
		StatusText: strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode)+" "),
		URL:        resp.Request.URL.String(),
		Redirected: resp.Request != req,
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			out.Headers = append(out.Headers, [2]string{strings.ToLower(k), v})
		}
	}
	return out, body, nil
}

// fetchError says why a fetch failed.
func fetchError(err error) string {
	if errors.Is(err, context.Canceled) {
		return "the request was aborted"
	}
	return "fetch failed: " + shorten(err.Error())
}

// takeBody hands the program a response's body, once: body(id, binary).
func (r *Runtime) takeBody(a []any) (any, error) {
	id := argInt(a, 0)
	b, ok := r.fetch.bodies[id]
	if !ok {
		return nil, errors.New("the body has been read already")
	}
	delete(r.fetch.bodies, id)
	if argBool(a, 1) {
		return latin1(b), nil
	}
	return string(b), nil
}
