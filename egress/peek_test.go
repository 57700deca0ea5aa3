package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientHello returns the first flight of a real crypto/tls client that
// asks for host ("" sends no SNI).
func clientHello(t testing.TB, host string) []byte {
	t.Helper()
	c, s := net.Pipe()
	defer s.Close()
	go func() {
		tc := tls.Client(c, &tls.Config{ServerName: host, InsecureSkipVerify: host == ""})
		_ = tc.Handshake() // fails when s closes
		c.Close()
	}()
	var buf bytes.Buffer
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 4096)
	for {
		n, err := s.Read(b)
		buf.Write(b[:n])
		if err != nil {
			t.Fatalf("reading the ClientHello: %v", err)
		}
		if _, _, err := serverName(buf.Bytes()); !errors.Is(err, errNeedMore) {
			return buf.Bytes()
		}
	}
}

// fragment re-frames the handshake payload of one record into records of at
// most size bytes.
func fragment(rec []byte, size int) []byte {
	payload := rec[5:]
	var out []byte
	for len(payload) > 0 {
		n := min(size, len(payload))
		out = append(out, recordHandshake, 3, 1, byte(n>>8), byte(n))
		out = append(out, payload[:n]...)
		payload = payload[n:]
	}
	return out
}

// hello builds a ClientHello record by hand with the given extensions.
func hello(exts ...[]byte) []byte {
	body := []byte{3, 3}
	body = append(body, make([]byte, 32)...) // random
	body = append(body, 0)                   // session id
	body = append(body, 0, 2, 0x13, 0x01)    // one cipher suite
	body = append(body, 1, 0)                // null compression
	all := bytes.Join(exts, nil)
	if exts != nil {
		body = append(body, byte(len(all)>>8), byte(len(all)))
		body = append(body, all...)
	}
	msg := append([]byte{handshakeHello, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
	return append([]byte{recordHandshake, 3, 1, byte(len(msg) >> 8), byte(len(msg))}, msg...)
}

func ext(typ uint16, data []byte) []byte {
	return append([]byte{byte(typ >> 8), byte(typ), byte(len(data) >> 8), byte(len(data))}, data...)
}

// sni is a server_name extension's data holding the given (type, name)
// entries.
func sni(entries ...string) []byte {
	var list []byte
	for _, e := range entries {
		list = append(list, sniHostName, byte(len(e)>>8), byte(len(e)))
		list = append(list, e...)
	}
	return append([]byte{byte(len(list) >> 8), byte(len(list))}, list...)
}

func TestServerNameRealClient(t *testing.T) {
	for _, name := range []string{"api.example.com", "API.Example.COM", ""} {
		b := clientHello(t, name)
		got, _, err := serverName(b)
		if err != nil || got != strings.ToLower(name) {
			t.Errorf("%q: serverName = %q, %v", name, got, err)
		}
		// Any proper prefix asks for more, and for no more than the whole.
		for i := range len(b) {
			_, need, err := serverName(b[:i])
			if !errors.Is(err, errNeedMore) || need <= i || need > len(b) {
				t.Fatalf("%q: prefix of %d bytes: need %d, %v", name, i, need, err)
			}
		}
		// Split into small records, as a hostile client may.
		f := fragment(b, len(b)/4+1)
		if got, _, err := serverName(f); err != nil || got != strings.ToLower(name) {
			t.Errorf("%q fragmented: %q, %v", name, got, err)
		}
	}
}

func TestServerName(t *testing.T) {
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
		err  error
	}{
		{"sni", hello(ext(extServerName, sni("Svc.Example.com."))), "svc.example.com", nil},
		{"no extensions", hello(), "", nil},
		{"other extensions only", hello(ext(10, []byte{0, 2, 0, 29})), "", nil},
		{"long name", hello(ext(extServerName, sni(long))), long, nil},
		{"ech", hello(ext(extServerName, sni("a.example")), ext(extEncryptedHello, []byte{0})), "", errECH},
		{"two sni extensions", hello(ext(extServerName, sni("a.example")), ext(extServerName, sni("b.example"))), "", errMalformed},
		{"two host names", hello(ext(extServerName, sni("a.example", "b.example"))), "", errMalformed},
		{"empty host name", hello(ext(extServerName, sni(""))), "", errMalformed},
		{"empty list", hello(ext(extServerName, []byte{0, 0})), "", errMalformed},
		{"trailing bytes in sni", hello(ext(extServerName, append(sni("a.example"), 0))), "", errMalformed},
		{"extension overruns", hello([]byte{0, 0, 0, 9, 0}), "", errMalformed},
		{"not a handshake", []byte{23, 3, 3, 0, 1, 0}, "", errMalformed},
		{"not TLS 1.x", []byte{22, 2, 0, 0, 1, 1}, "", errMalformed},
		{"empty record", []byte{22, 3, 1, 0, 0}, "", errMalformed},
		{"oversized record", []byte{22, 3, 1, 0x40, 1}, "", errMalformed},
		{"server hello", []byte{22, 3, 1, 0, 4, 2, 0, 0, 0}, "", errMalformed},
		{"oversized hello", []byte{22, 3, 1, 0, 4, 1, 1, 0, 1}, "", errMalformed},
		{"truncated body", []byte{22, 3, 1, 0, 5, 1, 0, 0, 1, 3}, "", errMalformed},
		{"header only", []byte{22, 3, 1}, "", errNeedMore},
	} {
		got, _, err := serverName(tc.in)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: serverName = %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestServerNameRecordCap: a hello in more records than any client uses is
// refused, bounding the work a trickling client causes.
func TestServerNameRecordCap(t *testing.T) {
	b := fragment(hello(ext(extServerName, sni("a.example"))), 1)
	if _, _, err := serverName(b); !errors.Is(err, errMalformed) {
		t.Errorf("one-byte records: %v, want errMalformed", err)
	}
}

func TestHostMatches(t *testing.T) {
	for _, tc := range []struct {
		host string
		port uint16
		want bool
	}{
		{"svc.example.com", 80, true},
		{"svc.example.com", 8080, true},
		{"svc.example.com:8080", 8080, true},
		{"SVC.example.com.:80", 80, true},
		{"svc.example.com:80", 8080, false},
		{"svc.example.com:", 80, false},
		{"other.example.com", 80, false},
		{"svc.example.com.evil", 80, false},
		{"svc.example.com@evil", 80, false},
		{"", 80, false},
		{":80", 80, false},
		{"[::1]", 80, false},
		{"[::1]:80", 80, false},
		{"svc.example.com:80:80", 80, false},
	} {
		if got := hostMatches(tc.host, "svc.example.com", tc.port); got != tc.want {
			t.Errorf("hostMatches(%q, port %d) = %v", tc.host, tc.port, got)
		}
	}
}

// FuzzServerName: any input gives a name, a need beyond the input, or an
// error; never a panic, and a name only from a complete record sequence.
func FuzzServerName(f *testing.F) {
	f.Add(clientHello(f, "api.example.com"))
	f.Add(clientHello(f, ""))
	f.Add(hello(ext(extServerName, sni("a.example")), ext(extEncryptedHello, []byte{0})))
	f.Add(fragment(hello(ext(extServerName, sni("a.example"))), 9))
	f.Fuzz(func(t *testing.T, b []byte) {
		name, need, err := serverName(b)
		switch {
		case errors.Is(err, errNeedMore):
			if need <= len(b) {
				t.Fatalf("need %d for %d bytes", need, len(b))
			}
		case err == nil:
			if name != canonicalHost(name) {
				t.Fatalf("name %q not canonical", name)
			}
		}
	})
}

func FuzzHostMatches(f *testing.F) {
	for _, s := range []string{"svc.example.com", "svc.example.com:80", "[::1]:80", "a:b:c"} {
		f.Add(s, uint16(80))
	}
	f.Fuzz(func(t *testing.T, host string, port uint16) {
		if hostMatches(host, "svc.example.com", port) {
			h := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(host, ":"+strconv.Itoa(int(port))), "."))
			if h != "svc.example.com" {
				t.Fatalf("%q matched on port %d", host, port)
			}
		}
	})
}
