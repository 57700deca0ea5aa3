//go:build linux && amd64

package jail

import (
	"strconv"

	"github.com/cruciblehq/crucible/seccomp"
	"golang.org/x/sys/unix"
)

// SyscallFilter returns the filter every jailed program runs under.
//
// It is an allowlist, close to Docker's default profile: the syscalls in
// allowed run; those in denied, and the dangerous uses of the ones in
// conditional, go to the supervisor, which records a violation and fails them
// with EPERM. Every other syscall fails with ENOSYS, silently: that is what a
// kernel too old for it would say, so libc and language runtimes fall back to
// an older syscall, where EPERM would make them give up.
func SyscallFilter() *seccomp.Filter {
	f := &seccomp.Filter{Default: seccomp.Errno(unix.ENOSYS)}
	// The rules with argument tests come first: the kernel caches the
	// verdict for syscalls that are always allowed, but runs the program for
	// these every time, so the shorter their path the better.
	f.Rules = append(f.Rules, conditional...)
	for _, nr := range allowed {
		f.Rules = append(f.Rules, allow(nr))
	}
	for _, d := range denied {
		f.Rules = append(f.Rules, notify(d.nr))
	}
	return f
}

// newNamespaces are the clone flags that create namespaces. CLONE_NEWTIME is
// left out: its bit, 0x80, is part of the exit signal in clone's flags, and
// only unshare and clone3 can create a time namespace.
const newNamespaces = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// conditional are the syscalls allowed or denied by their arguments. For
// each, the first rule that matches wins.
var conditional = []seccomp.Rule{
	// A new namespace would let the program build a user namespace of its
	// own, where it holds every capability again.
	allow(unix.SYS_CLONE, seccomp.Arg{Index: 0, Cmp: seccomp.MaskedEq, Mask: newNamespaces}),
	notify(unix.SYS_CLONE),
	// clone3 passes its flags in memory, which the filter cannot read. ENOSYS
	// makes glibc and Go fall back to clone, whose flags it can.
	{Syscall: unix.SYS_CLONE3, Action: seccomp.Errno(unix.ENOSYS)},

	// TIOCSTI pushes input into a terminal, to be run by whatever reads it
	// once the jail is gone; TIOCLINUX can do the same through the console
	// selection. The kernel reads the request as an unsigned int, so
	// 0x100005412 is TIOCSTI too: only the low half is compared.
	notify(unix.SYS_IOCTL, intArg(1, unix.TIOCSTI)),
	notify(unix.SYS_IOCTL, intArg(1, unix.TIOCLINUX)),
	allow(unix.SYS_IOCTL),

	// Sockets: Unix, IP and routing netlink only. Raw and packet sockets
	// could forge traffic that bypasses the proxy, and the other families
	// (packet, vsock, the rest of netlink, ...) reach kernel code that
	// ordinary programs never use and exploits often do. glibc's getaddrinfo
	// and getifaddrs open NETLINK_ROUTE as SOCK_RAW, hence the order.
	allow(unix.SYS_SOCKET, intArg(0, unix.AF_NETLINK), intArg(2, unix.NETLINK_ROUTE)),
	notify(unix.SYS_SOCKET, socketType(unix.SOCK_RAW)),
	notify(unix.SYS_SOCKET, socketType(unix.SOCK_PACKET)),
	allow(unix.SYS_SOCKET, intArg(0, unix.AF_UNIX)),
	allow(unix.SYS_SOCKET, intArg(0, unix.AF_INET)),
	allow(unix.SYS_SOCKET, intArg(0, unix.AF_INET6)),
	notify(unix.SYS_SOCKET),
	allow(unix.SYS_SOCKETPAIR, intArg(0, unix.AF_UNIX)),
	notify(unix.SYS_SOCKETPAIR),

	// Personalities change how the kernel treats the process; some weaken
	// exploit mitigations (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE). Allow
	// only the query and the plain Linux ones.
	allow(unix.SYS_PERSONALITY, intArg(0, 0x0000)),     // PER_LINUX
	allow(unix.SYS_PERSONALITY, intArg(0, 0x0008)),     // PER_LINUX32, for linux32 and setarch i686
	allow(unix.SYS_PERSONALITY, intArg(0, 0xffffffff)), // query
	notify(unix.SYS_PERSONALITY),

	// prctl is safe once no_new_privs is set and the capabilities are gone,
	// except PR_SET_MM, which rewrites the process's memory map layout.
	notify(unix.SYS_PRCTL, intArg(0, unix.PR_SET_MM)),
	allow(unix.SYS_PRCTL),

	// Setuid and setgid bits. A file the jail leaves in a host workspace
	// would keep them outside the jail's nosuid mounts, and run as its host
	// owner: root, when root's directory is the workspace (it is idmapped to
	// the sandbox user). No mode the jail sets or creates may carry them.
	// Device nodes need CAP_MKNOD, which nothing in the jail has: mknod is
	// for FIFOs.
	allow(unix.SYS_CHMOD, noSetID(1)),
	allow(unix.SYS_FCHMOD, noSetID(1)),
	allow(unix.SYS_FCHMODAT, noSetID(2)),
	allow(unix.SYS_FCHMODAT2, noSetID(2)),
	allow(unix.SYS_CREAT, noSetID(1)),
	allow(unix.SYS_MKNOD, noSetID(1)),
	allow(unix.SYS_MKNODAT, noSetID(2)),
	// open's mode counts only when it creates a file; otherwise the
	// register may hold anything.
	allow(unix.SYS_OPEN, noCreate(1)),
	allow(unix.SYS_OPEN, noSetID(2)),
	allow(unix.SYS_OPENAT, noCreate(2)),
	allow(unix.SYS_OPENAT, noSetID(3)),
	notify(unix.SYS_CHMOD), notify(unix.SYS_FCHMOD), notify(unix.SYS_FCHMODAT), notify(unix.SYS_FCHMODAT2),
	notify(unix.SYS_CREAT), notify(unix.SYS_MKNOD), notify(unix.SYS_MKNODAT),
	notify(unix.SYS_OPEN), notify(unix.SYS_OPENAT),
	// openat2 passes its mode in memory, which the filter cannot read.
	// ENOSYS makes callers fall back to openat.
	{Syscall: unix.SYS_OPENAT2, Action: seccomp.Errno(unix.ENOSYS)},
}

// allowed are the syscalls that glibc, musl, Go, Python, Node, bash,
// coreutils and curl need, whatever their arguments.
var allowed = []int32{
	// Files and directories. The mount namespace and Landlock decide which
	// paths exist and which may be written.
	unix.SYS_READ, unix.SYS_WRITE, unix.SYS_READV, unix.SYS_WRITEV,
	unix.SYS_PREAD64, unix.SYS_PWRITE64, unix.SYS_PREADV, unix.SYS_PWRITEV,
	unix.SYS_PREADV2, unix.SYS_PWRITEV2, unix.SYS_LSEEK,
	unix.SYS_CLOSE, unix.SYS_CLOSE_RANGE,
	unix.SYS_DUP, unix.SYS_DUP2, unix.SYS_DUP3, unix.SYS_FCNTL, unix.SYS_FLOCK,
	unix.SYS_STAT, unix.SYS_FSTAT, unix.SYS_LSTAT, unix.SYS_NEWFSTATAT, unix.SYS_STATX,
	unix.SYS_STATFS, unix.SYS_FSTATFS,
	unix.SYS_ACCESS, unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2,
	unix.SYS_GETDENTS, unix.SYS_GETDENTS64, unix.SYS_GETCWD, unix.SYS_CHDIR, unix.SYS_FCHDIR,
	unix.SYS_MKDIR, unix.SYS_MKDIRAT, unix.SYS_RMDIR,
	unix.SYS_RENAME, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2,
	unix.SYS_LINK, unix.SYS_LINKAT, unix.SYS_UNLINK, unix.SYS_UNLINKAT,
	unix.SYS_SYMLINK, unix.SYS_SYMLINKAT, unix.SYS_READLINK, unix.SYS_READLINKAT,
	unix.SYS_CHOWN, unix.SYS_FCHOWN, unix.SYS_LCHOWN, unix.SYS_FCHOWNAT, unix.SYS_UMASK,
	unix.SYS_TRUNCATE, unix.SYS_FTRUNCATE, unix.SYS_FALLOCATE,
	unix.SYS_FSYNC, unix.SYS_FDATASYNC, unix.SYS_SYNC, unix.SYS_SYNCFS, unix.SYS_SYNC_FILE_RANGE,
	unix.SYS_FADVISE64, unix.SYS_READAHEAD,
	unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_UTIMENSAT, unix.SYS_FUTIMESAT,
	unix.SYS_SENDFILE, unix.SYS_SPLICE, unix.SYS_TEE, unix.SYS_VMSPLICE, unix.SYS_COPY_FILE_RANGE,
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR,
	unix.SYS_GETXATTR, unix.SYS_LGETXATTR, unix.SYS_FGETXATTR,
	unix.SYS_LISTXATTR, unix.SYS_LLISTXATTR, unix.SYS_FLISTXATTR,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR,
	unix.SYS_INOTIFY_INIT, unix.SYS_INOTIFY_INIT1, unix.SYS_INOTIFY_ADD_WATCH, unix.SYS_INOTIFY_RM_WATCH,
	unix.SYS_MEMFD_CREATE,

	// Memory.
	unix.SYS_BRK, unix.SYS_MMAP, unix.SYS_MUNMAP, unix.SYS_MREMAP, unix.SYS_MPROTECT,
	unix.SYS_MADVISE, unix.SYS_MSYNC, unix.SYS_MINCORE,
	unix.SYS_MLOCK, unix.SYS_MLOCK2, unix.SYS_MUNLOCK, unix.SYS_MLOCKALL, unix.SYS_MUNLOCKALL,
	unix.SYS_PKEY_ALLOC, unix.SYS_PKEY_FREE, unix.SYS_PKEY_MPROTECT,
	unix.SYS_MEMBARRIER, unix.SYS_MAP_SHADOW_STACK, unix.SYS_MSEAL,

	// Processes and threads (clone is in conditional). The pid namespace
	// bounds what kill and pidfds can reach.
	unix.SYS_FORK, unix.SYS_VFORK, unix.SYS_EXECVE, unix.SYS_EXECVEAT,
	unix.SYS_EXIT, unix.SYS_EXIT_GROUP, unix.SYS_WAIT4, unix.SYS_WAITID,
	unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_TGKILL, unix.SYS_PIDFD_OPEN, unix.SYS_PIDFD_SEND_SIGNAL,
	unix.SYS_GETPID, unix.SYS_GETPPID, unix.SYS_GETTID,
	unix.SYS_GETPGID, unix.SYS_SETPGID, unix.SYS_GETPGRP, unix.SYS_GETSID, unix.SYS_SETSID,
	unix.SYS_SET_TID_ADDRESS, unix.SYS_SET_ROBUST_LIST, unix.SYS_GET_ROBUST_LIST,
	unix.SYS_RSEQ, unix.SYS_ARCH_PRCTL,
	unix.SYS_GETPRIORITY, unix.SYS_SETPRIORITY, unix.SYS_IOPRIO_GET, unix.SYS_IOPRIO_SET,
	unix.SYS_SCHED_YIELD, unix.SYS_SCHED_GETAFFINITY, unix.SYS_SCHED_SETAFFINITY,
	unix.SYS_SCHED_GETPARAM, unix.SYS_SCHED_SETPARAM,
	unix.SYS_SCHED_GETSCHEDULER, unix.SYS_SCHED_SETSCHEDULER,
	unix.SYS_SCHED_GETATTR, unix.SYS_SCHED_SETATTR,
	unix.SYS_SCHED_GET_PRIORITY_MAX, unix.SYS_SCHED_GET_PRIORITY_MIN, unix.SYS_SCHED_RR_GET_INTERVAL,
	unix.SYS_GETRLIMIT, unix.SYS_SETRLIMIT, unix.SYS_PRLIMIT64, unix.SYS_GETRUSAGE, unix.SYS_TIMES,
	unix.SYS_GETCPU,
	// These only ever take privileges away.
	unix.SYS_SECCOMP, unix.SYS_LANDLOCK_CREATE_RULESET, unix.SYS_LANDLOCK_ADD_RULE, unix.SYS_LANDLOCK_RESTRICT_SELF,

	// Identity. Without capabilities these can only shuffle the ids the
	// process already has.
	unix.SYS_GETUID, unix.SYS_GETEUID, unix.SYS_GETGID, unix.SYS_GETEGID,
	unix.SYS_GETRESUID, unix.SYS_GETRESGID, unix.SYS_GETGROUPS,
	unix.SYS_SETUID, unix.SYS_SETGID, unix.SYS_SETREUID, unix.SYS_SETREGID,
	unix.SYS_SETRESUID, unix.SYS_SETRESGID, unix.SYS_SETGROUPS, unix.SYS_SETFSUID, unix.SYS_SETFSGID,
	unix.SYS_CAPGET, unix.SYS_CAPSET,

	// Signals.
	unix.SYS_RT_SIGACTION, unix.SYS_RT_SIGPROCMASK, unix.SYS_RT_SIGRETURN, unix.SYS_RT_SIGPENDING,
	unix.SYS_RT_SIGTIMEDWAIT, unix.SYS_RT_SIGQUEUEINFO, unix.SYS_RT_TGSIGQUEUEINFO, unix.SYS_RT_SIGSUSPEND,
	unix.SYS_SIGALTSTACK, unix.SYS_SIGNALFD, unix.SYS_SIGNALFD4, unix.SYS_PAUSE, unix.SYS_RESTART_SYSCALL,

	// Time and timers (reading the clock; setting it is denied).
	unix.SYS_CLOCK_GETTIME, unix.SYS_CLOCK_GETRES, unix.SYS_GETTIMEOFDAY, unix.SYS_TIME,
	unix.SYS_NANOSLEEP, unix.SYS_CLOCK_NANOSLEEP,
	unix.SYS_ALARM, unix.SYS_GETITIMER, unix.SYS_SETITIMER,
	unix.SYS_TIMER_CREATE, unix.SYS_TIMER_SETTIME, unix.SYS_TIMER_GETTIME,
	unix.SYS_TIMER_GETOVERRUN, unix.SYS_TIMER_DELETE,
	unix.SYS_TIMERFD_CREATE, unix.SYS_TIMERFD_SETTIME, unix.SYS_TIMERFD_GETTIME,

	// Waiting and events.
	unix.SYS_POLL, unix.SYS_PPOLL, unix.SYS_SELECT, unix.SYS_PSELECT6,
	unix.SYS_EPOLL_CREATE, unix.SYS_EPOLL_CREATE1, unix.SYS_EPOLL_CTL,
	unix.SYS_EPOLL_WAIT, unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2,
	unix.SYS_EVENTFD, unix.SYS_EVENTFD2, unix.SYS_PIPE, unix.SYS_PIPE2,
	unix.SYS_FUTEX, unix.SYS_FUTEX_WAITV, unix.SYS_FUTEX_WAKE, unix.SYS_FUTEX_WAIT, unix.SYS_FUTEX_REQUEUE,
	// Linux AIO, unlike io_uring, is a small and old interface.
	unix.SYS_IO_SETUP, unix.SYS_IO_DESTROY, unix.SYS_IO_SUBMIT, unix.SYS_IO_CANCEL,
	unix.SYS_IO_GETEVENTS, unix.SYS_IO_PGETEVENTS,

	// Networking, on the sockets conditional lets through. The network
	// namespace holds only what the jail put there.
	unix.SYS_CONNECT, unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_BIND, unix.SYS_LISTEN,
	unix.SYS_SHUTDOWN, unix.SYS_GETSOCKNAME, unix.SYS_GETPEERNAME,
	unix.SYS_SETSOCKOPT, unix.SYS_GETSOCKOPT,
	unix.SYS_SENDTO, unix.SYS_RECVFROM, unix.SYS_SENDMSG, unix.SYS_RECVMSG,
	unix.SYS_SENDMMSG, unix.SYS_RECVMMSG,

	// System V IPC and POSIX message queues, confined by the IPC namespace.
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT,
	unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL,
	unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
	unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK, unix.SYS_MQ_TIMEDSEND, unix.SYS_MQ_TIMEDRECEIVE,
	unix.SYS_MQ_NOTIFY, unix.SYS_MQ_GETSETATTR,

	// System information.
	unix.SYS_UNAME, unix.SYS_SYSINFO, unix.SYS_GETRANDOM,
}

// denied are the syscalls no jailed program may make: each is a way out of
// the jail, or into kernel code with a long record of privilege escalations.
// Most would fail anyway without capabilities; the filter makes sure they
// never reach that code, and the supervisor records every attempt.
var denied = []struct {
	nr   int32
	name string
}{
	// The filesystem view is the jail's to build.
	{unix.SYS_MOUNT, "mount"},
	{unix.SYS_UMOUNT2, "umount2"},
	{unix.SYS_PIVOT_ROOT, "pivot_root"},
	{unix.SYS_CHROOT, "chroot"},
	{unix.SYS_MOVE_MOUNT, "move_mount"},
	{unix.SYS_OPEN_TREE, "open_tree"},
	{unix.SYS_OPEN_TREE_ATTR, "open_tree_attr"},
	{unix.SYS_FSOPEN, "fsopen"},
	{unix.SYS_FSCONFIG, "fsconfig"},
	{unix.SYS_FSMOUNT, "fsmount"},
	{unix.SYS_FSPICK, "fspick"},
	{unix.SYS_MOUNT_SETATTR, "mount_setattr"},

	// Namespaces: entering another, or making new ones (see clone).
	{unix.SYS_UNSHARE, "unshare"},
	{unix.SYS_SETNS, "setns"},

	// Other processes' memory and files.
	{unix.SYS_PTRACE, "ptrace"},
	{unix.SYS_PROCESS_VM_READV, "process_vm_readv"},
	{unix.SYS_PROCESS_VM_WRITEV, "process_vm_writev"},
	{unix.SYS_PROCESS_MADVISE, "process_madvise"},
	{unix.SYS_PIDFD_GETFD, "pidfd_getfd"},
	{unix.SYS_KCMP, "kcmp"}, // compares kernel pointers: an ASLR oracle

	// Programmable or racy kernel interfaces, favourites of exploits.
	{unix.SYS_BPF, "bpf"},
	{unix.SYS_PERF_EVENT_OPEN, "perf_event_open"},
	{unix.SYS_USERFAULTFD, "userfaultfd"}, // stalls the kernel mid-copy to win races
	{unix.SYS_IO_URING_SETUP, "io_uring_setup"},
	{unix.SYS_IO_URING_ENTER, "io_uring_enter"},
	{unix.SYS_IO_URING_REGISTER, "io_uring_register"},

	// The kernel keyring is not namespaced.
	{unix.SYS_KEYCTL, "keyctl"},
	{unix.SYS_ADD_KEY, "add_key"},
	{unix.SYS_REQUEST_KEY, "request_key"},

	// Loading code into the kernel, or replacing it.
	{unix.SYS_INIT_MODULE, "init_module"},
	{unix.SYS_FINIT_MODULE, "finit_module"},
	{unix.SYS_DELETE_MODULE, "delete_module"},
	{unix.SYS_KEXEC_LOAD, "kexec_load"},
	{unix.SYS_KEXEC_FILE_LOAD, "kexec_file_load"},

	// File handles skip the path walk that mounts and Landlock confine.
	{unix.SYS_OPEN_BY_HANDLE_AT, "open_by_handle_at"},
	{unix.SYS_NAME_TO_HANDLE_AT, "name_to_handle_at"},

	// Host-wide state: clock, swap, power, accounting, kernel log, quotas,
	// names, terminals.
	{unix.SYS_SETTIMEOFDAY, "settimeofday"},
	{unix.SYS_CLOCK_SETTIME, "clock_settime"},
	{unix.SYS_CLOCK_ADJTIME, "clock_adjtime"},
	{unix.SYS_ADJTIMEX, "adjtimex"},
	{unix.SYS_SWAPON, "swapon"},
	{unix.SYS_SWAPOFF, "swapoff"},
	{unix.SYS_REBOOT, "reboot"},
	{unix.SYS_ACCT, "acct"},
	{unix.SYS_SYSLOG, "syslog"},
	{unix.SYS_QUOTACTL, "quotactl"},
	{unix.SYS_QUOTACTL_FD, "quotactl_fd"},
	{unix.SYS_SETHOSTNAME, "sethostname"},
	{unix.SYS_SETDOMAINNAME, "setdomainname"},
	{unix.SYS_VHANGUP, "vhangup"},

	// Raw I/O ports.
	{unix.SYS_IOPL, "iopl"},
	{unix.SYS_IOPERM, "ioperm"},

	// Watching the whole filesystem; obsolete interfaces.
	{unix.SYS_FANOTIFY_INIT, "fanotify_init"},
	{unix.SYS_LOOKUP_DCOOKIE, "lookup_dcookie"},
	{unix.SYS_NFSSERVCTL, "nfsservctl"},
}

// syscallName names a syscall the filter can send to the supervisor, for its
// violation reports.
func syscallName(nr int32) string {
	for _, d := range denied {
		if d.nr == nr {
			return d.name
		}
	}
	switch nr {
	case unix.SYS_CLONE:
		return "clone"
	case unix.SYS_IOCTL:
		return "ioctl"
	case unix.SYS_SOCKET:
		return "socket"
	case unix.SYS_SOCKETPAIR:
		return "socketpair"
	case unix.SYS_PERSONALITY:
		return "personality"
	case unix.SYS_PRCTL:
		return "prctl"
	case unix.SYS_CHMOD, unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2:
		return "chmod" // all of them, for one violation a kind: the model tried setuid
	case unix.SYS_OPEN, unix.SYS_OPENAT, unix.SYS_CREAT:
		return "open"
	case unix.SYS_MKNOD, unix.SYS_MKNODAT:
		return "mknod"
	}
	return "syscall " + strconv.Itoa(int(nr))
}

func allow(nr int32, args ...seccomp.Arg) seccomp.Rule {
	return seccomp.Rule{Syscall: nr, Args: args, Action: seccomp.Allow}
}

func notify(nr int32, args ...seccomp.Arg) seccomp.Rule {
	return seccomp.Rule{Syscall: nr, Args: args, Action: seccomp.Notify}
}

// intArg matches an argument the kernel declares as int or unsigned int. The
// kernel ignores the register's high half for those, so the rule must too:
// otherwise setting a high bit would slip past a deny rule.
func intArg(index int, value uint64) seccomp.Arg {
	return seccomp.Arg{Index: index, Cmp: seccomp.MaskedEq, Mask: 0xffffffff, Value: value}
}

// noSetID matches a mode argument without the setuid and setgid bits.
func noSetID(index int) seccomp.Arg {
	return seccomp.Arg{Index: index, Cmp: seccomp.MaskedEq, Mask: unix.S_ISUID | unix.S_ISGID, Value: 0}
}

// noCreate matches open flags that create no file.
func noCreate(index int) seccomp.Arg {
	return seccomp.Arg{Index: index, Cmp: seccomp.MaskedEq, Mask: unix.O_CREAT | unix.O_TMPFILE, Value: 0}
}

// socketType matches socket's type argument, whose low four bits are the
// type and the rest SOCK_NONBLOCK and SOCK_CLOEXEC.
func socketType(typ uint64) seccomp.Arg {
	return seccomp.Arg{Index: 1, Cmp: seccomp.MaskedEq, Mask: 0xf, Value: typ}
}
