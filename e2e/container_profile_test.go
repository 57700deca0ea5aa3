package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// podProfile is the chart's default pod security profile, userns, as
// docker run settings: a user that is not root, no capability at all, the
// seccomp profile the chart ships, /proc unmasked (procMount: Unmasked),
// no AppArmor confinement (where AppArmor is on, the chart's Localhost
// profile), and a tun device such as a device plugin hands out.
func podProfile(t *testing.T, tun string) []string {
	t.Helper()
	seccomp, err := filepath.Abs("../deploy/seccomp/crucible.json")
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--user", "65532:65532", "--cap-drop", "ALL",
		"--security-opt", "seccomp=" + seccomp, "--security-opt", "systempaths=unconfined", "--security-opt", "apparmor=unconfined",
		"--device", tun + ":/dev/net/tun"}
}

// Under the pod profile, in a container of the offline image: doctor
// finds every layer but the cgroup one (the runtime's cgroup filesystem is
// read-only), the jail's attacks that apply fail inside as on a host, and
// a program reaches an allowed host with a secret it never holds.
func TestContainerPodProfile(t *testing.T) {
	f := newSecretFix(t)
	d := startDockerd(t)
	image := d.image(t, publicCrucible(t))
	pub := testenv.PublicDir(t)
	tun := tunNode(t, pub)
	ca, err := os.ReadFile(f.upstreamCA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pub, "ca.pem"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(pub, "crucible.yaml")
	if err := os.WriteFile(cfg, []byte(f.echoConfig(filepath.Join(pub, "ca.pem"))+"sandbox:\n  allow_degraded: [cgroup]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(pub, "fetch.ts")
	if err := os.WriteFile(prog, []byte(fmt.Sprintf(`const r = await fetch("https://%s:%d/pod", { headers: { Authorization: "Bearer " + env.TOKEN } });
export default { status: r.status, token: env.TOKEN };`, svcName, f.echo)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The host's network namespace: the upstream listens on its loopback.
	run := func(args ...string) (string, error) {
		base := []string{"run", "--rm", "--network", "host", "-e", cliEnv, "-e", "CRUCIBLE_TEST_TOKEN=" + tokenValue, "-v", pub + ":" + pub + ":ro"}
		return d.run(append(append(base, podProfile(t, tun)...), append([]string{image}, args...)...)...)
	}

	out, err := run("crucible", "doctor")
	checkPodDoctor(t, out, err)
	checkPodAttacks(t, run, cfg)

	// A program reaches the allowed host with the secret swapped in on the
	// wire; it never sees the value.
	out, err = run("crucible", "run", "--json", "--config", cfg, prog)
	var r sandbox.Result
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil || err != nil {
		t.Fatalf("run under the pod profile: %v %v\n%s", err, jerr, out)
	}
	var res struct {
		Status int
		Token  string
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || r.ExitCode != 0 || res.Status != 200 || res.Token == tokenValue || strings.Contains(out, tokenValue) {
		t.Errorf("the program's result %s (%v):\n%s", r.Result, err, dump(&r))
	}
	if got := f.received("/pod"); !strings.Contains(got, "Authorization: Bearer "+tokenValue) {
		t.Errorf("the host received:\n%s", got)
	}
	if out, err := d.run("rmi", image); err != nil {
		t.Errorf("docker rmi: %v\n%s", err, out)
	}
}

// checkPodDoctor checks doctor's report under the pod profile: every layer
// but cgroups, and a jail built without them.
func checkPodDoctor(t *testing.T, out string, err error) {
	t.Helper()
	for _, row := range []string{"privileges", "user namespaces", "mount API", "procfs", "seccomp filter", "seccomp user notification", "network \\(tun\\)", "network \\(jail\\)"} {
		if !regexp.MustCompile(`(?m)^` + row + ` +ok `).MatchString(out) {
			t.Errorf("doctor under the pod profile: %s is not ok (%v):\n%s", row, err, out)
		}
	}
	if !regexp.MustCompile(`(?m)^jail +ok +built a jail and ran /bin/sh .*\(without cgroup\)`).MatchString(out) {
		t.Errorf("doctor under the pod profile built no jail:\n%s", out)
	}
}

// checkPodAttacks runs the jail's attacks that apply, with the config cfg
// (which lets the cgroup layer go): its root is read-only, it makes no
// namespace (refused, and recorded), has no capability, and no network but
// what the rules allow.
func checkPodAttacks(t *testing.T, run func(args ...string) (string, error), cfg string) {
	t.Helper()
	out, err := run("crucible", "exec", "--json", "--config", cfg, "--", "sh", "-c",
		`id -u; grep CapEff /proc/self/status; touch /usr/x 2>/dev/null || echo ro; unshare -U true 2>/dev/null || echo no-userns; wget -q -T 5 -O- http://127.0.0.1:1/ 2>/dev/null || echo no-net`)
	var r sandbox.Result
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil || err != nil {
		t.Fatalf("exec under the pod profile: %v %v\n%s", err, jerr, out)
	}
	if r.ExitCode != 0 || r.Stdout != "1000\nCapEff:\t0000000000000000\nro\nno-userns\nno-net\n" || !violated(&r, "unshare") {
		t.Errorf("exec under the pod profile:\n%s", dump(&r))
	}
}

// The pod profile with the pod's own user namespace (hostUsers: false):
// a daemon with userns-remap gives the container 65536 ids of its own,
// its root no one on the host, and doctor and the jail's attacks hold
// there as without. (Docker shares no host network with such a container:
// the secret's round trip is TestContainerPodProfile's.)
func TestContainerPodUserns(t *testing.T) {
	d := startDockerdWith(t, true)
	image := d.image(t, publicCrucible(t))
	pub := testenv.PublicDir(t)
	tun := tunNode(t, pub)
	cfg := filepath.Join(pub, "crucible.yaml")
	if err := os.WriteFile(cfg, []byte("sandbox:\n  allow_degraded: [cgroup]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// In a user namespace runc binds the host's node at the device's path
	// (it cannot make one), so the node is bound here, with the device
	// allowed: a device plugin's node must likewise be 0666 on the node.
	settings := podProfile(t, tun)
	i := slices.Index(settings, "--device")
	settings = append(slices.Delete(settings, i, i+2), "-v", tun+":/dev/net/tun", "--device-cgroup-rule", "c 10:200 rwm")
	run := func(args ...string) (string, error) {
		base := []string{"run", "--rm", "--network", "none", "-e", cliEnv, "-v", pub + ":" + pub + ":ro"}
		return d.run(append(append(base, settings...), append([]string{image}, args...)...)...)
	}
	if out, err := run("busybox", "cat", "/proc/self/uid_map"); err != nil || strings.Join(strings.Fields(out), " ") != fmt.Sprintf("0 %d 65536", remapFirst) {
		t.Fatalf("the container's ids are not its own (%v): %q", err, out)
	}
	out, err := run("crucible", "doctor")
	checkPodDoctor(t, out, err)
	checkPodAttacks(t, run, cfg)
	if out, err := d.run("rmi", image); err != nil {
		t.Errorf("docker rmi: %v\n%s", err, out)
	}
}
