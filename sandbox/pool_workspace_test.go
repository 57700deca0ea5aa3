package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/lang"
)

// hostWorkspace makes a workspace directory as crucible serve's are: empty,
// owned by nobody.
func hostWorkspace(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A pool with PoolOptions.Workspaces runs each job in the workspace it
// brings, bound late into a jail built without one: the program reads and
// writes it by absolute and by relative paths, what it writes belongs to
// the directory's owner, and two workspaces taking turns through one pool
// each see only their own files. Python's runner, the engine's worker and
// Deno alike.
func TestPoolWorkspaces(t *testing.T) {
	const ts = `const name = %q;
fs.writeTextFile(name, "x");
fs.writeTextFile("/workspace/abs-" + name, "y");
return fs.readDir(".").map((e) => e.name).sort().join(" ")`
	for _, c := range []struct {
		name, language, engine, src string
	}{
		{"ts", "ts", config.EngineEmbedded, ts},
		{"ts on deno", "ts", config.EngineDeno, ts},
		{"py", "py", "", `import os, crucible
name = %q
open(name, "w").write("x")
open("/workspace/abs-" + name, "w").write("y")
crucible.result = " ".join(sorted(os.listdir(".")))`},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := PoolOptions{Size: 2, Workspaces: true}
			cfg := config.Default()
			var p *Pool
			if cfg.Runtimes.Engine = c.engine; c.language == "py" {
				p = pyPool(t, cfg, o)
			} else {
				if c.engine == config.EngineDeno {
					needDeno(t, cfg)
				}
				p = enginePool(t, cfg, o)
			}
			dirs := map[string]string{"a": hostWorkspace(t), "b": hostWorkspace(t)}
			want := map[string][]string{}
			for round := range 3 {
				for _, who := range []string{"a", "b"} {
					name := fmt.Sprintf("%s%d", who, round)
					want[who] = append(want[who], name, "abs-"+name)
					slices.Sort(want[who])
					x, err := p.Do(context.Background(), Job{Source: []byte(fmt.Sprintf(c.src, name)), File: "-", Workspace: dirs[who]})
					if err != nil || x.Error != nil || x.ExitCode != 0 {
						t.Fatalf("%s: %+v %v, stderr %q", name, x, err, x.Stderr)
					}
					if got := strings.Trim(string(x.Result), `"`); got != strings.Join(want[who], " ") {
						t.Errorf("%s's program saw %q, want %q", name, got, strings.Join(want[who], " "))
					}
				}
			}
			for who, dir := range dirs {
				if got := testenv.DirNames(t, dir); !slices.Equal(got, want[who]) {
					t.Errorf("workspace %s holds %q, want %q", who, got, want[who])
				}
				st, err := os.Stat(filepath.Join(dir, want[who][0]))
				if err != nil || st.Sys().(*syscall.Stat_t).Uid != 65534 {
					t.Errorf("workspace %s: a file the program wrote is not the directory owner's: %v", who, err)
				}
			}
			if _, err := p.Do(context.Background(), Job{Source: []byte("1"), File: "-"}); err == nil {
				t.Error("a job without a workspace ran on a pool of Workspaces")
			}
		})
	}
}

// earlyWorker is a warm worker that does its worst before its work arrives:
// it writes /workspace by path, plants a directory and a symlink there,
// holds the directory open, and keeps its working directory, then tries
// them all again once its job is there (see TestAttackWorkspaceBeforeWork).
const earlyWorker = `
(echo early > /workspace/early) 2>/dev/null && echo early-written
mkdir /workspace/d 2>/dev/null && echo early-mkdir
ln -s /tmp /workspace/l 2>/dev/null && echo early-link
exec 7</workspace
printf '\n' >&3
job=$(cat)
(echo held > /proc/self/fd/7/held) 2>/dev/null && echo held-written
(echo stale > stale) 2>/dev/null && echo stale-written
cd /workspace || exit 9
echo "$job" > job && echo job-written
printf '{"result": "%s"}' "$(ls -A | tr '\n' ' ')" >&3
`

func init() {
	// A language for tests only: a shell worker that does as it is told.
	lang.Register(lang.Language{
		Name: "shtest", Extensions: []string{".shtest"},
		Program: func([]byte, string, lang.Settings) (*lang.Program, error) {
			return nil, fmt.Errorf("shtest runs in warm jails only")
		},
		Warm: &lang.Warm{
			Program: func(lang.Settings) (*lang.Program, error) {
				return &lang.Program{Lang: "shtest", Args: []string{"/bin/sh", "-c", earlyWorker}}, nil
			},
			Input:     func(src []byte, _ string) ([]byte, error) { return src, nil },
			SaysReady: true,
		},
	})
}

// A worker that writes /workspace before its work arrives (a worker made
// to try: ours never do) reaches no workspace: /workspace is then an
// empty, read-only directory, and what it held of it (an open directory,
// its working directory) stays that directory once the workspace is bound
// over it. The workspace holds only what the job wrote.
func TestAttackWorkspaceBeforeWork(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	p, err := NewPool(config.Default(), "shtest", PoolOptions{Size: 1, Workspaces: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dir := hostWorkspace(t)
	if err := os.WriteFile(filepath.Join(dir, "kept"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		x, err := p.Do(context.Background(), Job{Source: []byte("job"), File: "-", Workspace: dir})
		if err != nil || x.ExitCode != 0 {
			t.Fatalf("%+v %v", x, err)
		}
		for _, bad := range []string{"early-", "held-", "stale-"} {
			if strings.Contains(x.Stdout, bad) {
				t.Errorf("round %d: the worker wrote before its work or past it (%s): %q", round, bad, x.Stdout)
			}
		}
		if !strings.Contains(x.Stdout, "job-written") || string(x.Result) != `"job kept "` {
			t.Errorf("round %d: stdout %q, result %s; want the job written, and only job and kept there", round, x.Stdout, x.Result)
		}
	}
	if got := testenv.DirNames(t, dir); !slices.Equal(got, []string{"job", "kept"}) {
		t.Errorf("the workspace holds %q, want job and kept", got)
	}
}
