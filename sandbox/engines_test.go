package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/lang/deno"
)

// onEngines runs test once on each engine of ts and js, as a subtest named
// after it, with a copy of cfg (the default one if nil) set to it: the
// embedded engine, then Deno (the repository's: npm install).
func onEngines(t *testing.T, cfg *config.Config, test func(t *testing.T, cfg *config.Config)) {
	t.Helper()
	if cfg == nil {
		cfg = config.Default()
	}
	for _, engine := range []string{config.EngineEmbedded, config.EngineDeno} {
		t.Run(engine, func(t *testing.T) {
			c := *cfg
			if c.Runtimes.Engine = engine; engine == config.EngineDeno {
				needDeno(t, &c)
			}
			test(t, &c)
		})
	}
}

// embedded is the default configuration on the embedded engine, for the
// tests of its pools and worker: the default, auto, is Deno where one is
// found (as here, after npm install).
func embedded() *config.Config {
	cfg := config.Default()
	cfg.Runtimes.Engine = config.EngineEmbedded
	return cfg
}

// needDeno is Missing when cfg finds no deno.
func needDeno(t *testing.T, cfg *config.Config) {
	t.Helper()
	if _, err := deno.Find(cfg.Runtimes.Deno); err != nil {
		testenv.Missing(t, "no deno: run npm install at the repository's root")
	}
}

// enginePool is a pool of ts workers on cfg's engine, closed at the test's
// end.
func enginePool(t *testing.T, cfg *config.Config, o PoolOptions) *Pool {
	t.Helper()
	return testPool(t, cfg, "ts", o, func(*config.Config) string { return "" })
}

// The engine's conformance corpus (lang/js/engine/testdata/corpus), each
// program through a warm jail of each engine: the same result on both,
// the one its file records (made with Deno and read against the
// standard). Where the engines differ, TestEnginesDiffer says how.
func TestCorpusOnEngines(t *testing.T) {
	files, _ := filepath.Glob("../lang/js/engine/testdata/corpus/*.[jt]s")
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	onEngines(t, nil, func(t *testing.T, cfg *config.Config) {
		p := enginePool(t, cfg, PoolOptions{Size: 2})
		for _, f := range files {
			name := filepath.Base(f)
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, filepath.Ext(f)) + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var exp any
			if err := json.Unmarshal(want, &exp); err != nil {
				t.Fatalf("%s.json: %v", name, err)
			}
			x, err := p.Do(context.Background(), Job{Language: filepath.Ext(f)[1:], Source: src, File: name})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if x.Error != nil || x.ExitCode != 0 {
				t.Errorf("%s: exit %d, %+v\n%s", name, x.ExitCode, x.Error, x.Stderr)
				continue
			}
			var got any
			if err := json.Unmarshal(x.Result, &got); err != nil {
				t.Fatalf("%s: %v: %s", name, err, x.Result)
			}
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("%s on %s:\n got %s\nwant %s", name, cfg.Runtimes.Engine, x.Result, want)
			}
		}
	})
}

// Where the engines differ, program by program: what the embedded engine
// lacks (it says so with a TypeError or ReferenceError the model can read)
// and Deno has. A program that runs on both gets the same fields either
// way; a change on either side shows here.
func TestEnginesDiffer(t *testing.T) {
	cases := []struct{ name, src, embedded, deno string }{
		{"Intl", `return new Intl.NumberFormat("en-US").format(1234.5)`, "ReferenceError", `"1,234.5"`},
		{"toLocaleString", `return (1234.5).toLocaleString("de-DE")`, `"1234.5"`, `"1.234,5"`},
		{"Blob", `return await new Blob(["ab", "c"]).text()`, "ReferenceError", `"abc"`},
		{"AbortSignal.timeout", `return typeof AbortSignal.timeout`, `"undefined"`, `"function"`},
		{"Response.body", `return new Response("x").body === null`, "true", "false"},
		{"Deno", `return typeof Deno`, `"undefined"`, `"object"`},
		{"an unhandled rejection", "Promise.reject(new Error(\"nobody\"));\nreturn 1", "1", "Error"},
		{"a timer's error", "setTimeout(() => { throw new RangeError(\"late\"); }, 10);\nreturn 1", "RangeError", "RangeError"},
		{"fs and env", `return [typeof fs.readTextFile, typeof env]`, `["function","object"]`, `["function","object"]`},
	}
	onEngines(t, nil, func(t *testing.T, cfg *config.Config) {
		p := enginePool(t, cfg, PoolOptions{Size: 1})
		for _, c := range cases {
			want := c.embedded
			if cfg.Runtimes.Engine == config.EngineDeno {
				want = c.deno
			}
			x, err := p.Do(context.Background(), Job{Source: []byte(c.src), File: "main.ts"})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got := string(x.Result)
			if x.Error != nil {
				got = x.Error.Name
			}
			if got != want {
				t.Errorf("%s: %s (%+v), want %s", c.name, got, x.Error, want)
			}
		}
	})
}
