package child

import (
	"errors"
	"fmt"
	"path"

	"golang.org/x/sys/unix"
)

var errLandlockUnavailable = errors.New("not available in this kernel")

// Landlock access rights, by the ABI version that introduced them.
const (
	llReadOnly = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llFileRW   = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llABI1     = 1<<13 - 1 // EXECUTE .. MAKE_SYM
)

// LandlockABI returns the kernel's Landlock ABI version, 0 if none.
func LandlockABI() int {
	v, err := landlockCreateRuleset(nil, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if err != nil {
		return 0
	}
	return v
}

// handledFS is every filesystem right the given ABI knows: what we do not
// handle, Landlock allows.
func handledFS(abi int) uint64 {
	h := uint64(llABI1)
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

// restrictFS confines this thread (and what it execs) to reading the jail's
// filesystem, writing only /tmp and /workspace and the harmless devices, and,
// from ABI 6, to signalling and reaching abstract sockets only inside its own
// domain (so not the jail's init).
func restrictFS() error {
	abi := LandlockABI()
	if abi < 1 {
		return errLandlockUnavailable
	}
	handled := handledFS(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	size := 8 // struct size of ABI 1..3: only the fs field
	if abi >= 4 {
		size = 16
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = 24
	}
	fd, err := landlockCreateRuleset(&attr, size, 0)
	if err != nil {
		return fmt.Errorf("creating the ruleset: %w", err)
	}
	defer unix.Close(fd)

	fileRW := uint64(llFileRW)
	if abi >= 3 {
		fileRW |= unix.LANDLOCK_ACCESS_FS_TRUNCATE // "> /dev/null" opens with O_TRUNC
	}
	rules := []struct {
		path   string
		access uint64
	}{
		{"/", llReadOnly},
		{"/proc", llReadOnly | fileRW},
		{"/tmp", handled},
		{path.Dir(workspaceDir), handled}, // see workspaceDir
	}
	for _, n := range devNodes {
		rules = append(rules, struct {
			path   string
			access uint64
		}{"/dev/" + n, fileRW})
	}
	for _, r := range rules {
		if err := landlockAddPath(fd, r.path, r.access&handled); err != nil {
			return fmt.Errorf("adding the rule for %s: %w", r.path, err)
		}
	}
	if err := landlockRestrictSelf(fd); err != nil {
		return fmt.Errorf("restricting: %w", err)
	}
	return nil
}

func landlockAddPath(ruleset int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return landlockAddRule(ruleset, &unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)})
}
