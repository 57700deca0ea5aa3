//go:build linux && amd64

package jail

import (
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/seccomp"
	"golang.org/x/sys/unix"
)

func TestSyscallFilter(t *testing.T) {
	prog, err := SyscallFilter().Compile()
	if err != nil {
		t.Fatal(err) // also catches a syscall listed twice: its second rule is unreachable
	}
	const (
		threadFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
			unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS |
			unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID
		forkFlags = unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID | uint64(unix.SIGCHLD)
		spawn     = unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD) // posix_spawn
	)
	enosys := seccomp.Errno(unix.ENOSYS)
	tests := []struct {
		name string
		nr   int32
		args []uint64
		want seccomp.Action
	}{
		{"read", unix.SYS_READ, nil, seccomp.Allow},
		{"write", unix.SYS_WRITE, nil, seccomp.Allow},
		{"openat", unix.SYS_OPENAT, nil, seccomp.Allow},
		{"execve", unix.SYS_EXECVE, nil, seccomp.Allow},
		{"mmap", unix.SYS_MMAP, nil, seccomp.Allow},
		{"futex", unix.SYS_FUTEX, nil, seccomp.Allow},
		{"unknown syscall", 999, nil, enosys},
		{"unlisted syscall", unix.SYS_MODIFY_LDT, nil, enosys},

		{"chmod 0755", unix.SYS_CHMOD, []uint64{0, 0o755}, seccomp.Allow},
		{"chmod setuid", unix.SYS_CHMOD, []uint64{0, 0o4755}, seccomp.Notify},
		{"fchmod setgid", unix.SYS_FCHMOD, []uint64{0, 0o2755}, seccomp.Notify},
		{"fchmodat setuid", unix.SYS_FCHMODAT, []uint64{0, 0, 0o6755}, seccomp.Notify},
		{"fchmodat2 setuid", unix.SYS_FCHMODAT2, []uint64{0, 0, 0o4700, 0}, seccomp.Notify},
		{"openat read, junk mode", unix.SYS_OPENAT, []uint64{0, 0, unix.O_RDONLY, 0o6777}, seccomp.Allow},
		{"openat create 0644", unix.SYS_OPENAT, []uint64{0, 0, unix.O_CREAT | unix.O_WRONLY, 0o644}, seccomp.Allow},
		{"openat create setuid", unix.SYS_OPENAT, []uint64{0, 0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, seccomp.Notify},
		{"openat tmpfile setgid", unix.SYS_OPENAT, []uint64{0, 0, unix.O_TMPFILE | unix.O_RDWR, 0o2755}, seccomp.Notify},
		{"open create setuid", unix.SYS_OPEN, []uint64{0, unix.O_CREAT, 0o4755}, seccomp.Notify},
		{"creat setuid", unix.SYS_CREAT, []uint64{0, 0o4755}, seccomp.Notify},
		{"mknod fifo", unix.SYS_MKNOD, []uint64{0, unix.S_IFIFO | 0o644, 0}, seccomp.Allow},
		{"mknodat setuid file", unix.SYS_MKNODAT, []uint64{0, 0, unix.S_IFREG | 0o4755, 0}, seccomp.Notify},
		{"openat2", unix.SYS_OPENAT2, nil, enosys},

		{"clone thread", unix.SYS_CLONE, []uint64{threadFlags}, seccomp.Allow},
		{"clone fork", unix.SYS_CLONE, []uint64{forkFlags}, seccomp.Allow},
		{"clone spawn", unix.SYS_CLONE, []uint64{spawn}, seccomp.Allow},
		{"clone exit signal 0x80", unix.SYS_CLONE, []uint64{0x80}, seccomp.Allow}, // not CLONE_NEWTIME here
		{"clone newuser", unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, seccomp.Notify},
		{"clone newns", unix.SYS_CLONE, []uint64{unix.CLONE_NEWNS}, seccomp.Notify},
		{"clone newpid", unix.SYS_CLONE, []uint64{unix.CLONE_NEWPID}, seccomp.Notify},
		{"clone newnet", unix.SYS_CLONE, []uint64{unix.CLONE_NEWNET}, seccomp.Notify},
		{"clone newipc", unix.SYS_CLONE, []uint64{unix.CLONE_NEWIPC}, seccomp.Notify},
		{"clone newuts", unix.SYS_CLONE, []uint64{unix.CLONE_NEWUTS}, seccomp.Notify},
		{"clone newcgroup", unix.SYS_CLONE, []uint64{unix.CLONE_NEWCGROUP}, seccomp.Notify},
		{"clone newuser high bits", unix.SYS_CLONE, []uint64{1<<32 | unix.CLONE_NEWUSER}, seccomp.Notify},
		{"clone3", unix.SYS_CLONE3, nil, enosys},

		{"ioctl TCGETS", unix.SYS_IOCTL, []uint64{0, unix.TCGETS}, seccomp.Allow},
		{"ioctl TIOCSTI", unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, seccomp.Notify},
		{"ioctl TIOCSTI high bits", unix.SYS_IOCTL, []uint64{0, 1<<32 | unix.TIOCSTI}, seccomp.Notify},
		{"ioctl TIOCLINUX", unix.SYS_IOCTL, []uint64{0, unix.TIOCLINUX}, seccomp.Notify},

		{"socket inet stream", unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, seccomp.Allow},
		{"socket inet6 dgram", unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK}, seccomp.Allow},
		{"socket unix", unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, seccomp.Allow},
		{"socket inet raw", unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP}, seccomp.Notify},
		{"socket unix raw", unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_RAW}, seccomp.Notify},
		{"socket inet packet", unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_PACKET}, seccomp.Notify},
		{"socket packet", unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_DGRAM}, seccomp.Notify},
		{"socket packet high bits", unix.SYS_SOCKET, []uint64{1<<32 | unix.AF_PACKET, unix.SOCK_DGRAM}, seccomp.Notify},
		{"socket inet high bits", unix.SYS_SOCKET, []uint64{1<<32 | unix.AF_INET, unix.SOCK_STREAM}, seccomp.Allow},
		{"socket netlink route", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE}, seccomp.Allow},
		{"socket netlink audit", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, seccomp.Notify},
		{"socket netlink audit dgram", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_AUDIT}, seccomp.Notify},
		{"socket vsock", unix.SYS_SOCKET, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, seccomp.Notify},
		{"socket alg", unix.SYS_SOCKET, []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET}, seccomp.Notify},
		{"socketpair unix", unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, seccomp.Allow},
		{"socketpair inet", unix.SYS_SOCKETPAIR, []uint64{unix.AF_INET, unix.SOCK_STREAM}, seccomp.Notify},

		{"personality query", unix.SYS_PERSONALITY, []uint64{0xffffffff}, seccomp.Allow},
		{"personality query as -1", unix.SYS_PERSONALITY, []uint64{^uint64(0)}, seccomp.Allow},
		{"personality linux", unix.SYS_PERSONALITY, []uint64{0}, seccomp.Allow},
		{"personality linux32", unix.SYS_PERSONALITY, []uint64{0x0008}, seccomp.Allow},
		{"personality READ_IMPLIES_EXEC", unix.SYS_PERSONALITY, []uint64{0x0400000}, seccomp.Notify},
		{"personality ADDR_NO_RANDOMIZE", unix.SYS_PERSONALITY, []uint64{0x0040000}, seccomp.Notify},

		{"prctl PR_SET_NAME", unix.SYS_PRCTL, []uint64{unix.PR_SET_NAME}, seccomp.Allow},
		{"prctl PR_SET_MM", unix.SYS_PRCTL, []uint64{unix.PR_SET_MM}, seccomp.Notify},
	}
	for _, d := range denied {
		tests = append(tests, struct {
			name string
			nr   int32
			args []uint64
			want seccomp.Action
		}{d.name, d.nr, nil, seccomp.Notify})
	}

	for _, tt := range tests {
		data := seccomp.Data{Nr: tt.nr, Arch: unix.AUDIT_ARCH_X86_64}
		copy(data.Args[:], tt.args)
		got, err := seccomp.Run(prog, data)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
		} else if got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}

	for _, d := range []seccomp.Data{
		{Nr: unix.SYS_READ, Arch: unix.AUDIT_ARCH_I386},                // int 0x80
		{Nr: unix.SYS_READ, Arch: unix.AUDIT_ARCH_AARCH64},             // not ours
		{Nr: unix.SYS_READ | 0x40000000, Arch: unix.AUDIT_ARCH_X86_64}, // x32
		{Nr: unix.SYS_PTRACE | 0x40000000, Arch: unix.AUDIT_ARCH_X86_64},
	} {
		if got, err := seccomp.Run(prog, d); err != nil || got != seccomp.KillProcess {
			t.Errorf("%+v: got %v, %v; want kill-process", d, got, err)
		}
	}
}

// TestSyscallNames checks that every syscall the supervisor can hear about
// has a name to report.
func TestSyscallNames(t *testing.T) {
	for _, r := range SyscallFilter().Rules {
		if r.Action == seccomp.Notify && strings.HasPrefix(syscallName(r.Syscall), "syscall ") {
			t.Errorf("syscall %d can be notified but has no name", r.Syscall)
		}
	}
	if got := syscallName(unix.SYS_PTRACE); got != "ptrace" {
		t.Errorf("got %q, want ptrace", got)
	}
}
