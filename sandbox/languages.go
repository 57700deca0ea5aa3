package sandbox

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/lang"

	// The languages that `crucible run` offers register themselves.
	"github.com/cruciblehq/crucible/lang/deno"
	_ "github.com/cruciblehq/crucible/lang/js"
	_ "github.com/cruciblehq/crucible/lang/python"
)

// Program plans src, a program named like file ("-" for standard input), in
// the language named (as lang.Detect names it), with cfg's runtimes.
func Program(cfg *config.Config, language string, src []byte, file string) (*lang.Program, error) {
	l, err := lookup(cfg, language)
	if err != nil {
		return nil, err
	}
	p, err := l.Program(src, file, settings(cfg))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", language, err)
	}
	return p, nil
}

// TypeCheck is a type check of a program before it runs: against
// Declarations, the TypeScript declarations of its tools (as
// ToolDeclarations makes them), beside its runtime's own.
type TypeCheck struct {
	Declarations string
}

// CanTypeCheck says why programs in language cannot be type-checked under
// cfg, or nil if they can: TypeScript and JavaScript on Deno (engine deno,
// or auto with a deno binary) and language deno.
func CanTypeCheck(cfg *config.Config, language string) error {
	l, err := lookup(cfg, language)
	if err != nil {
		return err
	}
	if l.TypeCheck == nil {
		if language == lang.TypeScript || language == lang.JavaScript {
			return fmt.Errorf("type checking needs Deno: %s runs on the embedded engine, which does not check types (set runtimes.engine to deno, or to auto with a deno binary)", language)
		}
		return fmt.Errorf("type checking is for TypeScript and JavaScript on Deno, not %s", language)
	}
	return nil
}

// CheckedProgram is Program, type-checked as c says before it runs (see
// CanTypeCheck): a program that does not pass does not run, and its result's
// error lists why (a TypeCheckError).
func CheckedProgram(cfg *config.Config, language string, src []byte, file string, c *TypeCheck) (*lang.Program, error) {
	if err := CanTypeCheck(cfg, language); err != nil {
		return nil, err
	}
	l, _ := lookup(cfg, language) // CanTypeCheck found it
	p, err := l.TypeCheck.Program(src, file, c.Declarations, settings(cfg))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", language, err)
	}
	return p, nil
}

// jobInput is a warm worker's stdin for job, a program in l.
func jobInput(l lang.Language, job Job) ([]byte, error) {
	if job.TypeCheck == nil {
		return l.Warm.Input(job.Source, job.File)
	}
	if l.TypeCheck == nil {
		return nil, fmt.Errorf("sandbox: %s programs cannot be type-checked here (CanTypeCheck)", l.Name)
	}
	return l.TypeCheck.Input(job.Source, job.File, job.TypeCheck.Declarations)
}

// lookup is the language named, as cfg runs it: TypeScript and JavaScript
// on the engine of runtimes.engine. Deno waits in warm jails only as the
// engine: otherwise its programs (language deno) run cold.
func lookup(cfg *config.Config, language string) (lang.Language, error) {
	l, ok := lang.Lookup(language)
	if !ok {
		_, err := lang.Detect(language, "") // says which languages there are
		if err == nil {
			err = fmt.Errorf("unknown language %q", language)
		}
		return l, err
	}
	onDeno := Engine(cfg) == config.EngineDeno
	switch {
	case onDeno && (language == lang.TypeScript || language == lang.JavaScript):
		ext := ".ts"
		if language == lang.JavaScript {
			ext = ".js"
		}
		return deno.As(language, l.Extensions, ext), nil
	case language == lang.Deno && !onDeno:
		l.Warm = nil
	}
	return l, nil
}

// CheckEngine refuses an engine that cannot run: runtimes.engine deno
// without a deno binary. (auto falls back to the embedded engine.)
func CheckEngine(cfg *config.Config) error {
	if cfg.Runtimes.Engine != config.EngineDeno {
		return nil
	}
	if _, err := deno.Find(cfg.Runtimes.Deno); err != nil {
		return fmt.Errorf("runtimes.engine is deno: %w", err)
	}
	return nil
}

// EngineNote says in a line for the operator which engine runs
// TypeScript and JavaScript under cfg, and why.
func EngineNote(cfg *config.Config) string {
	switch {
	case Engine(cfg) == config.EngineDeno:
		return "TypeScript and JavaScript run on Deno (runtimes.engine " + cfg.Runtimes.Engine + ")"
	case cfg.Runtimes.Engine == config.EngineAuto:
		return "TypeScript and JavaScript run on the embedded engine (runtimes.engine auto: no deno binary found; install one with npm install deno, or set runtimes.deno)"
	}
	return "TypeScript and JavaScript run on the embedded engine (runtimes.engine " + cfg.Runtimes.Engine + ")"
}

// Engine is the engine that runs TypeScript and JavaScript under cfg:
// config.EngineEmbedded or config.EngineDeno. runtimes.engine auto is
// Deno when a deno binary is found (runtimes.deno, PATH, node_modules).
func Engine(cfg *config.Config) string {
	switch cfg.Runtimes.Engine {
	case config.EngineDeno:
		return config.EngineDeno
	case config.EngineAuto:
		if _, err := deno.Find(cfg.Runtimes.Deno); err == nil {
			return config.EngineDeno
		}
	}
	return config.EngineEmbedded
}

// settings are the languages' view of cfg.
func settings(cfg *config.Config) lang.Settings {
	r := &cfg.Runtimes
	return lang.Settings{Python: r.Python, Deno: r.Deno, JSHeap: int64(r.JSHeap), JSStack: r.JSStack,
		Timeout: time.Duration(cfg.Sandbox.Timeout), WarmChecker: cfg.Serve.TypeCheck}
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
// first, then those picked by a file's extension, then the rest, each part
// by name.
func Languages() []Language {
	all := lang.All()
	rank := func(l lang.Language) int {
		switch {
		case l.Name == lang.Default:
			return 0
		case len(l.Extensions) > 0:
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
// order, of the languages that share it (sameWorker). A pool of each
// serves every language there is a warm jail for.
func PoolLanguages(cfg *config.Config) []string {
	var out []string
	for _, l := range Languages() {
		if sameWorker(cfg, l.Name, l.Name) && !slices.ContainsFunc(out, func(p string) bool { return sameWorker(cfg, p, l.Name) }) {
			out = append(out, l.Name)
		}
	}
	return out
}
