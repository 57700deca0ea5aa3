package userns

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// MinRange is the fewest subordinate ids a user's range must hold to be
// used: the jail's root and its command's uid (jail.SandboxUID, 1000)
// above it, both distinct from the user's own and from the range's last.
const MinRange = 1002

// argCopy is os.Args[0] of this program run again by Enter inside the new
// namespace; the original arguments follow it.
const argCopy = "crucible-userns"

// The copy's descriptors: the parent writes one byte on fdGo once the id
// maps are written; the copy answers "ok", or why not, on fdStatus.
const (
	fdGo     = 3
	fdStatus = 4
)

// Enter runs this program again, with the same arguments, in a new user
// namespace (and mount namespace) in which it is root, when it runs as a
// user other than root, and returns the copy's exit code for the caller to
// exit with; signals that would end this process are passed on to the
// copy. In the copy (and as root, or when want is false: the command
// builds no jail) it returns -1, and the caller goes on.
//
// If the namespace cannot be made (user namespaces off, or confined by an
// AppArmor profile that lets no one holding one mount), it returns -1 and
// the reason, and the caller goes on as the user: jails then refuse what
// needs the namespace, naming it.
//
// Only its first call that enters, settles a copy, or fails to do either
// acts: later ones return its answer again. That lets an early init enter
// (package internal/asuser), and the command line's call, which comes
// after, go on where it left off.
func Enter(want bool) (code int, err error) {
	if entered.done {
		return entered.code, entered.err
	}
	if len(os.Args) > 1 && os.Args[0] == argCopy {
		os.Args = os.Args[1:]
		if err := settle(); err != nil {
			os.Exit(125) // the parent reports err, which it has
		}
		entered.done, entered.code = true, -1
		return -1, nil
	}
	if !want || os.Geteuid() == 0 {
		return -1, nil // a later call may want it
	}
	code, err = runCopy()
	if err != nil {
		mode.Why = err.Error()
	}
	entered.done, entered.code, entered.err = true, code, err
	return code, err
}

// entered is the answer of Enter's call that acted.
var entered struct {
	done bool
	code int
	err  error
}

// settle is the copy's side: wait for the id maps, then make the namespace
// ours, and say whether that worked.
func settle() error {
	status := os.NewFile(fdStatus, "status")
	defer status.Close()
	goFile := os.NewFile(fdGo, "go")
	var b [1]byte
	n, _ := goFile.Read(b[:])
	goFile.Close()
	if n != 1 {
		return errors.New("the parent gave up") // and says why itself
	}
	err := own()
	if err != nil {
		_, _ = io.WriteString(status, err.Error())
		return err
	}
	uids, _, _ := Own()
	mode.Entered, mode.Range = true, len(uids) > 1
	if !mode.Range {
		mode.Why = os.Getenv(envWhy)
	}
	_ = os.Unsetenv(envWhy)
	_, err = io.WriteString(status, "ok")
	return err
}

// envWhy passes to the copy why its namespace has no range.
const envWhy = "CRUCIBLE_USERNS_NORANGE"

// own makes the new namespaces ours: root, with no supplementary group
// where the kernel lets us drop them, and mounts that propagate nowhere.
func own() error {
	if os.Geteuid() != 0 {
		return errors.New("the user namespace has no id map")
	}
	if b, err := os.ReadFile("/proc/self/setgroups"); err == nil && strings.TrimSpace(string(b)) == "allow" {
		// The user's groups (docker's, say) stay the user's: gone here
		// and in every jail below. syscall's, which every thread of the
		// process applies (a thread that kept them could fork a child).
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("dropping the supplementary groups: %w", err)
		}
	}
	// This is also the test of capabilities that an AppArmor profile
	// like Ubuntu's unprivileged_userns takes away.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mounting in a user namespace of our own: %w", err)
	}
	return nil
}

// runCopy starts the copy in its namespaces, waits for it, and returns its
// exit code. With a subordinate range it maps that range through
// newuidmap/newgidmap; if that fails, it tries again with the user's own
// id alone.
func runCopy() (int, error) {
	sub, why := subordinates()
	if sub != nil {
		code, err := startCopy(sub, "")
		if err == nil {
			return code, nil
		}
		why = err.Error()
	}
	return startCopy(nil, why)
}

// ranges is a user's uid and gid ranges and the helpers that map them.
type ranges struct {
	uid, gid             Subordinate
	newuidmap, newgidmap string
}

// subordinates finds this user's ranges and the helpers, or says why not.
func subordinates() (*ranges, string) {
	var r ranges
	for _, h := range []struct {
		name string
		path *string
	}{{"newuidmap", &r.newuidmap}, {"newgidmap", &r.newgidmap}} {
		p := lookPath(h.name)
		if p == "" {
			return nil, h.name + " is not installed (package uidmap)"
		}
		*h.path = p
	}
	uid, gid := os.Getuid(), os.Getgid()
	name, group := nameOf("/etc/passwd", uid), nameOf("/etc/group", gid)
	var ok bool
	subuid, _ := os.ReadFile("/etc/subuid")
	subgid, _ := os.ReadFile("/etc/subgid")
	if r.uid, ok = subordinate(subuid, name, uid, MinRange); !ok {
		return nil, errNoRange.Error()
	}
	// newgidmap checks the user's name and uid, not the group's.
	if r.gid, ok = subordinate(subgid, name, uid, MinRange); !ok {
		if r.gid, ok = subordinate(subgid, group, gid, MinRange); !ok {
			return nil, errNoRange.Error()
		}
	}
	return &r, ""
}

// startCopy runs the copy: with sub's ranges mapped, or with only the
// user's own ids when sub is nil (why says why not).
func startCopy(sub *ranges, why string) (int, error) {
	goR, goW, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	defer goW.Close()
	stR, stW, err := os.Pipe()
	if err != nil {
		goR.Close()
		return -1, err
	}
	defer stR.Close()
	// os.StartProcess, not os/exec, which would bring path/filepath's
	// late init before package asuser's.
	attr := &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, goR, stW}, // fdGo, fdStatus
		Sys: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			// SIGTERM, not SIGKILL: the copy ends its jails and
			// workspaces as it would for the user's Ctrl-C.
			Pdeathsig: syscall.SIGTERM,
		},
	}
	if sub != nil {
		// The maps are written by the helpers once the copy runs, after
		// its execve: keep its capabilities across that execve (its uid
		// is unmapped then, which would drop them).
		attr.Sys.AmbientCaps = boundingCaps()
	} else {
		attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.Env = append(os.Environ(), envWhy+"="+why)
	}
	proc, err := os.StartProcess("/proc/self/exe", append([]string{argCopy}, os.Args...), attr)
	goR.Close()
	stW.Close()
	if err != nil {
		return -1, fmt.Errorf("creating a user namespace: %w", err)
	}
	fail := func(err error) (int, error) {
		goW.Close()
		_ = proc.Kill()
		_, _ = proc.Wait()
		return -1, err
	}
	if sub != nil {
		if err := sub.write(proc.Pid); err != nil {
			return fail(err)
		}
	}
	if _, err := goW.Write([]byte{1}); err != nil {
		return fail(fmt.Errorf("starting the user namespace: %w", err))
	}
	goW.Close()
	status, _ := io.ReadAll(io.LimitReader(stR, 4096))
	if string(status) != "ok" {
		_, _ = proc.Wait()
		if len(status) == 0 {
			status = []byte("the copy in the user namespace ended at once")
		}
		return -1, errors.New(strings.ToValidUTF8(string(status), "?"))
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = proc.Signal(s)
			case <-done:
				return
			}
		}
	}()
	st, err := proc.Wait()
	if err != nil {
		return 125, nil
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}

// write maps the ranges into the namespace of process pid: 0 is the user,
// 1 and up the range.
func (r *ranges) write(pid int) error {
	for _, m := range []struct {
		helper string
		own    int
		sub    Subordinate
	}{{r.newuidmap, os.Getuid(), r.uid}, {r.newgidmap, os.Getgid(), r.gid}} {
		args := []string{strconv.Itoa(pid), "0", strconv.Itoa(m.own), "1", "1", strconv.FormatUint(uint64(m.sub.Start), 10), strconv.FormatUint(uint64(m.sub.Count), 10)}
		if msg := runHelper(m.helper, args); msg != "" {
			return fmt.Errorf("mapping the subordinate ids: %s", msg)
		}
	}
	return nil
}

// runHelper runs the program at path with args, and returns "" if it
// succeeds, else what it printed, or why it did not run.
func runHelper(path string, args []string) string {
	r, w, err := os.Pipe()
	if err != nil {
		return err.Error()
	}
	defer r.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		w.Close()
		return err.Error()
	}
	defer null.Close()
	proc, err := os.StartProcess(path, append([]string{path}, args...), &os.ProcAttr{Files: []*os.File{null, w, w}})
	w.Close()
	if err != nil {
		return err.Error()
	}
	out, _ := io.ReadAll(io.LimitReader(r, 4096))
	st, err := proc.Wait()
	switch {
	case err != nil:
		return err.Error()
	case st.Success():
		return ""
	case len(bytes.TrimSpace(out)) > 0:
		return strings.ToValidUTF8(string(bytes.TrimSpace(out)), "?")
	}
	return st.String()
}

// lookPath finds the program name in $PATH, or else in /usr/bin; "" if
// neither has it.
func lookPath(name string) string {
	for _, dir := range append(strings.Split(os.Getenv("PATH"), ":"), "/usr/bin") {
		if !strings.HasPrefix(dir, "/") {
			continue // a relative entry, which names whatever the working directory holds
		}
		p := path.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// boundingCaps is every capability in this process's bounding set: those
// the copy may hold as ambient.
func boundingCaps() []uintptr {
	b, _ := os.ReadFile("/proc/self/status")
	var bnd uint64
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bnd, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	var caps []uintptr
	for c := range 64 {
		if bnd&(1<<c) != 0 {
			caps = append(caps, uintptr(c))
		}
	}
	return caps
}
