// Package jsname says which names the code may use for servers and tools:
// identifiers that work in every language the sandbox runs, and the one the
// code calls each tool by. It is apart from package toolbridge because the
// engine's worker needs it too, and must not pay at its start for the
// initialization of what the bridge imports (the MCP SDK and its JSON
// Schema, among others); so it imports nothing but a few standard packages.
package jsname

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// reserved are the words that cannot name a server or a tool in the code:
// JavaScript's reserved words and Python's keywords (a name must work in
// every language). Made on first use: this package initializes in every
// process of the binary, the jail's own included.
var reserved = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		break case catch class const continue debugger default delete do else
		enum export extends false finally for function if import in instanceof
		new null return super switch this throw true try typeof var void while
		with yield let static implements interface package private protected
		public await arguments eval undefined
		False None True and as assert async def del elif except from global is
		lambda nonlocal not or pass raise`) {
		m[w] = true
	}
	return m
})

// Reserved reports whether w is a reserved word in JavaScript or Python.
func Reserved(w string) bool { return reserved()[w] }

// Identifier reports whether s is an identifier in every language: ASCII
// letters, digits and _, not starting with a digit.
func Identifier(s string) bool {
	for i, r := range s {
		if !identRune(r) || i == 0 && r >= '0' && r <= '9' {
			return false
		}
	}
	return s != ""
}

func identRune(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// Tools maps each of one server's tool names to the identifier the code
// calls it by: the name itself when it is a usable identifier, else the
// name with every other character made "_" (a leading digit or a reserved
// word gets one more "_"). Names that would collide are told apart by
// "_2", "_3", ... in the order of the original names; a name that needed
// no change keeps it. The same list gives the same map, whatever its order.
func Tools(tools []string) map[string]string {
	names := slices.Sorted(slices.Values(tools))
	names = slices.Compact(names)
	out := make(map[string]string, len(names))
	used := map[string]bool{}
	for _, n := range names {
		if Identifier(n) && !reserved()[n] {
			out[n], used[n] = n, true
		}
	}
	for _, n := range names {
		if _, ok := out[n]; ok {
			continue
		}
		base := safeName(n)
		id := base
		for i := 2; used[id]; i++ {
			id = base + "_" + strconv.Itoa(i)
		}
		out[n], used[id] = id, true
	}
	return out
}

func safeName(n string) string {
	var b strings.Builder
	for _, r := range n {
		if identRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || s[0] >= '0' && s[0] <= '9' || reserved()[s] {
		s = "_" + s
	}
	return s
}
