package jail

import (
	"context"
	"slices"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// The limits a command ran into are read from the cgroup's event files,
// opened with the cgroup and read once the command has exited: a memory
// hog is reported as killed by the memory limit, a fork loop as having hit
// the pids limit; a command that hit neither reports none.
func TestLimitsHitFromCgroupEvents(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	for _, tc := range []struct {
		name, script, want string
	}{
		{"memory", `a=xxxxxxxx; while :; do a=$a$a; done`, "memory"},
		{"pids", `for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33; do sleep 60 & done`, "pids"},
		{"none", `exit 0`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec("/bin/sh", "-c", tc.script)
			s.Memory = 32 << 20
			r, err := Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			hit := slices.DeleteFunc(slices.Clone(r.LimitsHit), func(l string) bool { return l != "memory" && l != "pids" })
			if tc.want == "" && len(hit) != 0 || tc.want != "" && !slices.Contains(hit, tc.want) {
				t.Errorf("limits hit %q (exit %d); want %q", r.LimitsHit, r.ExitCode, tc.want)
			}
			if tc.want == "memory" && r.ExitCode != ExitMemory {
				t.Errorf("exit %d, want %d", r.ExitCode, ExitMemory)
			}
		})
	}
}
