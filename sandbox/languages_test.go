package sandbox

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/lang/deno"
)

// The languages a front end offers come from the registry, the default
// first and the warm ones before the rest; the pools are one per worker.
// (This package's tests register a language of their own, left out.)
func TestLanguages(t *testing.T) {
	ours := func(name string) bool { return slices.Contains([]string{"ts", "js", "py", "deno"}, name) }
	var got []Language
	for _, l := range Languages() {
		if ours(l.Name) {
			got = append(got, l)
		}
	}
	if want := []Language{{"ts", ".ts"}, {"js", ".js"}, {"py", ".py"}, {"deno", ""}}; !slices.Equal(got, want) {
		t.Errorf("Languages() = %v, want %v", got, want)
	}
	for _, c := range []struct {
		engine string
		want   []string
	}{
		{config.EngineEmbedded, []string{"ts", "py"}},
		// On Deno one pool serves ts, js and deno; deno is no pool of its
		// own otherwise (its programs run cold).
		{config.EngineDeno, []string{"ts", "py"}},
	} {
		cfg := config.Default()
		cfg.Runtimes.Engine = c.engine
		pools := slices.DeleteFunc(PoolLanguages(cfg), func(l string) bool { return !ours(l) })
		if !slices.Equal(pools, c.want) {
			t.Errorf("%s: PoolLanguages() = %q, want %q", c.engine, pools, c.want)
		}
	}
}

// The engine of runtimes.engine runs ts and js: Deno's pool serves ts, js
// and deno, and records each by its own name; the embedded engine's does
// not serve deno. auto is Deno when a deno binary is found, else the
// embedded engine, and says so; deno without one is refused, naming the
// setting.
func TestEngine(t *testing.T) {
	missing := config.Default()
	missing.Runtimes.Deno = filepath.Join(t.TempDir(), "deno")
	missing.Runtimes.Engine = config.EngineAuto
	if e, note := Engine(missing), EngineNote(missing); e != config.EngineEmbedded || !strings.Contains(note, "no deno binary found") {
		t.Errorf("auto without deno: %s, %q", e, note)
	}
	missing.Runtimes.Engine = config.EngineDeno
	if err := CheckEngine(missing); err == nil || !strings.Contains(err.Error(), "runtimes.deno") || strings.Contains(err.Error(), missing.Runtimes.Deno) {
		t.Errorf("deno without deno: %v", err)
	}
	if _, err := Program(missing, "ts", []byte("1"), "-"); err == nil || !strings.Contains(err.Error(), "runtimes.deno") {
		t.Errorf("a ts program on a missing deno: %v", err)
	}

	if sameWorker(embedded(), "ts", "deno") || sameWorker(embedded(), "deno", "deno") {
		t.Error("the embedded engine's pool serves deno, or deno has a pool of its own")
	}
	if _, err := deno.Find(""); err != nil {
		testenv.Missing(t, "no deno: run npm install at the repository's root")
		return
	}
	auto := config.Default()
	auto.Runtimes.Engine = config.EngineAuto
	if e := Engine(auto); e != config.EngineDeno {
		t.Errorf("auto with deno: %s", e)
	}
	for _, pair := range [][2]string{{"ts", "js"}, {"ts", "deno"}, {"js", "deno"}} {
		if !sameWorker(auto, pair[0], pair[1]) {
			t.Errorf("on Deno, %s and %s do not share a worker", pair[0], pair[1])
		}
	}
	if sameWorker(auto, "ts", "py") {
		t.Error("on Deno, ts and py share a worker")
	}
	p, err := Program(auto, "js", []byte("1"), "x.ts")
	if err != nil || p.Lang != "js" || !strings.Contains(strings.Join(p.Args, " "), "main.js") {
		t.Errorf("a js program named x.ts on Deno: %v %+v", err, p)
	}
}
