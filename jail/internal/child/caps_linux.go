package child

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Securebits that make the capability state final: uid 0 gains nothing on
// execve, setuid transitions clear capabilities, and ambient capabilities can
// never be raised. Each is locked so the command cannot undo it.
const lockedSecurebits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
	1<<3 | // SECBIT_NO_SETUID_FIXUP_LOCKED (fixup stays on)
	1<<5 | // SECBIT_KEEP_CAPS_LOCKED (keep_caps stays off)
	1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED

// dropPrivileges leaves this thread with no capability in any set, locked
// securebits, no_new_privs, the sandbox uid/gid and the jail's rlimits. The
// order matters: securebits and the bounding set need CAP_SETPCAP, which the
// uid change then removes.
func dropPrivileges(s *Spec) error {
	limits := []struct {
		res int
		max uint64
	}{{unix.RLIMIT_CORE, 0}, {unix.RLIMIT_NOFILE, s.NoFile}, {unix.RLIMIT_FSIZE, s.FSize}, {unix.RLIMIT_NPROC, s.NProc}}
	for _, l := range limits {
		if l.max == 0 && l.res != unix.RLIMIT_CORE {
			continue
		}
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.max, Max: l.max}); err != nil {
			return fmt.Errorf("setrlimit(%d): %w", l.res, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedSecurebits, 0, 0, 0); err != nil {
		return fmt.Errorf("locking securebits: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP+8; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EINVAL {
			break // past the kernel's last capability
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	if !s.Rootless {
		// Raw syscalls change this thread only, which is the one that execs
		// the command; Go's wrappers would stop every thread to change all.
		for _, c := range []struct {
			name       string
			nr, a0, a1 uintptr
		}{
			{"setgroups", unix.SYS_SETGROUPS, 0, 0},
			{"setresgid", unix.SYS_SETRESGID, SandboxUID, SandboxUID},
			{"setresuid", unix.SYS_SETRESUID, SandboxUID, SandboxUID},
		} {
			if _, _, errno := unix.RawSyscall(c.nr, c.a0, c.a1, c.a1); errno != 0 {
				return fmt.Errorf("%s: %w", c.name, errno)
			}
		}
	}
	if err := clearCaps(); err != nil {
		return fmt.Errorf("clearing capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if unix.Getuid() != SandboxUID || unix.Getgid() != SandboxUID {
		return fmt.Errorf("still uid %d gid %d after dropping privileges", unix.Getuid(), unix.Getgid())
	}
	return nil
}

// clearCaps empties the effective, permitted and inheritable sets.
func clearCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// loopbackUp brings up lo in the jail's network namespace, so that a program
// can talk to itself on 127.0.0.1; nothing else exists there.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
