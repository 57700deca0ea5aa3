package jail

import (
	"testing"

	"github.com/cruciblehq/crucible/userns"
)

func TestPickBase(t *testing.T) {
	host := userns.Map{{Inside: 0, Outside: 0, Count: 1<<32 - 1}}
	own := userns.Map{{Inside: 0, Outside: 1000, Count: 1}, {Inside: 1, Outside: 100000, Count: 65536}}
	alone := userns.Map{{Inside: 0, Outside: 1000, Count: 1}}
	small := userns.Map{{Inside: 0, Outside: 1000, Count: 1}, {Inside: 1, Outside: 100000, Count: SandboxUID}}
	container := userns.Map{{Inside: 0, Outside: 100000, Count: 65536}}
	for _, c := range []struct {
		name       string
		uids, gids userns.Map
		want       int
	}{
		{"root of the host", host, host, hostIDBase},
		{"our own namespace with a range", own, own, 65536 - SandboxUID - 1},
		{"our own namespace with our id alone", alone, alone, -1},
		{"a range too small for the sandbox user", small, small, -1},
		{"gids without the range", own, alone, -1},
		{"root of a container", container, container, 65536 - SandboxUID - 2},
	} {
		got := pickBase(c.uids, c.gids)
		if got != c.want {
			t.Errorf("%s: base %d, want %d", c.name, got, c.want)
		}
		if got > 0 && !c.uids.Mapped(uint32(got+SandboxUID)) {
			t.Errorf("%s: base %d leaves the sandbox user unmapped", c.name, got)
		}
	}
	if userns.MinRange < SandboxUID+2 {
		t.Errorf("userns.MinRange %d is too small for a jail's two ids", userns.MinRange)
	}
}
