package mcpserver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// Attack: two clients take turns through pools of one jail each, many
// rounds, in a session and by handle, in TypeScript and Python: each
// program lists /workspace and leaves a marker. No program ever sees the
// other client's marker, nor one of its own other workspace; each
// workspace holds its own markers only. On each engine of TypeScript.
func TestAttackTwoClientsOnePool(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	onEngines(t, twoClientsOnePool)
}

func twoClientsOnePool(t *testing.T, engine string) {
	s := newServer(t, func(c *config.Config) { c.Serve.Pool = 1; c.Serve.Rate = 0; c.Runtimes.Engine = engine })
	url := serveHTTP(t, s)
	type client struct {
		name   string
		call   func(args map[string]any) *executeOut
		handle string
		marks  []string
	}
	var clients []*client
	for _, c := range []struct{ name, token, version string }{
		{"a-session", tokenA, "2025-11-25"}, {"b-session", tokenB, "2025-11-25"},
		{"a-handle", tokenA, ""}, {"b-handle", tokenB, ""},
	} {
		cs := connectHTTP(t, url, c.token, c.version)
		clients = append(clients, &client{name: c.name, call: func(args map[string]any) *executeOut {
			_, out := execute(t, cs, args)
			return out
		}})
	}
	const ts = `const seen = fs.readDir("/workspace").map((e) => e.name).sort();
fs.writeTextFile(%q, "x");
return seen.join(" ")`
	const py = `import os, crucible
seen = sorted(os.listdir("/workspace"))
open(%q, "w").write("x")
crucible.result = " ".join(seen)`
	for round := range 6 {
		for _, c := range clients {
			mark := fmt.Sprintf("%s-%d", c.name, round)
			args := map[string]any{"language": "ts", "code": fmt.Sprintf(ts, mark)}
			if round%2 == 1 {
				args = map[string]any{"language": "py", "code": fmt.Sprintf(py, mark)}
			}
			if c.handle != "" {
				args["workspace"] = c.handle
			}
			out := c.call(args)
			if out == nil || out.ExitCode != 0 {
				t.Fatalf("%s: %+v", mark, out)
			}
			var seen string
			_ = json.Unmarshal(out.Result, &seen)
			if want := strings.Join(c.marks, " "); seen != want {
				t.Errorf("%s saw %q in /workspace, want its own %q", mark, seen, want)
			}
			if c.handle != "" && out.Workspace != c.handle {
				t.Errorf("%s ran in %s, not in its handle's %s", mark, out.Workspace, c.handle)
			}
			c.handle = out.Workspace
			c.marks = append(c.marks, mark)
		}
	}
	for _, c := range clients {
		dir := s.spaces.Dir(c.handle)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != len(c.marks) {
			t.Errorf("%s's workspace holds %d files, want its %d markers", c.name, len(ents), len(c.marks))
		}
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), c.name+"-") {
				t.Errorf("%s's workspace holds %s", c.name, e.Name())
			}
		}
	}
	if st := s.gens.current().views[""].poolFor("ts").Stats(); st.Warm+st.Cold != 12 {
		t.Errorf("the ts pool ran %+v, want all 12 TypeScript programs", st)
	}
}

// A workspace bound late is the program's to write, as much as its size
// (sandbox.tmp_size) and no more; what the program writes belongs on the
// host to the workspace's owner (idmapped), not to the jail's user.
func TestLateWorkspaceBounded(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	s := newServer(t, func(c *config.Config) { c.Sandbox.TmpSize = 1 << 20 })
	cs := connect(t, s)
	_, out := execute(t, cs, map[string]any{"language": "py", "code": `import crucible
open("small", "w").write("x" * 1000)
try:
    open("big", "w").write("x" * (2 << 20))
    crucible.result = "wrote 2 MiB"
except OSError as e:
    crucible.result = e.strerror`})
	if out == nil || string(out.Result) != `"No space left on device"` {
		t.Fatalf("writing past the workspace's size: %+v", out)
	}
	var st syscall.Stat_t
	dir := s.spaces.Dir(out.Workspace)
	if err := syscall.Stat(filepath.Join(dir, "small"), &st); err != nil || st.Size != 1000 {
		t.Fatalf("the host's copy of the file: %v, size %d", err, st.Size)
	}
	var ds syscall.Stat_t
	if err := syscall.Stat(dir, &ds); err != nil || st.Uid != ds.Uid || st.Uid >= 1<<31 {
		t.Errorf("the file belongs to uid %d; want the workspace's owner, %d", st.Uid, ds.Uid)
	}
}
