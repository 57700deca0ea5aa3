package js

import "github.com/cruciblehq/crucible/lang"

func init() {
	for _, l := range []struct {
		name string
		ts   bool
		exts []string
	}{
		{lang.TypeScript, true, []string{".ts", ".mts"}},
		{lang.JavaScript, false, []string{".js", ".mjs", ".cjs"}},
	} {
		lang.Register(lang.Language{
			Name:       l.name,
			Extensions: l.exts,
			Program: func(src []byte, file string, s lang.Settings) (*lang.Program, error) {
				return Program(src, file, l.ts, Options{Heap: s.JSHeap, Stack: s.JSStack, Timeout: s.Timeout}), nil
			},
			Check: func(lang.Settings) (string, error) { return "embedded (QuickJS)", nil },
		})
	}
}
