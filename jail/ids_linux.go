package jail

import (
	"os"
	"sync"

	"github.com/cruciblehq/crucible/userns"
)

// idPlan is what this process may do with ids and mounts, which decides how
// its jails are built.
type idPlan struct {
	// privileged: root of our user namespace (the host's, or our own, see
	// package userns), so we may clone and attach mounts and enter a
	// jail's namespaces.
	privileged bool
	// base is our id that the jail's root maps to, with SandboxUID's at
	// base+SandboxUID; -1 when only our own id can be mapped (the command
	// then gets a nested namespace in which our id is SandboxUID).
	base int
}

// single says whether only our own id can be mapped into a jail.
func (p idPlan) single() bool { return p.base < 0 }

// jailIDs is this process's idPlan, found once.
var jailIDs = sync.OnceValue(func() idPlan {
	if os.Geteuid() != 0 {
		return idPlan{base: -1}
	}
	uids, gids, err := userns.Own()
	if err != nil {
		return idPlan{privileged: true, base: -1}
	}
	return idPlan{privileged: true, base: pickBase(uids, gids)}
})

// pickBase chooses a base (see idPlan) that the maps hold, with its
// SandboxUID, as uid and gid: hostIDBase where it is mapped (root of the
// host's namespace), else the top of a range (ours, from /etc/subuid), so
// that neither is our own id nor a system account's; -1 if none fits.
func pickBase(uids, gids userns.Map) int {
	fits := func(b uint32) bool {
		return b != 0 && uids.Mapped(b) && uids.Mapped(b+SandboxUID) && gids.Mapped(b) && gids.Mapped(b+SandboxUID)
	}
	if fits(hostIDBase) {
		return hostIDBase
	}
	for _, r := range uids {
		// The range's last id is left alone: it may be 65535, which
		// 16-bit ids read as -1.
		if r.Count >= SandboxUID+2 {
			if b := r.Inside + r.Count - SandboxUID - 2; fits(b) {
				return int(b)
			}
		}
	}
	return -1
}
