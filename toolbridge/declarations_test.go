package toolbridge

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/evanw/esbuild/pkg/api"
)

// checkTS fails t unless decls is TypeScript that esbuild parses.
func checkTS(t testing.TB, decls string) {
	t.Helper()
	r := api.Transform(decls, api.TransformOptions{Loader: api.LoaderTS})
	for _, e := range r.Errors {
		line := ""
		if e.Location != nil {
			line = e.Location.LineText
		}
		t.Errorf("not TypeScript: %s: %q\n%s", e.Text, line, decls)
	}
}

// The golden declarations type-check, with the deno that npm install puts
// in node_modules (esbuild, above, only parses).
func TestDeclarationsTypeCheck(t *testing.T) {
	deno, err := filepath.Abs("../node_modules/.bin/deno")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(deno); err != nil {
		testenv.Missing(t, "needs deno in node_modules (npm install at the repository's root)")
	}
	cmd := exec.Command(deno, "check", "testdata/crafted.d.ts", "testdata/goserver.d.ts")
	cmd.Env = append(os.Environ(), "DENO_DIR="+t.TempDir(), "NO_COLOR=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("deno check: %v\n%s", err, out)
	}
}

func TestDeclarationsGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/crafted.json")
	if err != nil {
		t.Fatal(err)
	}
	var tools []Tool
	if err := json.Unmarshal(data, &tools); err != nil {
		t.Fatal(err)
	}
	got := Declarations(tools)
	checkTS(t, got)
	testenv.Golden(t, "crafted.d.ts", got)

	// The order the servers list their tools in changes nothing.
	for i, j := 0, len(tools)-1; i < j; i, j = i+1, j-1 {
		tools[i], tools[j] = tools[j], tools[i]
	}
	if again := Declarations(tools); again != got {
		t.Error("the declarations depend on the order of the tools")
	}
}

// The declarations of the tests' own server, as the bridge lists it.
func TestDeclarationsOfServer(t *testing.T) {
	b := newBridge(t, Options{Servers: map[string]Server{"go": goServer(t)}})
	tools, err := b.Tools(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := Declarations(tools)
	checkTS(t, got)
	testenv.Golden(t, "goserver.d.ts", got)
}

func TestServerNameOK(t *testing.T) {
	for name, ok := range map[string]bool{"github": true, "my_server2": true, "_x": true,
		"": false, "2x": false, "my-server": false, "class": false, "None": false, "call": false, "list": false, "ünï": false} {
		if got := ServerNameOK(name) == ""; got != ok {
			t.Errorf("ServerNameOK(%q) = %q", name, ServerNameOK(name))
		}
	}
}

// Whatever the schema, the declarations parse as TypeScript.
func FuzzDeclarations(f *testing.F) {
	data, err := os.ReadFile("testdata/crafted.json")
	if err != nil {
		f.Fatal(err)
	}
	var tools []map[string]any
	if err := json.Unmarshal(data, &tools); err != nil {
		f.Fatal(err)
	}
	for _, tl := range tools {
		s, _ := json.Marshal(tl["input_schema"])
		f.Add(string(s), "get-sum", "desc */ end")
	}
	f.Add(`{"type":"object","properties":{"a":{"const":{"x":[1,"*/"]}}}}`, "x", "")
	f.Fuzz(func(t *testing.T, schema, name, desc string) {
		var s any
		if json.Unmarshal([]byte(schema), &s) != nil {
			return
		}
		decls := Declarations([]Tool{{Server: "srv", Name: name, Description: desc, InputSchema: s, OutputSchema: s}})
		if strings.Count(decls, "namespace srv") != 1 {
			t.Fatalf("no namespace for the server:\n%s", decls)
		}
		checkTS(t, decls)
	})
}
