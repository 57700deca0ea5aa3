package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// BenchmarkSecrets compares, in one run and against one loopback TLS
// server, an HTTPS client talking to it directly, through the proxy's
// TLS pass-through relay (a host without secrets), and through the proxy
// terminating TLS and swapping a secret (a placeholder in a header out, the
// value in the body back). The stack in front of the proxy costs the same
// on every path and is left out.
//
//	request:  one small GET on a kept-alive connection
//	connect:  a new connection, its TLS handshake(s) and one small GET
//	download: one 4 MiB answer (JSON-like text) on a kept-alive connection
//	echo:     the same, with the secret's value every 34 bytes (the worst
//	          case for the swap: a match wherever it looks)
func BenchmarkSecrets(b *testing.B) {
	f := newSecretFix(b, Limits{BytesIn: 1 << 50, BytesOut: 1 << 50})
	texts := map[string][]byte{
		"/download": bytes.Repeat([]byte(`{"id": 12345, "name": "lorem ipsum", "tags": ["a", "b"]},`+"\n"), (4<<20)/60),
		"/echo":     bytes.Repeat([]byte("lorem ipsum "+valueA+" "), (4<<20)/34),
	}
	small := []byte("{\"token\": \"" + valueA + "\"}")
	f.up.quiet = true
	f.up.respond = func(w io.Writer, req *http.Request, _ []byte) {
		body, ok := texts[req.URL.Path]
		if !ok {
			body = small
		}
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))
		_, _ = w.Write(body)
	}
	paths := []struct {
		name string
		dial func(b *testing.B) *tls.Conn
		auth string
	}{
		{"direct", func(b *testing.B) *tls.Conn {
			c, err := net.Dial("tcp", f.up.ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			return handshake(b, tls.Client(c, &tls.Config{ServerName: svc, RootCAs: f.trust}))
		}, valueA},
		{"passthrough", func(b *testing.B) *tls.Conn {
			return handshake(b, tls.Client(f.open(b, other, false), &tls.Config{ServerName: other, RootCAs: f.trust}))
		}, valueA},
		{"terminated", func(b *testing.B) *tls.Conn {
			return handshake(b, tls.Client(f.open(b, svc, false), &tls.Config{ServerName: svc, RootCAs: f.trust}))
		}, f.ph("A")},
	}
	get := func(b *testing.B, c io.Writer, br *bufio.Reader, host, path, auth string) int {
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", path, host, auth)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(resp.Status, err)
		}
		return int(n)
	}
	for _, p := range paths {
		host := map[string]string{"direct": svc, "passthrough": other, "terminated": svc}[p.name]
		b.Run("request/"+p.name, func(b *testing.B) {
			c := p.dial(b)
			defer func() { _ = c.Close() }()
			br := bufio.NewReader(c)
			for b.Loop() {
				get(b, c, br, host, "/", p.auth)
			}
		})
		b.Run("connect/"+p.name, func(b *testing.B) {
			for b.Loop() {
				c := p.dial(b)
				get(b, c, bufio.NewReader(c), host, "/", p.auth)
				_ = c.Close()
			}
		})
		for _, path := range []string{"/download", "/echo"} {
			b.Run(path[1:]+"/"+p.name, func(b *testing.B) {
				c := p.dial(b)
				defer func() { _ = c.Close() }()
				br := bufio.NewReader(c)
				b.SetBytes(int64(len(texts[path])))
				for b.Loop() {
					if n := get(b, c, br, host, path, p.auth); n != len(texts[path]) {
						b.Fatal("got " + strconv.Itoa(n))
					}
				}
			})
		}
	}
}

func handshake(b *testing.B, c *tls.Conn) *tls.Conn {
	if err := c.Handshake(); err != nil {
		b.Fatal(err)
	}
	return c
}
