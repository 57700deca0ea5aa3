package jail

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// A Layer is read-only at its Path: the command reads the files, and its
// attempts to change them fail.
func TestSkills(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.ts"), []byte("export const hi = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec("/bin/sh", "-c", `cat /skills/greet.ts; echo x > /skills/new.ts && echo wrote; rm /skills/greet.ts && echo removed; ls /skills; grep ' /skills ' /proc/self/mounts | cut -d' ' -f4 | cut -d, -f1`)
	s.Layers = []Layer{skills(dir)}
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// The writes would fail anyway (Landlock, permissions): the mount's
	// own flag says it is read-only.
	if !bytes.Contains(out.Bytes(), []byte("export const hi = 1")) || bytes.Contains(out.Bytes(), []byte("wrote")) || bytes.Contains(out.Bytes(), []byte("removed")) || !bytes.HasSuffix(out.Bytes(), []byte("\nro\n")) {
		t.Errorf("output:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "greet.ts")); err != nil {
		t.Errorf("the skill is gone from the host: %v", err)
	}
}

// savedScript lists /skills, reads each layer's file, tries to change the
// overlay, and looks for the saved skills anywhere else.
const savedScript = `
ls /skills | sed 's/^/ls: /'
cat /skills/greet.ts /skills/mine.ts
(echo x > /skills/mine.ts) 2>/dev/null && echo wrote
(echo x > /skills/new.ts) 2>/dev/null && echo created
rm /skills/greet.ts 2>/dev/null && echo removed
ls -A /run/skills | sed 's/^/run: /'
awk '$5 == "/run/skills"' /proc/self/mountinfo | wc -l | sed 's/^/mounts: /'
`

// twoLayers makes an operator's skills directory and a client's saved
// skills: each has a skill of its own, and both have same.ts.
func twoLayers(t *testing.T) (operator, saved string) {
	t.Helper()
	operator, saved = t.TempDir(), t.TempDir()
	for p, data := range map[string]string{
		filepath.Join(operator, "greet.ts"): "operator's greet\n",
		filepath.Join(operator, "same.ts"):  "operator's same\n",
		filepath.Join(saved, "mine.ts"):     "client's mine\n",
		filepath.Join(saved, "same.ts"):     "client's same\n",
	} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return operator, saved
}

// checkLayers checks savedScript's output: both layers at /skills, the
// saved one on top, nothing writable, and the saved skills nowhere else.
func checkLayers(t *testing.T, got, operator string) {
	t.Helper()
	for _, want := range []string{"ls: greet.ts\nls: mine.ts\nls: same.ts\n", "operator's greet\nclient's mine\n", "mounts: 0\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"wrote", "created", "removed", "run: "} {
		if strings.Contains(got, bad) {
			t.Errorf("output has %q:\n%s", bad, got)
		}
	}
	if _, err := os.Stat(filepath.Join(operator, "greet.ts")); err != nil {
		t.Errorf("the operator's skill is gone from the host: %v", err)
	}
}

// An Over lies over the Layer at its Path: the command sees both, the
// Over's files on top, and can change neither; the Over appears nowhere
// else in the jail.
func TestSavedSkills(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	operator, saved := twoLayers(t)
	s := spec("/bin/sh", "-c", savedScript+"cat /skills/same.ts")
	s.Layers, s.Over = []Layer{skills(operator)}, []Layer{savedSkills(saved)}
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	checkLayers(t, out.String(), operator)
	if !strings.HasSuffix(out.String(), "client's same\n") {
		t.Errorf("same.ts is not the client's:\n%s", out.String())
	}

	s = spec("/bin/true")
	s.Over = []Layer{savedSkills(saved)}
	if _, err := Run(context.Background(), s); err == nil {
		t.Error("an Over without its Layer ran")
	}
}

// A Jail.Bind with an Over lays it over its Layer with the workspace;
// before it, the Layer is alone.
func TestLateSavedSkills(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	operator, saved := twoLayers(t)
	s := spec("/bin/sh", "-c", "ls /skills | sed 's/^/early: /'; echo waiting; read job\n"+savedScript)
	s.Layers = []Layer{skills(operator)}
	var out syncBuffer
	s.StdinPipe, s.Stdout, s.Stderr = true, &out, &out
	s.Late = true
	j, done := startAsync(t, s)
	j.Begin()
	w := stdinOf(t, j)
	out.waitFor(t, "waiting\n")
	if err := j.Bind(t.TempDir(), savedSkills(saved)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := <-done
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("%v %+v output %q", r.err, r.res, out.String())
	}
	got := out.String()
	if strings.Contains(got, "early: mine.ts") || !strings.Contains(got, "early: greet.ts") {
		t.Errorf("before the Bind, /skills was not the operator's alone:\n%s", got)
	}
	checkLayers(t, got, operator)
}

// skills and savedSkills are an operator's skills at /skills, and a
// client's saved skills over them, as package sandbox lays them.
func skills(dir string) Layer { return Layer{Dir: dir, Path: "/skills", What: "the skills directory"} }

func savedSkills(dir string) Layer { return Layer{Dir: dir, Path: "/skills", What: "the saved skills"} }
