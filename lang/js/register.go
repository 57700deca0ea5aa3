package js

import (
	"encoding/json"

	"github.com/cruciblehq/crucible/lang"
)

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
			Warm: &lang.Warm{
				Program: func(s lang.Settings) (*lang.Program, error) {
					return WarmProgram(Options{Heap: s.JSHeap, Stack: s.JSStack, Timeout: s.Timeout}), nil
				},
				Input: func(src []byte, file string) ([]byte, error) {
					return json.Marshal(NewJob(src, file, l.ts))
				},
				SaysReady: true,
				Worker:    Worker, // ts and js: one engine, told the language by the job
			},
		})
	}
}
