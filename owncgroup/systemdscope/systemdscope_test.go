package systemdscope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/owncgroup"
	"github.com/cruciblehq/crucible/userns"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if os.Getenv(envScopeHelper) == "1" {
		scopeHelper() // TestSystemdScope's client
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cgroupV2 is where cgroup v2 is mounted, or "".
func cgroupV2() string {
	for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(mnt, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return mnt
		}
	}
	return ""
}

// envScopeHelper makes this test binary TestSystemdScope's client: run as
// the user, it asks the user's manager for a scope (see scopeHelper).
const envScopeHelper = "CRUCIBLE_TEST_SCOPE_HELPER"

// scopeReport is what the helper found, as JSON on its stdout.
type scopeReport struct {
	Err       string
	Scope     string
	Cgroup    string // its cgroup v2 path after joining
	Delegate  bool   // the unit's Delegate property, read back from systemd
	ScopeUID  int    // the scope directory's owner
	LeafProcs string // the leaf's cgroup.procs
	Took      time.Duration
}

// scopeHelper joins a scope as Join does, whatever the host's controllers
// (when to ask is jail's TestScopeHostAsk), and reports.
func scopeHelper() {
	var r scopeReport
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(r) }()
	manager := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "systemd", "private")
	v2 := cgroupV2()
	start := time.Now()
	name, err := join(context.Background(), manager, v2)
	r.Took = time.Since(start)
	if err != nil {
		r.Err = err.Error()
		return
	}
	r.Scope = name
	r.Cgroup = owncgroup.V2()
	if fi, err := os.Stat(filepath.Join(v2, filepath.Dir(r.Cgroup))); err == nil {
		r.ScopeUID = int(fi.Sys().(*syscall.Stat_t).Uid)
		if uids, _, err := userns.Own(); err == nil && !uids.Initial() {
			out, _ := uids.Outside(uint32(r.ScopeUID)) // the owner as the host sees it
			r.ScopeUID = int(out)
		}
	}
	b, _ := os.ReadFile(filepath.Join(v2, r.Cgroup, "cgroup.procs"))
	r.LeafProcs = strings.TrimSpace(string(b))
	conn, err := connect(context.Background(), manager)
	if err != nil {
		r.Err = "reading the unit back: " + err.Error()
		return
	}
	defer conn.Close()
	p, err := conn.GetUnitTypePropertyContext(context.Background(), name, "Scope", "Delegate")
	if err != nil {
		r.Err = "reading Delegate: " + err.Error()
		return
	}
	r.Delegate, _ = p.Value.Value().(bool)
}

// TestSystemdScope asks a real systemd user manager for a scope, as a user
// does. The test starts systemd --user for a user of its own, in a cgroup
// delegated to it, in a mount namespace where /run says systemd booted
// (systemd --user refuses otherwise) and /etc/passwd knows the user. Then
// its client, this binary as that user, started in a cgroup of the
// manager's app.slice (as an app's terminal is), joins a scope: it must
// land in the scope's leaf, the scope delegated to it and owned by it; and
// once the client ends, systemd must remove the scope, leaf and all. The
// client does it twice: as the user, and as root of a user namespace of its
// own, as crucible's copy of itself asks (see userns.Enter).
func TestSystemdScope(t *testing.T) {
	testenv.NeedRoot(t, "starting a user's systemd manager")
	sh := testenv.NeedTool(t, "sh")
	unshare := testenv.NeedTool(t, "unshare")
	setpriv := testenv.NeedTool(t, "setpriv")
	systemd := "/lib/systemd/systemd"
	if _, err := os.Stat(systemd); err != nil {
		testenv.Missing(t, "needs systemd (Debian's systemd package)")
	}
	v2 := cgroupV2()
	if v2 == "" {
		testenv.Missing(t, "needs cgroup v2, where a user manager delegates")
	}
	// systemd's own hierarchies: v2, and a hybrid host's name=systemd v1.
	roots := []string{v2}
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup/systemd", &st) == nil && st.Type == unix.CGROUP_SUPER_MAGIC {
		roots = append(roots, "/sys/fs/cgroup/systemd")
	}

	uid := 47000 + os.Getpid()%1000
	base := fmt.Sprintf("crucible-test-systemd-%d", os.Getpid())
	manager := filepath.Join(base, fmt.Sprintf("user@%d.service", uid))
	term := filepath.Join(manager, "app.slice", "term.scope")
	t.Cleanup(func() {
		for _, r := range roots {
			testenv.RemoveCgroupTree(t, filepath.Join(r, base))
		}
	})
	for _, r := range roots {
		d := filepath.Join(r, term)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for p := d; p != filepath.Join(r, base); p = filepath.Dir(p) {
			if err := os.Chown(p, uid, uid); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"cgroup.procs", "cgroup.subtree_control", "cgroup.threads", "tasks"} {
				if err := os.Chown(filepath.Join(p, f), uid, uid); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}
	}

	etc := testenv.PublicDir(t)
	runtime := testenv.PublicDir(t)
	if err := os.Chown(runtime, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	passwd = fmt.Appendf(passwd, "crutestsd:x:%d:%d::/nonexistent:/bin/sh\n", uid, uid)
	if err := os.WriteFile(filepath.Join(etc, "passwd"), passwd, 0o644); err != nil {
		t.Fatal(err)
	}
	enter := func(cg string) string { // a shell line that moves the shell into cg
		var b strings.Builder
		for _, r := range roots {
			fmt.Fprintf(&b, "echo $$ > %s/cgroup.procs && ", filepath.Join(r, cg))
		}
		return b.String()
	}
	asUser := fmt.Sprintf("%s --reuid %d --regid %d --clear-groups env -i HOME=/ XDG_RUNTIME_DIR=%s PATH=/usr/bin:/bin", setpriv, uid, uid, runtime)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mgr := exec.CommandContext(ctx, unshare, "-m", "--propagation", "private", sh, "-c",
		enter(manager)+"mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system && "+
			"mount --bind "+filepath.Join(etc, "passwd")+" /etc/passwd && exec "+asUser+" "+systemd+" --user")
	var mgrOut strings.Builder
	mgr.Stdout, mgr.Stderr = &mgrOut, &mgrOut
	if err := mgr.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = mgr.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = mgr.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = mgr.Process.Kill()
			<-done
		}
	}()
	sock := filepath.Join(runtime, "systemd", "private")
	waitFor(t, 30*time.Second, "systemd --user's private socket", func() bool {
		fi, err := os.Stat(sock)
		return err == nil && fi.Mode().Type() == os.ModeSocket
	}, func() string { return mgrOut.String() })

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary's directory is private to root: run a copy the user can.
	bin := filepath.Join(testenv.PublicDir(t), "systemdscope.test")
	if b, err := os.ReadFile(exe); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	for _, as := range []struct{ name, prefix string }{
		{"as the user", ""},
		{"as root of its own user namespace", unshare + " --user --map-root-user "},
	} {
		if as.prefix != "" {
			if out, err := exec.CommandContext(ctx, sh, "-c", asUser+" "+as.prefix+"true").CombinedOutput(); err != nil {
				// A kernel that lets no user make a user namespace: crucible
				// then runs as the user, which the first case was.
				t.Logf("%s: skipped, the user cannot make a user namespace here: %v %s", as.name, err, out)
				continue
			}
		}
		client := exec.CommandContext(ctx, sh, "-c", enter(term)+"exec "+asUser+" "+envScopeHelper+"=1 "+as.prefix+bin)
		out, err := client.Output()
		if err != nil {
			t.Fatalf("%s: the client: %v\n%s", as.name, err, out)
		}
		var r scopeReport
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: the client's report: %v\n%s", as.name, err, out)
		}
		if r.Err != "" {
			t.Fatalf("%s: joining a scope: %s\nsystemd --user said:\n%s", as.name, r.Err, mgrOut.String())
		}
		t.Logf("%s: %+v", as.name, r)
		scope := filepath.Join("/", manager, "app.slice", r.Scope)
		if !strings.HasPrefix(r.Scope, "crucible-") || r.Cgroup != filepath.Join(scope, owncgroup.Leaf) {
			t.Errorf("%s: the client is in %s, scope %s; want the scope's leaf", as.name, r.Cgroup, r.Scope)
		}
		if !r.Delegate || r.ScopeUID != uid || r.LeafProcs == "" {
			t.Errorf("%s: want the scope delegated to the user and owned by it, the client in its leaf: %+v", as.name, r)
		}
		// Empty now: the manager stops the scope and removes its cgroup,
		// leaf and all, as it would after a crucible that ended.
		waitFor(t, 30*time.Second, "the scope's cgroup to be removed", func() bool {
			_, err := os.Stat(filepath.Join(v2, scope))
			return errors.Is(err, os.ErrNotExist)
		}, func() string { return mgrOut.String() })
	}
}

// waitFor polls cond every 20 ms until it holds, or fails t after limit,
// with what say returns.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool, say func() string) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited %v for %s\n%s", limit, what, say())
		}
	}
}

// A manager that cannot be reached, or that is no systemd: a clear error
// that names no path, and no scope.
func TestJoinFails(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "private"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accepts, says nothing sane, hangs up
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("REJECTED\r\n"))
			c.Close()
		}
	}()
	for _, sock := range []string{filepath.Join(dir, "absent"), filepath.Join(dir, "private")} {
		name, err := join(context.Background(), sock, cgroupV2())
		if err == nil || name != "" {
			t.Fatalf("join through %s: %q, %v; want an error", sock, name, err)
		}
		if strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "user manager") {
			t.Errorf("join through %s: %v; want the user manager named, no path", sock, err)
		}
	}
}
