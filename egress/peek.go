package egress

// What the proxy reads of a connection's first bytes before deciding: the
// server name of a TLS ClientHello, and whether an HTTP Host names the host
// behind the address. Both read hostile input, and never more than the
// caller has buffered.

import (
	"errors"
	"strconv"
	"strings"
)

var (
	// errNeedMore means the bytes so far are a valid beginning: read more.
	errNeedMore = errors.New("egress: need more bytes")
	// errMalformed means they are not a ClientHello.
	errMalformed = errors.New("egress: malformed TLS ClientHello")
	// errECH means the ClientHello encrypts its real server name.
	errECH = errors.New("egress: encrypted ClientHello")
)

const (
	recordHandshake   = 22 // TLS record type
	handshakeHello    = 1  // ClientHello handshake type
	extServerName     = 0
	extEncryptedHello = 0xfe0d // encrypted_client_hello (RFC 9849)
	sniHostName       = 0
	// maxHelloBody bounds a ClientHello: real ones are under 2 KiB, or
	// about 10 KiB with post-quantum key shares.
	maxHelloBody = 1 << 16
	// maxHelloRecords bounds the records a ClientHello may span: a real
	// one fits in one or two 16 KiB records.
	maxHelloRecords = 8
)

// looksLikeTLS reports whether b begins a TLS handshake record.
func looksLikeTLS(b []byte) bool { return len(b) > 0 && b[0] == recordHandshake }

// serverName returns the SNI host name of the ClientHello that b begins,
// lowercased and without a trailing dot; "" if it names none. The hello may
// span several records. While b is a valid but incomplete prefix it returns
// errNeedMore and need, the length b must reach before another call can
// tell more (so a client that sends a byte at a time costs one parse per
// record, not one per byte). It returns errECH for a hello that hides its
// real name, and errMalformed for anything else.
func serverName(b []byte) (name string, need int, err error) {
	// Join the handshake records' payloads until the hello is whole.
	var msg []byte
	at := 0 // bytes of b consumed
	for records := 0; ; records++ {
		if records == maxHelloRecords {
			return "", 0, errMalformed
		}
		if len(b)-at < 5 {
			return "", at + 5, errNeedMore
		}
		h := b[at : at+5]
		if h[0] != recordHandshake || h[1] != 3 {
			return "", 0, errMalformed
		}
		n := int(h[3])<<8 | int(h[4])
		if n == 0 || n > 1<<14 { // empty, or over the record size limit
			return "", 0, errMalformed
		}
		if len(b)-at < 5+n {
			return "", at + 5 + n, errNeedMore
		}
		msg = append(msg, b[at+5:at+5+n]...)
		at += 5 + n
		if len(msg) < 4 {
			continue
		}
		if msg[0] != handshakeHello {
			return "", 0, errMalformed
		}
		size := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if size > maxHelloBody {
			return "", 0, errMalformed
		}
		if len(msg) >= 4+size {
			name, err := helloServerName(msg[4 : 4+size])
			return name, 0, err
		}
	}
}

// helloServerName parses a ClientHello's body (RFC 8446, 4.1.2).
func helloServerName(h []byte) (string, error) {
	r := reader(h)
	if !r.skip(2+32) || // legacy_version, random
		!r.skipVector(1) || // legacy_session_id
		!r.skipVector(2) || // cipher_suites
		!r.skipVector(1) { // legacy_compression_methods
		return "", errMalformed
	}
	if r.empty() {
		return "", nil // no extensions: no SNI
	}
	exts, ok := r.vector(2)
	if !ok || !r.empty() {
		return "", errMalformed
	}
	var name string
	seen := map[uint16]bool{}
	for !exts.empty() {
		typ, ok1 := exts.u16()
		data, ok2 := exts.vector(2)
		if !ok1 || !ok2 || seen[typ] { // a repeated extension is an error
			return "", errMalformed
		}
		seen[typ] = true
		switch typ {
		case extEncryptedHello:
			return "", errECH
		case extServerName:
			var err error
			if name, err = sniHost(data); err != nil {
				return "", err
			}
		}
	}
	return name, nil
}

// sniHost returns the host_name in a server_name extension (RFC 6066, 3).
func sniHost(data reader) (string, error) {
	list, ok := data.vector(2)
	if !ok || !data.empty() || list.empty() {
		return "", errMalformed
	}
	var name string
	for !list.empty() {
		typ, ok1 := list.u8()
		host, ok2 := list.vector(2)
		if !ok1 || !ok2 {
			return "", errMalformed
		}
		if typ != sniHostName {
			continue
		}
		if name != "" || len(host) == 0 { // one host_name, not empty
			return "", errMalformed
		}
		name = canonicalHost(string(host))
	}
	return name, nil
}

// canonicalHost lowercases ASCII (as DNS compares names) and drops one
// trailing dot, so that a name compares equal to the table's form.
func canonicalHost(h string) string {
	h = strings.TrimSuffix(h, ".")
	b := []byte(h)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// hostMatches reports whether an HTTP Host header names name, on port or
// with no port at all (the client's default for the scheme).
func hostMatches(host, name string, port uint16) bool {
	// A name holds no ':' or '[', so whatever precedes the last ':' must
	// be the name itself.
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		if host[i+1:] != strconv.Itoa(int(port)) {
			return false
		}
		host = host[:i]
	}
	return host != "" && canonicalHost(host) == name
}

// reader reads TLS's big-endian fields and length-prefixed vectors; every
// read reports whether the bytes were there.
type reader []byte

func (r *reader) empty() bool { return len(*r) == 0 }

func (r *reader) skip(n int) bool {
	if len(*r) < n {
		return false
	}
	*r = (*r)[n:]
	return true
}

func (r *reader) u8() (uint8, bool) {
	if len(*r) < 1 {
		return 0, false
	}
	v := (*r)[0]
	*r = (*r)[1:]
	return v, true
}

func (r *reader) u16() (uint16, bool) {
	if len(*r) < 2 {
		return 0, false
	}
	v := uint16((*r)[0])<<8 | uint16((*r)[1])
	*r = (*r)[2:]
	return v, true
}

// vector reads a vector whose length is a prefix of size bytes (1 or 2).
func (r *reader) vector(size int) (reader, bool) {
	var n int
	switch size {
	case 1:
		v, ok := r.u8()
		if !ok {
			return nil, false
		}
		n = int(v)
	default:
		v, ok := r.u16()
		if !ok {
			return nil, false
		}
		n = int(v)
	}
	if len(*r) < n {
		return nil, false
	}
	v := (*r)[:n]
	*r = (*r)[n:]
	return v, true
}

func (r *reader) skipVector(size int) bool {
	_, ok := r.vector(size)
	return ok
}
