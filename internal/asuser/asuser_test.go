package asuser

import "testing"

func TestJails(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"crucible", "exec", "--", "true"}, true},
		{[]string{"/usr/bin/crucible", "serve"}, true},
		{[]string{"crucible", "doctor"}, true},
		{[]string{"crucible", "version"}, false},
		{[]string{"crucible"}, false},
		{[]string{"crucible", "--help"}, false},
		// The jail's own processes: init's stages, the engine's worker.
		{[]string{"crucible-jail-init"}, false},
		{[]string{"/crucible/bin/crucible-js", "-lang=ts", "-name=main.ts", "exec"}, false},
		// The copy in the user namespace: the original arguments follow.
		{[]string{"crucible-userns", "crucible", "exec"}, false},
	} {
		if got := Jails(c.args); got != c.want {
			t.Errorf("Jails(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
