package secrets

import (
	"encoding/base64"
	"io"
	"math/rand/v2"
	"testing"
)

// repeat is a stream of n bytes, its text over and over.
type repeat struct {
	text []byte
	off  int
	n    int
}

func (r *repeat) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.text[r.off:])
	r.off = (r.off + k) % len(r.text)
	r.n -= k
	return k, nil
}

// BenchmarkStream is both directions' throughput on a 100 MB stream, next
// to io.Copy of the same stream: a text body (JSON-like) and a base64 body
// (most of its bytes may begin a base64 form), each with a value, or a
// placeholder, every 64 KiB; and two bodies of near misses, the worst that
// the code in the jail can make the proxy do.
func BenchmarkStream(b *testing.B) {
	s, err := build(map[string][]byte{
		"GITHUB": []byte("ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
		"OPENAI": []byte("sk-proj-8fJ2kQ9xZ0bLmN4pR7sT1vW3yA6cD5eF"),
		"STRIPE": []byte("sk_live_51H8xYzAbCdEfGhIjKlMnOpQr"),
	}, seeded(4))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	text := make([]byte, 1<<20)
	for i := range text {
		text[i] = " abcdefghijklmnopqrstuvwxyz{}\":,0123456789\n"[r.IntN(43)]
	}
	raw := make([]byte, 3<<18)
	for i := range raw {
		raw[i] = byte(r.IntN(256))
	}
	b64 := []byte(base64.StdEncoding.EncodeToString(raw))
	// The worst the code can send: near misses of a placeholder, back to
	// back (the placeholder but its last byte; its first two bytes).
	p := s.secrets[0].text[placeholder]
	var near, pairs []byte
	for len(near) < 1<<20 {
		near = append(append(near, p[:len(p)-1]...), '!')
		pairs = append(pairs, p[:2]...)
	}
	bodies := map[string][]byte{"text": text, "base64": b64, "nearmiss": near, "pairs": pairs}
	const size = 100 << 20
	for name, body := range bodies {
		fwd, rev := append([]byte(nil), body...), append([]byte(nil), body...)
		for at := 0; at+64 < len(body); at += 64 << 10 {
			copy(rev[at:], s.secrets[0].text[value])
			copy(fwd[at:], s.secrets[0].text[placeholder])
		}
		run := func(kind string, src func() io.Reader) {
			b.Run(name+"/"+kind, func(b *testing.B) {
				b.SetBytes(size)
				for b.Loop() {
					if n, err := io.Copy(io.Discard, src()); n != size || err != nil {
						b.Fatal(n, err)
					}
				}
			})
		}
		run("copy", func() io.Reader { return &repeat{text: rev, n: size} })
		run("reverse", func() io.Reader { return s.ReverseReader(&repeat{text: rev, n: size}) })
		run("forward", func() io.Reader { return s.ForwardReader(&repeat{text: fwd, n: size}, []string{"GITHUB"}) })
	}
}
