package egress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/policy/netpolicy"
	"golang.org/x/net/dns/dnsmessage"
)

// testRules is the policy most tests use: one exact name and one wildcard.
var testRules = netpolicy.Rules{Allow: []string{"api.example.com", "*.example.org"}}

// recorder collects reported events; the server may report from many
// goroutines.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) report(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// take returns the events reported since the last call.
func (r *recorder) take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

func newTestServer(t testing.TB, rules netpolicy.Rules, limit int) (*dnsServer, *recorder) {
	t.Helper()
	p, err := netpolicy.Compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	return &dnsServer{policy: p, names: newNames(limit), report: rec.report}, rec
}

// msg describes a query to build. The zero value of each field is the
// usual: one IN question, opcode QUERY, RD set, no EDNS.
type msg struct {
	id        uint16
	name      string
	typ       dnsmessage.Type
	class     dnsmessage.Class
	questions int // number of copies of the question; 0 means 1, -1 means none
	opcode    dnsmessage.OpCode
	response  bool
	edns      bool
}

func (m msg) build(t testing.TB) []byte {
	t.Helper()
	class := m.class
	if class == 0 {
		class = dnsmessage.ClassINET
	}
	n := m.questions
	if n == 0 {
		n = 1
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: m.id, OpCode: m.opcode, Response: m.response, RecursionDesired: true})
	b.EnableCompression()
	must(t, b.StartQuestions())
	for range n {
		must(t, b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(m.name), Type: m.typ, Class: class}))
	}
	if m.edns {
		must(t, b.StartAdditionals())
		var rh dnsmessage.ResourceHeader
		must(t, rh.SetEDNS0(4096, dnsmessage.RCodeSuccess, false))
		must(t, b.OPTResource(rh, dnsmessage.OPTResource{}))
	}
	out, err := b.Finish()
	must(t, err)
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// parsed is a response taken apart.
type parsed struct {
	hdr         dnsmessage.Header
	questions   []dnsmessage.Question
	answers     []dnsmessage.Resource
	authorities []dnsmessage.Resource
	additionals []dnsmessage.Resource
}

func parse(b []byte) (parsed, error) {
	var p dnsmessage.Parser
	var r parsed
	var err error
	if r.hdr, err = p.Start(b); err != nil {
		return r, err
	}
	if r.questions, err = p.AllQuestions(); err != nil {
		return r, err
	}
	if r.answers, err = p.AllAnswers(); err != nil {
		return r, err
	}
	if r.authorities, err = p.AllAuthorities(); err != nil {
		return r, err
	}
	r.additionals, err = p.AllAdditionals()
	return r, err
}

func mustParse(t testing.TB, b []byte) parsed {
	t.Helper()
	if b == nil {
		t.Fatal("no response")
	}
	r, err := parse(b)
	if err != nil {
		t.Fatalf("response does not parse: %v", err)
	}
	return r
}

// addrOfAnswer returns the address of a response's only A or AAAA answer.
func addrOfAnswer(t testing.TB, r parsed) netip.Addr {
	t.Helper()
	if len(r.answers) != 1 {
		t.Fatalf("got %d answers, want 1", len(r.answers))
	}
	switch b := r.answers[0].Body.(type) {
	case *dnsmessage.AResource:
		return netip.AddrFrom4(b.A)
	case *dnsmessage.AAAAResource:
		return netip.AddrFrom16(b.AAAA)
	default:
		t.Fatalf("answer is %T", b)
		return netip.Addr{}
	}
}

func TestNamesOrder(t *testing.T) {
	n := newNames(10)
	for i, want := range []struct{ name, v4, v6 string }{
		{"a.example.com", "198.18.0.2", "fd63:7275:6369::2"},
		{"b.example.com", "198.18.0.3", "fd63:7275:6369::3"},
		{"c.example.com", "198.18.0.4", "fd63:7275:6369::4"},
	} {
		v4, v6, ok := n.assign(want.name)
		if !ok || v4.String() != want.v4 || v6.String() != want.v6 {
			t.Errorf("name %d: assign(%q) = %v, %v, %v; want %s, %s", i, want.name, v4, v6, ok, want.v4, want.v6)
		}
	}
	// Again, out of order: the same pair each time.
	v4, v6, ok := n.assign("a.example.com")
	if !ok || v4.String() != "198.18.0.2" || v6.String() != "fd63:7275:6369::2" {
		t.Errorf("second assign of a.example.com = %v, %v, %v", v4, v6, ok)
	}
}

func TestNamesLookup(t *testing.T) {
	n := newNames(10)
	v4, v6, _ := n.assign("api.example.com")
	n.assign("other.example.org")
	mapped := netip.AddrFrom16(v4.As16())
	if !mapped.Is4In6() {
		t.Fatal("test address is not IPv4-mapped")
	}
	for _, tc := range []struct {
		addr string
		want string // "" for not found
	}{
		{v4.String(), "api.example.com"},
		{v6.String(), "api.example.com"},
		{mapped.String(), "api.example.com"},
		{"198.18.0.3", "other.example.org"},
		{"fd63:7275:6369::3", "other.example.org"},
		{"::ffff:198.18.0.3", "other.example.org"},
		{"198.18.0.4", ""},             // not handed out yet
		{"fd63:7275:6369::4", ""},      // nor this
		{"198.18.0.0", ""},             // the network address
		{"198.18.0.1", ""},             // the resolver
		{"fd63:7275:6369::", ""},       // offset 0
		{"fd63:7275:6369::1", ""},      // offset 1
		{"198.19.255.255", ""},         // the /15's last address
		{"198.17.255.255", ""},         // just below the prefix
		{"198.20.0.2", ""},             // just above
		{"fd63:7275:6369:1::2", ""},    // another /64 (the jail's own)
		{"fd63:7275:6369::2%eth0", ""}, // zoned: not an address we gave out
		{"10.255.255.2", ""},
		{"::", ""},
		{"::ffff:10.0.0.1", ""},
		{"2001:db8::2", ""},
	} {
		got, ok := n.lookup(netip.MustParseAddr(tc.addr))
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("lookup(%s) = %q, %v; want %q", tc.addr, got, ok, tc.want)
		}
	}
	if got, ok := n.lookup(netip.Addr{}); ok {
		t.Errorf("lookup(zero Addr) = %q, true", got)
	}
}

func TestNamesLimit(t *testing.T) {
	n := newNames(2)
	n.assign("a.example.com")
	n.assign("b.example.com")
	if _, _, ok := n.assign("c.example.com"); ok {
		t.Error("a third name was assigned in a table of two")
	}
	if _, _, ok := n.assign("a.example.com"); !ok {
		t.Error("a known name was refused in a full table")
	}
	if _, _, ok := newNames(0).assign("a.example.com"); ok {
		t.Error("newNames(0) took a name")
	}
	if _, _, ok := newNames(-1).assign("a.example.com"); ok {
		t.Error("newNames(-1) took a name")
	}
}

// TestNamesCapacity fills the whole synthetic IPv4 range: the last address
// handed out is the one before the /15's last, and the resolver never is.
func TestNamesCapacity(t *testing.T) {
	n := newNames(1 << 30)
	var last netip.Addr
	count := 0
	for i := 0; ; i++ {
		v4, _, ok := n.assign(fmt.Sprintf("n%d.example.com", i))
		if !ok {
			break
		}
		if v4 == Resolver || !Synthetic4.Contains(v4) {
			t.Fatalf("name %d got %v", i, v4)
		}
		last = v4
		count++
	}
	if want := 1<<17 - 3; count != want {
		t.Errorf("table took %d names, want %d", count, want)
	}
	if last.String() != "198.19.255.254" {
		t.Errorf("last address handed out is %v, want 198.19.255.254", last)
	}
	if got, ok := n.lookup(last); !ok || got != fmt.Sprintf("n%d.example.com", count-1) {
		t.Errorf("lookup(%v) = %q, %v", last, got, ok)
	}
}

func TestNamesConcurrent(t *testing.T) {
	n := newNames(100)
	var wg sync.WaitGroup
	got := make([][]netip.Addr, 8)
	for g := range got {
		wg.Go(func() {
			for i := range 50 {
				v4, _, ok := n.assign(fmt.Sprintf("n%d.example.com", i))
				if !ok {
					t.Error("assign refused")
				}
				got[g] = append(got[g], v4)
				n.lookup(v4)
			}
		})
	}
	wg.Wait()
	for g := range got {
		for i := range got[g] {
			if got[g][i] != got[0][i] {
				t.Fatalf("goroutine %d got %v for name %d, goroutine 0 got %v", g, got[g][i], i, got[0][i])
			}
		}
	}
}

func TestAnswer(t *testing.T) {
	type want struct {
		rcode  dnsmessage.RCode
		answer dnsmessage.Type // the type of the one answer, or 0 for none
		echo   bool            // the question is echoed
		event  *Event          // the one event reported, or nil for none
	}
	// allowed is an answer of type typ, with name's allowed event;
	// nxdomain is NXDOMAIN, with name's refusal for reason; nodata is
	// success with no answer and no event.
	allowed := func(typ dnsmessage.Type, name string) want {
		return want{rcode: dnsmessage.RCodeSuccess, answer: typ, echo: true, event: &Event{Kind: KindDNS, Allowed: true, Name: name}}
	}
	nxdomain := func(name, reason string) want {
		return want{rcode: dnsmessage.RCodeNameError, echo: true, event: &Event{Kind: KindDNS, Name: name, Reason: reason}}
	}
	nodata := want{rcode: dnsmessage.RCodeSuccess, echo: true}
	for _, tc := range []struct {
		name string
		q    msg
		want want
	}{
		{"allowed A", msg{name: "api.example.com.", typ: dnsmessage.TypeA},
			allowed(dnsmessage.TypeA, "api.example.com")},
		{"allowed AAAA", msg{name: "api.example.com.", typ: dnsmessage.TypeAAAA},
			allowed(dnsmessage.TypeAAAA, "api.example.com")},
		{"allowed mixed case", msg{name: "API.Example.COM.", typ: dnsmessage.TypeA},
			allowed(dnsmessage.TypeA, "api.example.com")},
		{"wildcard", msg{name: "x.y.example.org.", typ: dnsmessage.TypeA},
			allowed(dnsmessage.TypeA, "x.y.example.org")},
		{"wildcard apex denied", msg{name: "example.org.", typ: dnsmessage.TypeA},
			nxdomain("example.org", "example.org is not in the allowlist")},
		{"denied", msg{name: "evil.example.net.", typ: dnsmessage.TypeA},
			nxdomain("evil.example.net", "evil.example.net is not in the allowlist")},
		{"denied AAAA", msg{name: "Evil.Example.NET.", typ: dnsmessage.TypeAAAA},
			nxdomain("evil.example.net", "evil.example.net is not in the allowlist")},
		{"denied TXT", msg{name: "evil.example.net.", typ: dnsmessage.TypeTXT},
			nxdomain("evil.example.net", "evil.example.net is not in the allowlist")},
		{"denied subdomain of exact rule", msg{name: "x.api.example.com.", typ: dnsmessage.TypeA},
			nxdomain("x.api.example.com", "x.api.example.com is not in the allowlist")},
		{"root", msg{name: ".", typ: dnsmessage.TypeNS},
			nxdomain(".", `"" is not a valid host name`)},
		{"reverse lookup", msg{name: "1.0.18.198.in-addr.arpa.", typ: dnsmessage.TypePTR},
			nxdomain("1.0.18.198.in-addr.arpa", "1.0.18.198.in-addr.arpa is not in the allowlist")},
		{"non-printable name", msg{name: "a\x00b\n.example.net.", typ: dnsmessage.TypeA},
			nxdomain(`"a\x00b\n.example.net"`, `"a\x00b\n.example.net" is not a valid host name`)},
		{"non-ASCII name not folded", msg{name: "\u212Aernel.example.org.", typ: dnsmessage.TypeA}, // KELVIN SIGN
			nxdomain(`"\u212aernel.example.org"`, `"\u212aernel.example.org" is not a valid host name`)},
		{"MX is NODATA", msg{name: "api.example.com.", typ: dnsmessage.TypeMX},
			nodata},
		{"TXT is NODATA", msg{name: "api.example.com.", typ: dnsmessage.TypeTXT},
			nodata},
		{"HTTPS is NODATA", msg{name: "api.example.com.", typ: dnsmessage.Type(65)},
			nodata},
		{"SVCB is NODATA", msg{name: "api.example.com.", typ: dnsmessage.Type(64)},
			nodata},
		{"CNAME is NODATA", msg{name: "api.example.com.", typ: dnsmessage.TypeCNAME},
			nodata},
		{"ANY is NODATA", msg{name: "api.example.com.", typ: dnsmessage.TypeALL},
			nodata},
		{"class CH", msg{name: "version.bind.", typ: dnsmessage.TypeTXT, class: dnsmessage.ClassCHAOS},
			want{rcode: dnsmessage.RCodeRefused, echo: true}},
		{"class CH allowed name", msg{name: "api.example.com.", typ: dnsmessage.TypeA, class: dnsmessage.ClassCHAOS},
			want{rcode: dnsmessage.RCodeRefused, echo: true}},
		{"no question", msg{questions: -1},
			want{rcode: dnsmessage.RCodeFormatError}},
		{"two questions", msg{name: "api.example.com.", typ: dnsmessage.TypeA, questions: 2},
			want{rcode: dnsmessage.RCodeFormatError}},
		{"opcode STATUS", msg{name: "api.example.com.", typ: dnsmessage.TypeA, opcode: 2},
			want{rcode: dnsmessage.RCodeNotImplemented}},
		{"opcode UPDATE", msg{name: "api.example.com.", typ: dnsmessage.TypeA, opcode: 5},
			want{rcode: dnsmessage.RCodeNotImplemented}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, rec := newTestServer(t, testRules, 16)
			tc.q.id = 0xbeef
			r := mustParse(t, d.answer(tc.q.build(t)))
			h := r.hdr
			if h.ID != 0xbeef || !h.Response || !h.Authoritative || !h.RecursionDesired || !h.RecursionAvailable || h.Truncated {
				t.Errorf("header = %+v", h)
			}
			if h.OpCode != tc.q.opcode {
				t.Errorf("opcode = %d, want %d", h.OpCode, tc.q.opcode)
			}
			if h.RCode != tc.want.rcode {
				t.Errorf("rcode = %v, want %v", h.RCode, tc.want.rcode)
			}
			if tc.want.echo {
				if len(r.questions) != 1 || r.questions[0].Name.String() != tc.q.name || r.questions[0].Type != tc.q.typ {
					t.Errorf("questions = %v, want %s %v", r.questions, tc.q.name, tc.q.typ)
				}
			} else if len(r.questions) != 0 {
				t.Errorf("questions = %v, want none", r.questions)
			}
			if tc.want.answer == 0 {
				if len(r.answers) != 0 {
					t.Errorf("answers = %v, want none", r.answers)
				}
			} else {
				a := addrOfAnswer(t, r)
				rh := r.answers[0].Header
				if rh.Type != tc.want.answer || rh.Class != dnsmessage.ClassINET || rh.TTL != 60 || rh.Name.String() != tc.q.name {
					t.Errorf("answer header = %+v", rh)
				}
				if name, ok := d.names.lookup(a); !ok || name != tc.want.event.Name {
					t.Errorf("lookup(%v) = %q, %v", a, name, ok)
				}
			}
			if len(r.authorities) != 0 || len(r.additionals) != 0 {
				t.Errorf("authorities %v, additionals %v; want none", r.authorities, r.additionals)
			}
			events := rec.take()
			switch {
			case tc.want.event == nil && len(events) != 0:
				t.Errorf("events = %+v, want none", events)
			case tc.want.event != nil && (len(events) != 1 || !reflect.DeepEqual(events[0], *tc.want.event)):
				t.Errorf("events = %+v, want %+v", events, *tc.want.event)
			}
		})
	}
}

// TestAnswerSameName checks that a name keeps its addresses across queries
// and case, and that names do not share them.
func TestAnswerSameName(t *testing.T) {
	d, _ := newTestServer(t, testRules, 16)
	ask := func(name string, typ dnsmessage.Type) netip.Addr {
		t.Helper()
		return addrOfAnswer(t, mustParse(t, d.answer(msg{id: 1, name: name, typ: typ}.build(t))))
	}
	a4, a6 := ask("api.example.com.", dnsmessage.TypeA), ask("api.example.com.", dnsmessage.TypeAAAA)
	if a4.String() != "198.18.0.2" || a6.String() != "fd63:7275:6369::2" {
		t.Errorf("first name got %v, %v; want 198.18.0.2, fd63:7275:6369::2", a4, a6)
	}
	for _, n := range []string{"api.example.com.", "API.Example.COM.", "aPi.eXaMpLe.cOm."} {
		if got := ask(n, dnsmessage.TypeA); got != a4 {
			t.Errorf("%s A = %v, want %v", n, got, a4)
		}
		if got := ask(n, dnsmessage.TypeAAAA); got != a6 {
			t.Errorf("%s AAAA = %v, want %v", n, got, a6)
		}
	}
	b4, b6 := ask("www.example.org.", dnsmessage.TypeA), ask("www.example.org.", dnsmessage.TypeAAAA)
	if b4 == a4 || b6 == a6 {
		t.Errorf("two names share addresses: %v %v", b4, b6)
	}
	if b4.String() != "198.18.0.3" || b6.String() != "fd63:7275:6369::3" {
		t.Errorf("second name got %v, %v", b4, b6)
	}
}

// TestAnswerGlibc mimics glibc's resolver, which sends A and AAAA back to
// back on one socket with different IDs and matches answers by ID.
func TestAnswerGlibc(t *testing.T) {
	d, rec := newTestServer(t, testRules, 16)
	q4 := msg{id: 0x1111, name: "api.example.com.", typ: dnsmessage.TypeA, edns: true}.build(t)
	q6 := msg{id: 0x2222, name: "api.example.com.", typ: dnsmessage.TypeAAAA, edns: true}.build(t)
	r4, r6 := mustParse(t, d.answer(q4)), mustParse(t, d.answer(q6))
	if r4.hdr.ID != 0x1111 || r6.hdr.ID != 0x2222 {
		t.Errorf("IDs %#x, %#x", r4.hdr.ID, r6.hdr.ID)
	}
	if a := addrOfAnswer(t, r4); a.String() != "198.18.0.2" {
		t.Errorf("A = %v", a)
	}
	if a := addrOfAnswer(t, r6); a.String() != "fd63:7275:6369::2" {
		t.Errorf("AAAA = %v", a)
	}
	if n := len(rec.take()); n != 2 {
		t.Errorf("%d events, want 2 (one per query)", n)
	}
}

// TestAnswerReasons checks that a name refused at DNS, the usual way a
// program meets the policy, carries the reason a connection to it would get:
// the operator's deny reason, or what is actually wrong with the name.
func TestAnswerReasons(t *testing.T) {
	rules := netpolicy.Rules{
		Allow:       []string{"*.wild.test"},
		Deny:        []string{"blocked.wild.test", "*.quiet.wild.test", "mail.wild.test:25"},
		DenyReasons: map[string]string{"blocked.wild.test": "use the API instead"},
	}
	all := netpolicy.Rules{AllowAll: true, Deny: []string{"*.ru"}, DenyReasons: map[string]string{"*.ru": "no .ru for this task"}}
	for _, tc := range []struct {
		rules netpolicy.Rules
		name  string
		want  Event
	}{
		{rules, "blocked.wild.test.", Event{Kind: KindDNS, Name: "blocked.wild.test",
			Reason: "use the API instead", Rule: "blocked.wild.test"}},
		{rules, "BLOCKED.wild.test.", Event{Kind: KindDNS, Name: "blocked.wild.test",
			Reason: "use the API instead", Rule: "blocked.wild.test"}},
		{rules, "x.quiet.wild.test.", Event{Kind: KindDNS, Name: "x.quiet.wild.test",
			Reason: "x.quiet.wild.test is denied by policy", Rule: "*.quiet.wild.test"}},
		{rules, "other.test.", Event{Kind: KindDNS, Name: "other.test",
			Reason: "other.test is not in the allowlist"}},
		// Denied on one port only: DNS answers, and the connection decides.
		{rules, "mail.wild.test.", Event{Kind: KindDNS, Allowed: true, Name: "mail.wild.test"}},
		{all, "yandex.ru.", Event{Kind: KindDNS, Name: "yandex.ru", Reason: "no .ru for this task", Rule: "*.ru"}},
		{all, "db.internal.", Event{Kind: KindDNS, Name: "db.internal",
			Reason: "db.internal is not a public name, and only public names are allowed"}},
		{all, "localhost.", Event{Kind: KindDNS, Name: "localhost",
			Reason: "localhost is not a public name, and only public names are allowed"}},
		{all, "1.0.0.127.in-addr.arpa.", Event{Kind: KindDNS, Name: "1.0.0.127.in-addr.arpa",
			Reason: "1.0.0.127.in-addr.arpa is not a public name, and only public names are allowed"}},
		{all, "example.com.", Event{Kind: KindDNS, Allowed: true, Name: "example.com"}},
		{all, "a_b.example.com.", Event{Kind: KindDNS, Name: "a_b.example.com",
			Reason: `"a_b.example.com" is not a valid host name`}},
	} {
		d, rec := newTestServer(t, tc.rules, 16)
		r := mustParse(t, d.answer(msg{id: 7, name: tc.name, typ: dnsmessage.TypeA}.build(t)))
		if want := map[bool]dnsmessage.RCode{true: dnsmessage.RCodeSuccess, false: dnsmessage.RCodeNameError}[tc.want.Allowed]; r.hdr.RCode != want {
			t.Errorf("%s: rcode %v, want %v", tc.name, r.hdr.RCode, want)
		}
		if ev := rec.take(); len(ev) != 1 || !reflect.DeepEqual(ev[0], tc.want) {
			t.Errorf("%s: events %+v, want %+v", tc.name, ev, tc.want)
		}
	}
}

func TestAnswerTableFull(t *testing.T) {
	d, rec := newTestServer(t, testRules, 1)
	mustParse(t, d.answer(msg{name: "api.example.com.", typ: dnsmessage.TypeA}.build(t)))
	rec.take()
	r := mustParse(t, d.answer(msg{name: "www.example.org.", typ: dnsmessage.TypeA}.build(t)))
	if r.hdr.RCode != dnsmessage.RCodeRefused || len(r.answers) != 0 {
		t.Errorf("full table: rcode %v, answers %v; want REFUSED, none", r.hdr.RCode, r.answers)
	}
	want := Event{Kind: KindLimit, Name: "www.example.org", Reason: "too many different names in one execution"}
	if ev := rec.take(); len(ev) != 1 || !reflect.DeepEqual(ev[0], want) {
		t.Errorf("events = %+v, want %+v", ev, want)
	}
	// A name already in the table still resolves; a denied name is still
	// NXDOMAIN, not a limit.
	r = mustParse(t, d.answer(msg{name: "api.example.com.", typ: dnsmessage.TypeA}.build(t)))
	if r.hdr.RCode != dnsmessage.RCodeSuccess || len(r.answers) != 1 {
		t.Errorf("known name in full table: rcode %v, answers %v", r.hdr.RCode, r.answers)
	}
	r = mustParse(t, d.answer(msg{name: "evil.example.net.", typ: dnsmessage.TypeA}.build(t)))
	if r.hdr.RCode != dnsmessage.RCodeNameError {
		t.Errorf("denied name in full table: rcode %v", r.hdr.RCode)
	}
}

func TestAnswerEDNS(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    msg
	}{
		{"allowed", msg{name: "api.example.com.", typ: dnsmessage.TypeA, edns: true}},
		{"NODATA", msg{name: "api.example.com.", typ: dnsmessage.TypeMX, edns: true}},
		{"denied", msg{name: "evil.example.net.", typ: dnsmessage.TypeA, edns: true}},
		{"class CH", msg{name: "version.bind.", typ: dnsmessage.TypeTXT, class: dnsmessage.ClassCHAOS, edns: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newTestServer(t, testRules, 16)
			r := mustParse(t, d.answer(tc.q.build(t)))
			if len(r.additionals) != 1 {
				t.Fatalf("additionals = %v, want one OPT", r.additionals)
			}
			opt := r.additionals[0]
			body, ok := opt.Body.(*dnsmessage.OPTResource)
			if opt.Header.Type != dnsmessage.TypeOPT || opt.Header.Class != 1232 || opt.Header.Name.String() != "." || !ok || len(body.Options) != 0 {
				t.Errorf("OPT = %+v", opt)
			}
			if opt.Header.TTL != 0 {
				t.Errorf("OPT TTL (extended rcode, version, flags) = %#x, want 0", opt.Header.TTL)
			}
		})
	}
	// Two OPT records are a format error.
	d, _ := newTestServer(t, testRules, 16)
	q := msg{name: "api.example.com.", typ: dnsmessage.TypeA, edns: true}.build(t)
	binary.BigEndian.PutUint16(q[10:], 2)
	q = append(q, q[len(q)-11:]...)
	if r := mustParse(t, d.answer(q)); r.hdr.RCode != dnsmessage.RCodeFormatError {
		t.Errorf("two OPT records: rcode %v, want FORMERR", r.hdr.RCode)
	}
}

func TestAnswerDropped(t *testing.T) {
	d, rec := newTestServer(t, testRules, 16)
	resp := d.answer(msg{name: "api.example.com.", typ: dnsmessage.TypeA}.build(t))
	for _, tc := range []struct {
		name string
		q    []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"short header", []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0}},
		{"garbage", []byte("\xff\xfe\xfd")},
		{"a response", msg{name: "api.example.com.", typ: dnsmessage.TypeA, response: true}.build(t)},
		{"our own response", resp},
	} {
		if got := d.answer(tc.q); got != nil {
			t.Errorf("%s: answer = %x, want nil", tc.name, got)
		}
	}
	// Only the first query above was a query.
	if ev := rec.take(); len(ev) != 1 {
		t.Errorf("events = %+v, want the first query's only", ev)
	}
}

// TestAnswerMalformed checks that a message whose header parses but whose
// body does not gets FORMERR, with no question echoed.
func TestAnswerMalformed(t *testing.T) {
	d, rec := newTestServer(t, testRules, 16)
	good := msg{id: 7, name: "api.example.com.", typ: dnsmessage.TypeA}.build(t)
	for _, tc := range []struct {
		name string
		q    []byte
	}{
		{"header only, one question claimed", good[:12]},
		{"question cut short", good[:len(good)-2]},
		{"one additional claimed, none there", func() []byte {
			q := bytes.Clone(good)
			binary.BigEndian.PutUint16(q[10:], 1)
			return q
		}()},
		{"name pointer loop", func() []byte {
			q := bytes.Clone(good[:12])
			return append(q, 0xc0, 12, 0, 1, 0, 1)
		}()},
		{"reserved label type", func() []byte {
			q := bytes.Clone(good[:12])
			return append(q, 0x40, 0, 1, 0, 1)
		}()},
	} {
		r := mustParse(t, d.answer(tc.q))
		if r.hdr.ID != 7 || r.hdr.RCode != dnsmessage.RCodeFormatError || len(r.questions) != 0 || len(r.answers) != 0 {
			t.Errorf("%s: %+v, want FORMERR with nothing else", tc.name, r)
		}
	}
	if ev := rec.take(); len(ev) != 0 {
		t.Errorf("events = %+v, want none", ev)
	}
}

func TestShown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"api.example.com", "api.example.com"},
		{"", "."},
		{"a b", `"a b"`},
		{"a\x7f", `"a\x7f"`},
		{"\xff", `"\xff"`},
		{strings.Repeat("a", 300), strings.Repeat("a", 253)},
		{strings.Repeat("\x01", 100), (`"` + strings.Repeat(`\x01`, 100))[:253]},
	} {
		if got := shown(tc.in); got != tc.want {
			t.Errorf("shown(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// frame returns m preceded by its length, as on TCP.
func frame(m []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(m))), m...)
}

// readFrame reads one length-prefixed message.
func readFrame(r io.Reader) ([]byte, error) {
	var l [2]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	m := make([]byte, binary.BigEndian.Uint16(l[:]))
	_, err := io.ReadFull(r, m)
	return m, err
}

// serve runs serveStream on one end of a pipe and returns the other end and
// the server's result.
func serve(t *testing.T, d *dnsServer) (net.Conn, <-chan error) {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close() })
	done := make(chan error, 1)
	go func() {
		err := d.serveStream(server)
		server.Close()
		done <- err
	}()
	return client, done
}

func awaitServe(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("serveStream did not return")
		return nil
	}
}

func TestServeStream(t *testing.T) {
	d, _ := newTestServer(t, testRules, 16)
	client, done := serve(t, d)
	q1 := msg{id: 1, name: "api.example.com.", typ: dnsmessage.TypeA}.build(t)
	q2 := msg{id: 2, name: "evil.example.net.", typ: dnsmessage.TypeAAAA}.build(t)
	// Both queries in one write: a pipe has no buffer, so the write must not
	// wait for the responses to be read.
	go func() { _, _ = client.Write(append(frame(q1), frame(q2)...)) }()
	for i, want := range []struct {
		id    uint16
		rcode dnsmessage.RCode
	}{{1, dnsmessage.RCodeSuccess}, {2, dnsmessage.RCodeNameError}} {
		m, err := readFrame(client)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		r := mustParse(t, m)
		if r.hdr.ID != want.id || r.hdr.RCode != want.rcode {
			t.Errorf("response %d: ID %d rcode %v; want %d %v", i, r.hdr.ID, r.hdr.RCode, want.id, want.rcode)
		}
	}
	client.Close()
	if err := awaitServe(t, done); err != nil {
		t.Errorf("serveStream after EOF = %v, want nil", err)
	}
}

func TestServeStreamEnds(t *testing.T) {
	query := msg{id: 1, name: "api.example.com.", typ: dnsmessage.TypeA}.build(t)
	for _, tc := range []struct {
		name    string
		send    []byte
		wantErr bool
	}{
		{"EOF at once", nil, false},
		{"length longer than the data", append([]byte{0, 100}, query...), true},
		{"half a length", []byte{0}, true},
		{"zero length", []byte{0, 0}, true},
		{"a response is dropped", frame(msg{id: 1, name: "api.example.com.", typ: dnsmessage.TypeA, response: true}.build(t)), false},
		{"a short message is dropped", frame([]byte{1, 2, 3}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newTestServer(t, testRules, 16)
			client, done := serve(t, d)
			go func() {
				_, _ = client.Write(tc.send)
				client.Close()
			}()
			if err := awaitServe(t, done); (err != nil) != tc.wantErr {
				t.Errorf("serveStream = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// readWriter joins a reader and a writer, for streams without a peer.
type readWriter struct {
	io.Reader
	io.Writer
}

func TestServeStreamCap(t *testing.T) {
	d, _ := newTestServer(t, testRules, 16)
	q := frame(msg{id: 1, name: "api.example.com.", typ: dnsmessage.TypeA}.build(t))
	in := bytes.NewReader(bytes.Repeat(q, maxStreamMessages+5))
	var out bytes.Buffer
	if err := d.serveStream(readWriter{in, &out}); err != nil {
		t.Fatalf("serveStream = %v", err)
	}
	n := 0
	for out.Len() > 0 {
		if _, err := readFrame(&out); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != maxStreamMessages {
		t.Errorf("%d responses, want %d", n, maxStreamMessages)
	}
}

func TestServeStreamWriteError(t *testing.T) {
	d, _ := newTestServer(t, testRules, 16)
	q := frame(msg{id: 1, name: "api.example.com.", typ: dnsmessage.TypeA}.build(t))
	errWrite := errors.New("write failed")
	if err := d.serveStream(readWriter{bytes.NewReader(q), failWriter{errWrite}}); !errors.Is(err, errWrite) {
		t.Errorf("serveStream = %v, want %v", err, errWrite)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// fuzzSeeds are queries for the fuzzers to start from.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, m := range []msg{
		{id: 1, name: "api.example.com.", typ: dnsmessage.TypeA},
		{id: 2, name: "API.Example.COM.", typ: dnsmessage.TypeAAAA, edns: true},
		{id: 3, name: "www.example.org.", typ: dnsmessage.TypeA, edns: true},
		{id: 4, name: "a.b.example.org.", typ: dnsmessage.TypeAAAA},
		{id: 5, name: "example.org.", typ: dnsmessage.TypeA},
		{id: 6, name: "evil.example.net.", typ: dnsmessage.TypeA},
		{id: 7, name: "api.example.com.", typ: dnsmessage.Type(65)},
		{id: 8, name: "version.bind.", typ: dnsmessage.TypeTXT, class: dnsmessage.ClassCHAOS},
		{id: 9, name: "api.example.com.", typ: dnsmessage.TypeA, questions: 2},
		{id: 10, questions: -1},
		{id: 11, name: "api.example.com.", typ: dnsmessage.TypeA, opcode: 2},
		{id: 12, name: "api.example.com.", typ: dnsmessage.TypeA, response: true},
		{id: 13, name: ".", typ: dnsmessage.TypeNS},
	} {
		seeds = append(seeds, m.build(t))
	}
	return append(seeds, nil, []byte{0, 1, 2})
}

// checkResponse checks a response against the query it answers.
func checkResponse(t *testing.T, d *dnsServer, q, resp []byte) {
	t.Helper()
	if len(resp) > 512 {
		t.Fatalf("response of %d bytes does not fit UDP", len(resp))
	}
	r, err := parse(resp)
	if err != nil {
		t.Fatalf("response does not parse: %v\n%x", err, resp)
	}
	if !r.hdr.Response || r.hdr.ID != binary.BigEndian.Uint16(q) {
		t.Fatalf("header %+v for query ID %#x", r.hdr, binary.BigEndian.Uint16(q))
	}
	if len(r.questions) > 1 || len(r.answers) > 1 || len(r.authorities) > 0 || len(r.additionals) > 1 {
		t.Fatalf("response has %d/%d/%d/%d records", len(r.questions), len(r.answers), len(r.authorities), len(r.additionals))
	}
	for _, a := range r.answers {
		if len(r.questions) != 1 || r.hdr.RCode != dnsmessage.RCodeSuccess {
			t.Fatalf("answer %v with rcode %v and questions %v", a, r.hdr.RCode, r.questions)
		}
		var addr netip.Addr
		switch b := a.Body.(type) {
		case *dnsmessage.AResource:
			addr = netip.AddrFrom4(b.A)
			if !Synthetic4.Contains(addr) || addr == Resolver {
				t.Fatalf("A %v is not a synthetic address", addr)
			}
		case *dnsmessage.AAAAResource:
			addr = netip.AddrFrom16(b.AAAA)
			if !Synthetic6.Contains(addr) {
				t.Fatalf("AAAA %v is not a synthetic address", addr)
			}
		default:
			t.Fatalf("answer of type %T", b)
		}
		want := normalize(r.questions[0].Name)
		if got, ok := d.names.lookup(addr); !ok || got != want {
			t.Fatalf("lookup(%v) = %q, %v; want %q", addr, got, ok, want)
		}
		if !d.policy.DecideName(want).Allow {
			t.Fatalf("answered %q, which the policy does not allow", want)
		}
	}
}

func FuzzAnswer(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		d, rec := newTestServer(t, testRules, 4096)
		resp := d.answer(q)
		events := rec.take()
		// Only a message without a header, or a response, is dropped.
		if drop := len(q) < 12 || q[2]&0x80 != 0; drop != (resp == nil) {
			t.Fatalf("dropped = %v for %x", resp == nil, q)
		}
		if resp == nil {
			if len(events) != 0 {
				t.Fatalf("events %+v for a dropped message", events)
			}
			return
		}
		checkResponse(t, d, q, resp)
		if len(events) > 1 {
			t.Fatalf("%d events for one query", len(events))
		}
		r, _ := parse(resp)
		if r.hdr.RCode == dnsmessage.RCodeNameError && (len(events) != 1 || events[0].Kind != KindDNS || events[0].Allowed) {
			t.Fatalf("NXDOMAIN reported as %+v", events)
		}
		if len(r.answers) > 0 && (len(events) != 1 || !events[0].Allowed) {
			t.Fatalf("answer reported as %+v", events)
		}
		for _, e := range events {
			if len(e.Reason) > 300 {
				t.Fatalf("reason of %d bytes", len(e.Reason))
			}
		}
	})
}

func FuzzServeStream(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(frame(s))
	}
	f.Add(append(frame(fuzzSeeds(f)[0]), frame(fuzzSeeds(f)[1])...))
	f.Add([]byte{0, 0})
	f.Add([]byte{0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		d, _ := newTestServer(t, testRules, 4096)
		var out bytes.Buffer
		_ = d.serveStream(readWriter{bytes.NewReader(in), &out})
		// Each response answers one well-framed query, in order.
		n := 0
		for out.Len() > 0 {
			m, err := readFrame(&out)
			if err != nil {
				t.Fatalf("response %d is badly framed: %v", n, err)
			}
			if len(in) < 2 {
				t.Fatalf("response %d to no query", n)
			}
			l := int(binary.BigEndian.Uint16(in))
			if len(in) < 2+l {
				t.Fatalf("response %d to a truncated query", n)
			}
			checkResponse(t, d, in[2:2+l], m)
			in = in[2+l:]
			n++
		}
		if n > maxStreamMessages {
			t.Fatalf("%d responses", n)
		}
	})
}
