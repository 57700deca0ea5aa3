package whatwgurl

import (
	"strconv"
	"strings"
)

// Hosts are kept serialized: a domain, "1.2.3.4", "[::1]", an opaque host
// or the empty host. The Standard compares hosts only by their
// serialization.

const forbiddenHost = "\x00\t\n\r #/:<>?@[\\]^|"

func forbiddenDomainCodePoint(c rune) bool {
	return c <= 0x1f || c == '%' || c == 0x7f || strings.ContainsRune(forbiddenHost, c)
}

// parseHost is the host parser; opaque is true for a URL that is not
// special. It returns the host serialized, or the reason it is not one.
func parseHost(input string, opaque bool) (string, string, error) {
	if strings.HasPrefix(input, "[") {
		if !strings.HasSuffix(input, "]") || len(input) < 2 {
			return "", "an IPv6 address is missing its ]", nil
		}
		a, ok := parseIPv6([]rune(input[1 : len(input)-1]))
		if !ok {
			return "", "the IPv6 address " + input + " is not valid", nil
		}
		return "[" + serializeIPv6(a) + "]", "", nil
	}
	if opaque {
		if strings.ContainsAny(input, forbiddenHost) {
			return "", "the host contains a forbidden code point", nil
		}
		return percentEncode(input, c0ControlSet), "", nil
	}
	domain := strings.ToValidUTF8(percentDecode(input), "\uFFFD")
	for i := 0; i < len(domain); i++ {
		if domain[i] >= 0x80 {
			return "", "the domain " + strconv.Quote(domain) + " is not ASCII, and IDNA is not supported: write it in its xn-- (punycode) form", ErrIDNA
		}
	}
	// The domain parser, for an ASCII domain that need not be strict: the
	// Standard lowercases it whatever Unicode ToASCII would say.
	domain = strings.ToLower(domain)
	if domain == "" {
		return "", "the host is empty", nil
	}
	if strings.IndexFunc(domain, forbiddenDomainCodePoint) >= 0 {
		return "", "the host contains a forbidden code point", nil
	}
	if endsInNumber(domain) {
		a, ok := parseIPv4(domain)
		if !ok {
			return "", "the host " + domain + " ends in a number but is not an IPv4 address", nil
		}
		return serializeIPv4(a), "", nil
	}
	return domain, "", nil
}

// endsInNumber says whether the last label (past one trailing dot) is a
// number, which makes the host an IPv4 address or nothing.
func endsInNumber(s string) bool {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, _, ok := parseIPv4Number(last)
	return ok
}

func parseIPv4(s string) (uint32, bool) {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return 0, false
	}
	var ipv4 uint64
	for i, p := range parts {
		n, _, ok := parseIPv4Number(p)
		if !ok {
			return 0, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return 0, false
			}
			ipv4 += n << (8 * (3 - i))
		} else {
			if n >= 1<<(8*(5-len(parts))) {
				return 0, false
			}
			ipv4 += n
		}
	}
	return uint32(ipv4), true
}

// parseIPv4Number reads one part: decimal, 0x hex or 0 octal (the bool says
// it was not decimal). Values past 2^32 are clamped to it: every caller
// refuses them alike.
func parseIPv4Number(s string) (uint64, bool, bool) {
	if s == "" {
		return 0, false, false
	}
	radix, nonDecimal := uint64(10), false
	if len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s, radix, nonDecimal = s[2:], 16, true
	} else if len(s) >= 2 && s[0] == '0' {
		s, radix, nonDecimal = s[1:], 8, true
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		d, ok := hexValue(s[i])
		if !ok || uint64(d) >= radix {
			return 0, false, false
		}
		n = min(n*radix+uint64(d), 1<<32)
	}
	return n, nonDecimal, true
}

func serializeIPv4(a uint32) string {
	return strconv.Itoa(int(a>>24)) + "." + strconv.Itoa(int(a>>16&255)) + "." +
		strconv.Itoa(int(a>>8&255)) + "." + strconv.Itoa(int(a&255))
}

// parseIPv6 is the Standard's IPv6 parser, pointer arithmetic and all.
func parseIPv6(in []rune) ([8]uint16, bool) {
	var a [8]uint16
	piece, compress, p := 0, -1, 0
	at := func(i int) rune {
		if i < len(in) {
			return in[i]
		}
		return eof
	}
	if at(p) == ':' {
		if at(p+1) != ':' {
			return a, false
		}
		p += 2
		piece++
		compress = piece
	}
	for at(p) != eof {
		if piece == 8 {
			return a, false
		}
		if at(p) == ':' {
			if compress >= 0 {
				return a, false
			}
			p++
			piece++
			compress = piece
			continue
		}
		value, length := 0, 0
		for length < 4 {
			d, ok := hexDigit(at(p))
			if !ok {
				break
			}
			value = value*16 + int(d)
			p++
			length++
		}
		if at(p) == '.' {
			if length == 0 {
				return a, false
			}
			p -= length
			if piece > 6 {
				return a, false
			}
			seen := 0
			for at(p) != eof {
				v := -1
				if seen > 0 {
					if at(p) != '.' || seen >= 4 {
						return a, false
					}
					p++
				}
				if !isDigit(at(p)) {
					return a, false
				}
				for isDigit(at(p)) {
					n := int(at(p) - '0')
					switch {
					case v < 0:
						v = n
					case v == 0:
						return a, false
					default:
						v = v*10 + n
					}
					if v > 255 {
						return a, false
					}
					p++
				}
				a[piece] = a[piece]*0x100 + uint16(v)
				seen++
				if seen == 2 || seen == 4 {
					piece++
				}
			}
			if seen != 4 {
				return a, false
			}
			break
		} else if at(p) == ':' {
			p++
			if at(p) == eof {
				return a, false
			}
		} else if at(p) != eof {
			return a, false
		}
		a[piece] = uint16(value)
		piece++
	}
	if compress >= 0 {
		swaps := piece - compress
		for piece = 7; piece != 0 && swaps > 0; piece, swaps = piece-1, swaps-1 {
			a[piece], a[compress+swaps-1] = a[compress+swaps-1], a[piece]
		}
	} else if piece != 8 {
		return a, false
	}
	return a, true
}

func hexDigit(c rune) (byte, bool) {
	if c < 0 || c >= 0x80 {
		return 0, false
	}
	return hexValue(byte(c))
}

func serializeIPv6(a [8]uint16) string {
	// The first longest run of two or more zero pieces becomes "::".
	compress, longest := -1, 1
	for i := 0; i < 8; {
		j := i
		for j < 8 && a[j] == 0 {
			j++
		}
		if j-i > longest {
			compress, longest = i, j-i
		}
		i = j + 1
	}
	var b strings.Builder
	for i := 0; i < 8; i++ {
		if i == compress {
			if i == 0 {
				b.WriteString("::")
			} else {
				b.WriteByte(':')
			}
			i += longest - 1
			continue
		}
		b.WriteString(strconv.FormatUint(uint64(a[i]), 16))
		if i != 7 {
			b.WriteByte(':')
		}
	}
	return b.String()
}
