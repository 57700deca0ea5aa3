package egress

import (
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"strconv"
	"sync"

	"golang.org/x/net/dns/dnsmessage"
)

const (
	// dnsTTL is the TTL of every answer. It is short because a synthetic
	// address means nothing outside the execution that handed it out.
	dnsTTL = 60
	// ednsUDPSize is the payload size advertised to an EDNS0 client: the
	// common "DNS flag day" value, though our answers never come near it.
	ednsUDPSize = 1232
	// maxStreamMessages bounds the queries answered on one DNS-over-TCP
	// connection, so that one connection cannot hold a goroutine forever.
	maxStreamMessages = 1000
	// maxShownName caps a name repeated in a Reason (the longest valid name).
	maxShownName = 253
)

// names is one execution's table of synthetic addresses: each name the
// resolver answered for gets an IPv4 address from [Synthetic4] and an IPv6
// address from [Synthetic6], unique to it, so that a connection's
// destination address tells the stack which name the jail meant. It is safe
// for concurrent use.
type names struct {
	mu    sync.Mutex
	limit int
	index map[string]int // name -> position in list
	list  []string       // the i-th name holds the i-th address pair
}

// firstHost is the offset into the synthetic prefixes of the first address
// handed out: offset 0 is the network address and 1 is [Resolver].
const firstHost = 2

// newNames returns an empty table that holds at most limit names. limit is
// clamped to what [Synthetic4] can hold: 2^17 addresses less the network
// address, the resolver and the last address (the /15's broadcast address,
// which some stacks refuse to connect to).
func newNames(limit int) *names {
	capacity := 1<<(32-Synthetic4.Bits()) - firstHost - 1
	return &names{limit: min(max(limit, 0), capacity), index: make(map[string]int)}
}

// assign returns name's address pair, handing out the next free pair to a
// name not seen before. ok is false when the name is new and the table is
// full. name must already be normalized: the table compares it byte for
// byte.
func (n *names) assign(name string) (v4, v6 netip.Addr, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	i, seen := n.index[name]
	if !seen {
		if len(n.list) >= n.limit {
			return netip.Addr{}, netip.Addr{}, false
		}
		i = len(n.list)
		n.list = append(n.list, name)
		n.index[name] = i
	}
	return synthetic4(i), synthetic6(i), true
}

// lookup returns the name an address was handed out for. It takes either
// family, and an IPv4-mapped IPv6 address as its IPv4 form, since a dual
// stack socket may report an IPv4 destination that way.
func (n *names) lookup(a netip.Addr) (string, bool) {
	a = a.Unmap()
	var off uint64
	switch {
	case Synthetic4.Contains(a):
		b, base := a.As4(), Synthetic4.Masked().Addr().As4()
		off = uint64(binary.BigEndian.Uint32(b[:]) - binary.BigEndian.Uint32(base[:]))
	case Synthetic6.Contains(a):
		// Synthetic6 is a /64 or longer, so the offset is in the low half.
		b, base := a.As16(), Synthetic6.Masked().Addr().As16()
		off = binary.BigEndian.Uint64(b[8:]) - binary.BigEndian.Uint64(base[8:])
	default:
		return "", false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if off < firstHost || off-firstHost >= uint64(len(n.list)) {
		return "", false
	}
	return n.list[off-firstHost], true
}

// synthetic4 returns the i-th IPv4 address handed out. The caller keeps i
// below the capacity newNames computes, so it never leaves Synthetic4.
func synthetic4(i int) netip.Addr {
	b := Synthetic4.Masked().Addr().As4()
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(firstHost+i))
	return netip.AddrFrom4(b)
}

// synthetic6 returns the i-th IPv6 address handed out.
func synthetic6(i int) netip.Addr {
	b := Synthetic6.Masked().Addr().As16()
	binary.BigEndian.PutUint64(b[8:], binary.BigEndian.Uint64(b[8:])+uint64(firstHost+i))
	return netip.AddrFrom16(b)
}

// dnsServer is the sandbox resolver. It never asks a real DNS server: it
// answers an allowed name with the name's synthetic addresses, and any other
// name with NXDOMAIN, reporting each decision.
type dnsServer struct {
	policy Policy
	names  *names
	report func(Event)
}

// answer returns the response to one DNS message, or nil to drop it
// silently: a message too short for a header, or itself a response (so that
// two resolvers can never be made to answer each other in a loop). Every
// other message gets a response, if only an error code.
func (d *dnsServer) answer(q []byte) []byte {
	resp, ok := d.appendAnswer(make([]byte, 0, 512), q)
	if !ok {
		return nil
	}
	return resp
}

// appendAnswer appends the response to q to dst; ok is false to drop q.
func (d *dnsServer) appendAnswer(dst, q []byte) (resp []byte, ok bool) {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response {
		return dst, false
	}
	r := reply{dst: dst, hdr: dnsmessage.Header{
		ID:                 h.ID,
		Response:           true,
		OpCode:             h.OpCode,
		Authoritative:      true,
		RecursionDesired:   h.RecursionDesired,
		RecursionAvailable: true,
	}}
	if h.OpCode != 0 { // only QUERY: no NOTIFY, UPDATE, ...
		return r.build(dnsmessage.RCodeNotImplemented)
	}
	qn, err := p.Question()
	if err != nil {
		return r.build(dnsmessage.RCodeFormatError) // no question, or a malformed one
	}
	if _, err := p.Question(); !errors.Is(err, dnsmessage.ErrSectionDone) {
		return r.build(dnsmessage.RCodeFormatError) // more than one, which no server supports
	}
	if r.edns, err = hasEDNS(&p); err != nil {
		return r.build(dnsmessage.RCodeFormatError)
	}
	// The question is echoed as asked, case included: some resolvers
	// randomize the case and check it comes back.
	r.q = &qn
	if qn.Class != dnsmessage.ClassINET {
		return r.build(dnsmessage.RCodeRefused)
	}

	name := normalize(qn.Name)
	// Events carry the name as it may be shown: labels can hold any byte,
	// escape sequences for the operator's terminal included.
	show := shown(name)
	if v := d.policy.DecideName(name); !v.Allow {
		d.emit(Event{Kind: KindDNS, Name: show, Reason: v.Reason, Rule: v.Rule})
		return r.build(dnsmessage.RCodeNameError)
	}
	v4, v6, ok := d.names.assign(name)
	if !ok {
		d.emit(Event{Kind: KindLimit, Name: show, Reason: "too many different names in one execution"})
		return r.build(dnsmessage.RCodeRefused)
	}
	// Any other type (MX, TXT, HTTPS, CNAME, ANY, ...) gets NODATA: the name
	// exists but has no such record, so clients fall back to A/AAAA.
	switch qn.Type {
	case dnsmessage.TypeA:
		r.a = &dnsmessage.AResource{A: v4.As4()}
	case dnsmessage.TypeAAAA:
		r.aaaa = &dnsmessage.AAAAResource{AAAA: v6.As16()}
	}
	if r.a != nil || r.aaaa != nil {
		d.emit(Event{Kind: KindDNS, Allowed: true, Name: show})
	}
	return r.build(dnsmessage.RCodeSuccess)
}

// emit reports e, if anyone listens.
func (d *dnsServer) emit(e Event) {
	if d.report != nil {
		d.report(e)
	}
}

// hasEDNS reads the rest of the message after the question and reports
// whether it carries an EDNS0 OPT record. More than one OPT record is an
// error (RFC 6891, 6.1.1), as is any malformed record.
func hasEDNS(p *dnsmessage.Parser) (bool, error) {
	if err := p.SkipAllAnswers(); err != nil {
		return false, err
	}
	if err := p.SkipAllAuthorities(); err != nil {
		return false, err
	}
	found := false
	for {
		rh, err := p.AdditionalHeader()
		if errors.Is(err, dnsmessage.ErrSectionDone) {
			return found, nil
		}
		if err != nil {
			return false, err
		}
		if rh.Type == dnsmessage.TypeOPT {
			if found {
				return false, errors.New("more than one OPT record")
			}
			found = true
		}
		if err := p.SkipAdditional(); err != nil {
			return false, err
		}
	}
}

// reply is a response being put together. A nil question or answer is left
// out.
type reply struct {
	dst  []byte
	hdr  dnsmessage.Header
	q    *dnsmessage.Question
	a    *dnsmessage.AResource
	aaaa *dnsmessage.AAAAResource
	edns bool
}

// build packs the reply with rcode. At most one question, one answer and an
// OPT record: under 320 bytes, so it always fits a 512-byte UDP response.
func (r *reply) build(rcode dnsmessage.RCode) ([]byte, bool) {
	r.hdr.RCode = rcode
	b := dnsmessage.NewBuilder(r.dst, r.hdr)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return r.dst, false
	}
	if r.q != nil {
		if err := b.Question(*r.q); err != nil {
			return r.dst, false
		}
	}
	if err := b.StartAnswers(); err != nil {
		return r.dst, false
	}
	var err error
	if r.q != nil {
		rh := dnsmessage.ResourceHeader{Name: r.q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}
		switch {
		case r.a != nil:
			err = b.AResource(rh, *r.a)
		case r.aaaa != nil:
			err = b.AAAAResource(rh, *r.aaaa)
		}
	}
	if err != nil {
		return r.dst, false
	}
	if err := b.StartAdditionals(); err != nil {
		return r.dst, false
	}
	if r.edns {
		var rh dnsmessage.ResourceHeader
		_ = rh.SetEDNS0(ednsUDPSize, dnsmessage.RCodeSuccess, false) // never fails
		if err := b.OPTResource(rh, dnsmessage.OPTResource{}); err != nil {
			return r.dst, false
		}
	}
	msg, err := b.Finish()
	if err != nil {
		return r.dst, false
	}
	return msg, true
}

// normalize returns the name a question asks for as the policy and the
// address table know it: lowercase, without the trailing dot. Only ASCII
// is folded, as DNS does (RFC 4343): Unicode case folding would map some
// non-ASCII names onto ASCII ones.
func normalize(n dnsmessage.Name) string {
	b := []byte(n.String())
	if len(b) > 0 && b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// shown returns name as it may be repeated to the model: a name in printable
// ASCII as it is, any other quoted with escapes (labels may hold any byte),
// capped at maxShownName bytes. The root name, empty once normalized, is
// shown as ".".
func shown(name string) string {
	if name == "" {
		return "."
	}
	for i := 0; i < len(name); i++ {
		if name[i] <= ' ' || name[i] >= 0x7f {
			name = strconv.QuoteToASCII(name)
			break
		}
	}
	if len(name) > maxShownName {
		name = name[:maxShownName] // ASCII by now, so any cut is valid UTF-8
	}
	return name
}

// serveStream answers DNS over TCP (RFC 7766): each message is preceded by
// its length as two big-endian bytes, and so is each response. It returns
// nil at EOF between messages, after maxStreamMessages messages, or when a
// message is dropped, and an error on anything else. The caller sets
// deadlines and closes rw.
func (d *dnsServer) serveStream(rw io.ReadWriter) error {
	// One buffer for the largest message a length can announce, so that a
	// hostile length costs nothing until its bytes actually arrive.
	in := make([]byte, 1<<16)
	out := make([]byte, 0, 2+512)
	for range maxStreamMessages {
		if _, err := io.ReadFull(rw, in[:2]); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		n := int(binary.BigEndian.Uint16(in[:2]))
		if n == 0 {
			return errors.New("egress: empty DNS message on TCP")
		}
		if _, err := io.ReadFull(rw, in[:n]); err != nil {
			return err
		}
		resp, ok := d.appendAnswer(out[:2], in[:n])
		if !ok {
			return nil
		}
		binary.BigEndian.PutUint16(resp, uint16(len(resp)-2))
		// One write per response, so it is never split across a prefix.
		if _, err := rw.Write(resp); err != nil {
			return err
		}
		out = resp[:0]
	}
	return nil
}
