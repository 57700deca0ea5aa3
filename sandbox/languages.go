package sandbox

import (
	"cmp"
	"fmt"
	"slices"
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

// Language is what a front end offers of a language: the registry
// (package lang) holds the languages that this package links in, and a
// front end reads them here, not there.
type Language struct {
	Name string // as `crucible run --lang` and execute's language name it
	// Ext is the extension of its sources, for a program without a file
	// name of its own; "" for a language picked by name only (deno,
	// whose programs are TypeScript).
	Ext string
}

// Languages are the languages programs may be written in: the default
// first, then those whose jails can wait warm, then the rest, each part
// by name.
func Languages() []Language {
	all := lang.All()
	rank := func(l lang.Language) int {
		switch {
		case l.Name == lang.Default:
			return 0
		case l.Warm != nil:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(all, func(a, b lang.Language) int { return cmp.Compare(rank(a), rank(b)) }) // All is by name
	out := make([]Language, len(all))
	for i, l := range all {
		out[i] = Language{Name: l.Name}
		if len(l.Extensions) > 0 {
			out[i].Ext = l.Extensions[0]
		}
	}
	return out
}

// DetectLanguage is the language of a program: name if given (it must
// be one of Languages), else the one file's extension says, else the
// default.
func DetectLanguage(name, file string) (string, error) { return lang.Detect(name, file) }

// PoolLanguages name one Pool per warm worker: the first, in Languages'
// order, of the languages that share it (SameWorker). A pool of each
// serves every language there is a warm jail for.
func PoolLanguages() []string {
	var out []string
	for _, l := range Languages() {
		if SameWorker(l.Name, l.Name) && !slices.ContainsFunc(out, func(p string) bool { return SameWorker(p, l.Name) }) {
			out = append(out, l.Name)
		}
	}
	return out
}
