package e2e

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// dockerd is a Docker daemon of the test's own: its data, state, socket
// and its containers' cgroups all in places it made, with no bridge and no
// iptables rules; everything goes when the test ends.
type dockerd struct {
	cli  string   // the docker client
	env  []string // DOCKER_HOST: our daemon's socket
	root string
}

func startDockerd(t *testing.T) *dockerd { return startDockerdWith(t, false) }

// remapUser is the user whose range of subordinate ids a daemon started
// with remap gives its containers, as a pod with hostUsers: false gets 65536
// ids of its own: it is known only inside the daemon's mount namespace.
const (
	remapUser  = "crutestremap"
	remapFirst = 3_100_000_000 // far from any real user's range, as the rootless tests' are
)

// startDockerdWith starts a daemon; with remap, its containers run in user
// namespaces of their own (userns-remap), their root no one on the host.
func startDockerdWith(t *testing.T, remap bool) *dockerd {
	t.Helper()
	requireRoot(t)
	daemon := testenv.NeedTool(t, "dockerd")
	cli := testenv.NeedTool(t, "docker")
	// Short: the socket's path must fit a sockaddr_un.
	root, err := os.MkdirTemp("", "crdk")
	if err != nil {
		t.Fatal(err)
	}
	if remap {
		// The remapped root must reach its data through this directory.
		if err := os.Chmod(root, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	parent := fmt.Sprintf("crucible-test-docker-%d", os.Getpid())
	if err := os.WriteFile(filepath.Join(root, "daemon.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(root, "sock")
	// In a mount namespace of its own, where what the daemon writes
	// outside its directories (/etc/docker/key.json, containerd's shim
	// sockets in /run/containerd) lands in tmpfs that go with it.
	ov := filepath.Join(root, "ov")
	if err := os.Mkdir(ov, 0o700); err != nil {
		t.Fatal(err)
	}
	setup := "set -e\nmount -t tmpfs tmpfs " + ov + "\nmkdir " + ov + "/upper " + ov + "/work\n" +
		"mount -t overlay overlay -o lowerdir=/etc,upperdir=" + ov + "/upper,workdir=" + ov + "/work /etc\n" +
		"mount -t tmpfs tmpfs /run\n"
	var extra []string
	if remap {
		setup += fmt.Sprintf("echo '%[1]s:x:54399:54399::/nonexistent:/bin/false' >> /etc/passwd\necho '%[1]s:x:54399:' >> /etc/group\n"+
			"echo '%[1]s:%[2]d:65536' >> /etc/subuid\necho '%[1]s:%[2]d:65536' >> /etc/subgid\n", remapUser, remapFirst)
		extra = []string{"--userns-remap", remapUser}
	}
	setup += "exec \"$@\"\n"
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", setup, "sh", daemon, "--config-file", filepath.Join(root, "daemon.json"),
		"--data-root", filepath.Join(root, "data"), "--exec-root", filepath.Join(root, "exec"),
		"--pidfile", filepath.Join(root, "pid"), "-H", "unix://"+sock,
		"--storage-driver", "vfs", "--iptables=false", "--ip6tables=false", "--bridge=none",
		"--ip-forward=false", "--ip-masq=false", "--userland-proxy=false", "--cgroup-parent", "/"+parent)
	cmd.Args = append(cmd.Args, extra...)
	logPath := filepath.Join(root, "log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("dockerd's log:\n%s", b)
		}
		// What the daemon mounted under its root (a container's network
		// namespace file, say) goes before the directory does.
		for _, m := range mountsUnder(t, root) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("removing the daemon's directory: %v", err)
		}
		// The containers' parent cgroup, in the v2 hierarchy or in each
		// v1 one; the containers' own are gone with them.
		_ = os.Remove(filepath.Join("/sys/fs/cgroup", parent))
		ents, _ := os.ReadDir("/sys/fs/cgroup")
		for _, e := range ents {
			_ = os.Remove(filepath.Join("/sys/fs/cgroup", e.Name(), parent))
		}
	})
	d := &dockerd{cli: cli, env: append(os.Environ(), "DOCKER_HOST=unix://"+sock), root: root}
	for i := 0; ; i++ {
		if _, err := d.run("info"); err == nil {
			return d
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			testenv.Missing(t, "dockerd could not start here:\n"+string(b))
		default:
		}
		if i == 600 {
			t.Fatal("dockerd did not answer within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// run runs the docker client and returns its stdout; an error carries its
// stderr.
func (d *dockerd) run(args ...string) (string, error) {
	cmd := exec.Command(d.cli, args...)
	cmd.Env = d.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, errb.String())
	}
	return out.String(), nil
}

// image makes an image, offline, of what crucible needs and nothing else:
// the crucible binary with the libraries it links, and a static busybox
// as /usr/bin/sh.
func (d *dockerd) image(t *testing.T, bin string) string {
	t.Helper()
	busybox := testenv.NeedTool(t, "busybox")
	if f, err := elf.Open(busybox); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				testenv.Missing(t, "needs a static busybox (Debian's busybox-static)")
			}
		}
		_ = f.Close()
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, body []byte, link string) {
		h := &tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}
		switch {
		case link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, link, 0
		case strings.HasSuffix(name, "/"):
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	file := func(host, name string) {
		b, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		add(name, 0o755, b, "")
	}
	for _, dir := range []string{"usr/", "usr/bin/", "usr/lib/", "usr/lib64/", "usr/lib/x86_64-linux-gnu/", "etc/", "proc/", "sys/", "dev/"} {
		add(dir, 0o755, nil, "")
	}
	add("tmp/", 0o1777, nil, "") // serve, as a user, makes its workspaces there
	add("bin", 0o777, nil, "usr/bin")
	add("lib", 0o777, nil, "usr/lib")
	add("lib64", 0o777, nil, "usr/lib64")
	file(busybox, "usr/bin/busybox")
	add("usr/bin/sh", 0o777, nil, "busybox")
	file(bin, "usr/bin/crucible")
	// The libraries the binary links (a plain go build links libc for the
	// net package), under /usr as a merged-/usr system has them.
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		t.Fatalf("ldd: %v", err)
	}
	for _, m := range regexp.MustCompile(`(/\S+) \(0x`).FindAllStringSubmatch(string(out), -1) {
		real, err := filepath.EvalSymlinks(m[1])
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(m[1], "/")
		if !strings.HasPrefix(name, "usr/") {
			name = "usr/" + name
		}
		file(real, name)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("crucible-test:%d", os.Getpid())
	cmd := exec.Command(d.cli, "import", "--change", "ENV "+quickExit, "-", tag)
	cmd.Env, cmd.Stdin = d.env, &buf
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, b)
	}
	return tag
}

// In a Docker container, doctor names the container and what its runtime
// blocks, with the docker run settings that allow each; under those
// settings the jail works inside.
func TestDockerContainer(t *testing.T) {
	d := startDockerd(t)
	image := d.image(t, publicCrucible(t))
	run := func(settings []string, args ...string) (string, error) {
		return d.run(append(append([]string{"run", "--rm", "--network", "none", "-e", cliEnv}, settings...), append([]string{image}, args...)...)...)
	}

	out, err := run(nil, "crucible", "doctor")
	settings := "--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined --cap-add SYS_ADMIN"
	if err == nil || !strings.Contains(out, "in a docker container") || !strings.Contains(out, "cannot execute anything as root") ||
		!strings.Contains(out, "user namespaces: the container's runtime refuses them: run it with "+settings) ||
		!regexp.MustCompile(`procfs +missing +\d+ paths of /proc are covered`).MatchString(out) ||
		!strings.Contains(out, "network (tun): run the container with --device /dev/net/tun") ||
		!strings.Contains(out, "cgroups: the runtime mounts the cgroup filesystem read-only: run the container with --privileged") {
		t.Errorf("doctor in a default container (%v):\n%s", err, out)
	}
	if strings.Contains(out, "Linux 5.12") || strings.Contains(out, "sysctl") {
		t.Errorf("doctor in a container gives a host's fix:\n%s", out)
	}
	out, _ = run(nil, "crucible", "exec", "--json", "--allow-degraded", "cgroup", "--", "true")
	var refused struct{ Error struct{ Layer, Fix string } }
	if err := json.Unmarshal([]byte(out), &refused); err != nil || refused.Error.Layer != "userns" || !strings.Contains(refused.Error.Fix, settings) {
		t.Errorf("exec in a default container: %v\n%s", err, out)
	}

	// The settings doctor names (and the tun device), with the cgroup
	// layer let go: a read-only cgroup filesystem cannot hold a jail's.
	with := append(strings.Fields(settings), "--device", "/dev/net/tun")
	out, err = run(with, "crucible", "doctor")
	for _, row := range []string{"user namespaces", "mount API", "procfs", "network \\(tun\\)"} {
		if !regexp.MustCompile(`(?m)^` + row + ` +ok `).MatchString(out) {
			t.Errorf("doctor under %s: %s is not ok (%v):\n%s", settings, row, err, out)
		}
	}
	if !regexp.MustCompile(`(?m)^jail +ok +built a jail and ran /bin/sh .*\(without cgroup\)`).MatchString(out) {
		t.Errorf("doctor under %s built no jail:\n%s", settings, out)
	}
	out, err = run(with, "crucible", "exec", "--json", "--allow-degraded", "cgroup", "--", "sh", "-c", "echo ok; id -u; grep CapEff /proc/self/status")
	var r sandbox.Result
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil || err != nil || r.ExitCode != 0 || r.Stdout != "ok\n1000\nCapEff:\t0000000000000000\n" {
		t.Errorf("exec under %s: %v %v\n%s", settings, err, jerr, out)
	}
	if out, err := d.run("rmi", image); err != nil {
		t.Errorf("docker rmi: %v\n%s", err, out)
	}
}
