package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// sourceMap maps positions in the code the engine runs back to the program's
// own source. It holds what esbuild writes: one source, no names.
type sourceMap struct {
	lines [][]segment // by generated line, 0-based; each sorted by column
}

// segment says that generated column col (0-based) came from the original
// line and column (0-based).
type segment struct {
	col, line, origCol int
}

// parseSourceMap reads a version 3 source map's mappings.
func parseSourceMap(b []byte) (*sourceMap, error) {
	var raw struct {
		Version  int    `json:"version"`
		Mappings string `json:"mappings"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	if raw.Version != 3 {
		return nil, fmt.Errorf("source map version %d", raw.Version)
	}
	m := &sourceMap{}
	var src, line, col int // carried across lines, as the format says
	for _, l := range strings.Split(raw.Mappings, ";") {
		var segs []segment
		gen := 0 // reset on each line
		for _, s := range strings.Split(l, ",") {
			if s == "" {
				continue
			}
			f, err := decodeVLQ(s)
			if err != nil {
				return nil, err
			}
			gen += f[0]
			if len(f) < 4 {
				continue // a generated column that maps to nothing
			}
			src += f[1]
			line += f[2]
			col += f[3]
			if src == 0 {
				segs = append(segs, segment{gen, line, col})
			}
		}
		sort.SliceStable(segs, func(i, j int) bool { return segs[i].col < segs[j].col })
		m.lines = append(m.lines, segs)
	}
	return m, nil
}

// lookup returns the original line and column (both 1-based) of a generated
// position (both 1-based, as the engine reports them).
// A nil map finds nothing.
func (m *sourceMap) lookup(line, col int) (int, int, bool) {
	if m == nil || line < 1 || line > len(m.lines) {
		return 0, 0, false
	}
	segs := m.lines[line-1]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].col > col-1 }) - 1
	if i < 0 {
		if len(segs) == 0 {
			return 0, 0, false
		}
		i = 0 // before the first mapped column: the line's first mapping
	}
	return segs[i].line + 1, segs[i].origCol + 1, true
}

const vlqChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// decodeVLQ decodes one segment's base64 VLQ fields.
func decodeVLQ(s string) ([]int, error) {
	var out []int
	v, shift := 0, 0
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(vlqChars, s[i])
		if d < 0 || shift > 28 {
			return nil, errors.New("bad source map mapping")
		}
		v |= (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			continue
		}
		if v&1 != 0 {
			out = append(out, -(v >> 1))
		} else {
			out = append(out, v>>1)
		}
		v, shift = 0, 0
	}
	if shift != 0 {
		return nil, errors.New("bad source map mapping")
	}
	return out, nil
}

// position is "name:line:col" in a stack frame.
func position(name string, line, col int) string {
	return name + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
}
