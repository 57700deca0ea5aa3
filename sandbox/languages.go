package sandbox

import (
	"fmt"
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
	l, err := lookup(language)
	if err != nil {
		return nil, err
	}
	p, err := l.Program(src, file, settings(cfg))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", language, err)
	}
	return p, nil
}

func lookup(language string) (lang.Language, error) {
	l, ok := lang.Lookup(language)
	if !ok {
		_, err := lang.Detect(language, "") // says which languages there are
		if err == nil {
			err = fmt.Errorf("unknown language %q", language)
		}
		return l, err
	}
	return l, nil
}

// settings are the languages' view of cfg.
func settings(cfg *config.Config) lang.Settings {
	r := &cfg.Runtimes
	return lang.Settings{Python: r.Python, Deno: r.Deno, JSHeap: int64(r.JSHeap), JSStack: r.JSStack,
		Timeout: time.Duration(cfg.Sandbox.Timeout)}
}
