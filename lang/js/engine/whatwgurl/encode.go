package whatwgurl

import (
	"strings"
	"unicode/utf8"
)

// An encodeSet is a percent-encode set: the ASCII code points it holds,
// besides the C0 controls and everything above U+007E, which all sets hold.
type encodeSet string

const (
	c0ControlSet    encodeSet = ""
	fragmentSet               = c0ControlSet + ` "<>` + "`"
	querySet                  = c0ControlSet + ` "#<>`
	specialQuerySet           = querySet + `'`
	pathSet                   = querySet + "?^`{}"
	userinfoSet               = pathSet + `/:;=@[\]|`
)

func (s encodeSet) has(c rune) bool {
	return c < 0x20 || c > 0x7e || strings.ContainsRune(string(s), c)
}

const upperHex = "0123456789ABCDEF"

// appendEncoded appends c, UTF-8 percent-encoded if it is in set.
func appendEncoded(b []byte, c rune, set encodeSet) []byte {
	if !set.has(c) {
		return append(b, byte(c))
	}
	var buf [utf8.UTFMax]byte
	for _, x := range buf[:utf8.EncodeRune(buf[:], c)] {
		b = append(b, '%', upperHex[x>>4], upperHex[x&15])
	}
	return b
}

// percentEncode UTF-8 percent-encodes s with set.
func percentEncode(s string, set encodeSet) string {
	var b []byte
	for _, c := range s {
		b = appendEncoded(b, c, set)
	}
	return string(b)
}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// percentDecode decodes each %XX of s; a % without two hex digits stays.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			h, ok1 := hexValue(s[i+1])
			l, ok2 := hexValue(s[i+2])
			if ok1 && ok2 {
				b = append(b, h<<4|l)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}
