package sandbox

import (
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/lang"
	// The languages that `crucible run` offers register themselves.
	_ "github.com/cruciblehq/crucible/lang/deno"
	_ "github.com/cruciblehq/crucible/lang/js"
	_ "github.com/cruciblehq/crucible/lang/python"
)

// Program plans src, a program named like file ("-" for standard input), in
// the language named (as lang.Detect names it), with cfg's runtimes.
func Program(cfg *config.Config, language string, src []byte, file string) (*lang.Program, error) {
	l, ok := lang.Lookup(language)
	if !ok {
		_, err := lang.Detect(language, file) // says which languages there are
		return nil, err
	}
	s := settings(&cfg.Runtimes)
	s.Timeout = time.Duration(cfg.Sandbox.Timeout)
	return l.Program(src, file, s)
}

// settings are the languages' view of the runtimes section.
func settings(r *config.Runtimes) lang.Settings {
	return lang.Settings{Python: r.Python, Deno: r.Deno, JSHeap: int64(r.JSHeap), JSStack: r.JSStack}
}
