package jail

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// Spec.Skills is read-only at /skills: the command reads the files, and its
// attempts to change them fail.
func TestSkills(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.ts"), []byte("export const hi = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec("/bin/sh", "-c", `cat /skills/greet.ts; echo x > /skills/new.ts && echo wrote; rm /skills/greet.ts && echo removed; ls /skills; grep ' /skills ' /proc/self/mounts | cut -d' ' -f4 | cut -d, -f1`)
	s.Skills = dir
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
