package config

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"sync"
)

// ByteSize is a number of bytes.
//
// In crucible.yaml and on the command line it is written as a number and an
// optional unit, with optional blanks between them:
//
//	size   = number [unit]
//	number = digits ["." digits]
//	unit   = B | K | Ki | KiB | M | Mi | MiB | G | Gi | GiB | T | Ti | TiB   (any case)
//
// Every unit is binary: 1K = 1Ki = 1KiB = 1024 bytes, 1M = 1MiB = 1024 KiB,
// and so on. A number without a unit (or with B) is bytes. The decimal units
// KB, MB, GB and TB are rejected with a hint rather than read either way: in a
// file that sets security limits, "64MB" meaning 64,000,000 bytes to one reader
// and 64 MiB to another is a needless 5% surprise.
//
// A fraction is accepted only when the result is a whole number of bytes
// (1.5GiB and 0.5K are fine, 0.1K is not). Signs, exponents, hexadecimal and
// values above 2⁶³-1 bytes are rejected.
//
// ByteSize implements [encoding.TextUnmarshaler] and [encoding.TextMarshaler],
// so yaml.v3 decodes it from a scalar and flag.TextVar accepts it as a flag.
type ByteSize int64

// Binary size units.
const (
	KiB ByteSize = 1 << (10 * (iota + 1))
	MiB
	GiB
	TiB
)

var (
	// Compiled on first use, not by every process of the binary at its start.
	sizeSyntax = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) *([A-Za-z]*)$`) })

	sizeUnits = map[string]ByteSize{
		"": 1, "b": 1,
		"k": KiB, "ki": KiB, "kib": KiB,
		"m": MiB, "mi": MiB, "mib": MiB,
		"g": GiB, "gi": GiB, "gib": GiB,
		"t": TiB, "ti": TiB, "tib": TiB,
	}

	// decimalUnits maps each rejected decimal unit to the binary one to suggest.
	decimalUnits = map[string]string{"kb": "KiB", "mb": "MiB", "gb": "GiB", "tb": "TiB"}
)

// ParseByteSize parses s as described at [ByteSize]. Bounds (such as a minimum
// memory limit) are checked by [Config.Validate], not here, so "0" parses.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	if len(t) > 64 {
		// Keeps the arithmetic below cheap; no real size is this long.
		return 0, fmt.Errorf("%s is too long to be a size", quote(s))
	}
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("%s is negative", quote(s))
	}
	m := sizeSyntax().FindStringSubmatch(t)
	if m == nil {
		return 0, fmt.Errorf("%s is not a size (use e.g. 512MiB)", quote(s))
	}
	unit := strings.ToLower(m[2])
	mult, ok := sizeUnits[unit]
	if !ok {
		if bin, ok := decimalUnits[unit]; ok {
			return 0, fmt.Errorf("%s: decimal units are not accepted, sizes are binary (use e.g. %s%s)", quote(s), m[1], bin)
		}
		return 0, fmt.Errorf("%s is not a size (use e.g. 512MiB)", quote(s))
	}
	// Exact rational arithmetic, so that 1.5GiB is exact and 0.1KiB is caught.
	r, _ := new(big.Rat).SetString(m[1]) // the regexp admits only plain decimals
	r.Mul(r, new(big.Rat).SetInt64(int64(mult)))
	if !r.IsInt() {
		return 0, fmt.Errorf("%s is not a whole number of bytes", quote(s))
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("%s is too large", quote(s))
	}
	return ByteSize(r.Num().Int64()), nil
}

// String formats b in the largest binary unit that divides it exactly, e.g.
// "512MiB", "1536KiB", "1000B". The result parses back to b (when b >= 0).
func (b ByteSize) String() string {
	for _, u := range []struct {
		size ByteSize
		name string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if b != 0 && b%u.size == 0 {
			return fmt.Sprintf("%d%s", b/u.size, u.name)
		}
	}
	return fmt.Sprintf("%dB", int64(b))
}

// MarshalText implements [encoding.TextMarshaler] with [ByteSize.String].
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText implements [encoding.TextUnmarshaler] with [ParseByteSize].
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}
