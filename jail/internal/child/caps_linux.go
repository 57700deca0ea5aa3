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

// dropPrivileges is the exec stage's (rootless only, see startStage): it
// leaves this thread with no capability in any set, locked securebits,
// no_new_privs and the jail's rlimits. The nested user namespace init made
// for it already made it the sandbox user.
func dropPrivileges(s *Spec) error {
	if err := setLimits(s); err != nil {
		return err
	}
	if err := lockCaps(); err != nil {
		return err
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

// setLimits sets the jail's rlimits, which are the process's: the
// command's process inherits them.
func setLimits(s *Spec) error {
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
	return nil
}

// lockCaps locks this thread's securebits and empties its bounding and
// ambient sets, which take CAP_SETPCAP: before anything else goes.
func lockCaps() error {
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
	return nil
}

// setIDs sets this thread's real, effective and saved gid and uid (-1 keeps
// one), gid first: raw syscalls, which change this thread only, where Go's
// wrappers would change every thread of the process.
func setIDs(rgid, egid, sgid, ruid, euid, suid int) error {
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(rgid), uintptr(egid), uintptr(sgid)); errno != 0 {
		return fmt.Errorf("setresgid: %w", errno)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(ruid), uintptr(euid), uintptr(suid)); errno != 0 {
		return fmt.Errorf("setresuid: %w", errno)
	}
	return nil
}

// clearCaps empties the effective, permitted and inheritable sets, but for
// keep, left effective and permitted.
func clearCaps(keep ...int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for _, c := range keep {
		data[c/32].Effective |= 1 << (c % 32)
		data[c/32].Permitted |= 1 << (c % 32)
	}
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
