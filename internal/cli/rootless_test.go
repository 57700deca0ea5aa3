package cli

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/sandbox"
)

// nobody is the unprivileged user the rootless tests run crucible as.
const nobody = 65534

// buildCrucible builds the crucible binary where an unprivileged user can run it.
func buildCrucible(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(testenv.PublicDir(t), "crucible")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/crucible")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runAs runs the crucible binary as uid/gid with an empty environment.
func runAs(t *testing.T, bin string, uid uint32, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// Rootless mode: started by an ordinary user, the jail is the same (the
// command is uid 1000 with no capabilities, seccomp and Landlock on), and
// without a delegated cgroup it refuses to run unless told it may.
func TestRootless(t *testing.T) {
	requireRoot(t) // to become nobody
	bin := buildCrucible(t)

	code, _, errs := runAs(t, bin, nobody, "exec", "--", "true")
	if code != 125 || !strings.Contains(errs, "cgroup") || !strings.Contains(errs, "--allow-degraded cgroup") {
		t.Fatalf("without a cgroup: exit %d, stderr %q; want 125 naming the cgroup layer and the fix", code, errs)
	}
	// With --json, the refusal is one object on stdout, as the README gives
	// it: {"error": {name, message, layer, fix}}.
	code, out, _ := runAs(t, bin, nobody, "exec", "--json", "--", "true")
	var refused struct {
		Error struct{ Name, Message, Layer, Fix string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &refused); err != nil || code != 125 || refused.Error.Name != "SetupError" ||
		refused.Error.Layer != "cgroup" || !strings.Contains(refused.Error.Fix, "--allow-degraded cgroup") {
		t.Errorf("without a cgroup, --json: exit %d, %q", code, out)
	}

	code, out, errs = runAs(t, bin, nobody, "exec", "--json", "--allow-degraded", "cgroup", "--",
		"sh", "-c", `id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; cat /proc/self/uid_map; touch /workspace/ok && echo wrote; touch /usr/x 2>/dev/null || echo ro`)
	var r sandbox.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	for _, want := range []string{"1000\n", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "wrote", "ro"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("missing %q in %q (stderr %q)", want, r.Stdout, r.Stderr)
		}
	}
	if len(r.Degraded) != 1 || r.Degraded[0] != "cgroup" {
		t.Errorf("degraded = %q, want [cgroup]", r.Degraded)
	}

	// A denied syscall is still refused and recorded.
	code, out, _ = runAs(t, bin, nobody, "exec", "--json", "--allow-degraded", "cgroup", "--",
		"python3", "-c", "import ctypes; print(ctypes.CDLL(None, use_errno=True).unshare(0x10000000))")
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Stdout != "-1\n" || !violated(&r, "unshare") {
		t.Errorf("unshare(CLONE_NEWUSER) as nobody: exit %d, %+v", code, r)
	}

	// Rootless, the command and the jail's init are the same host uid, so
	// only Landlock's signal scope (ABI 6) keeps the command from signalling
	// init; were it missing, init would die of the SIGTERM and the marker
	// would never print.
	_, out, _ = runAs(t, bin, nobody, "exec", "--json", "--allow-degraded", "cgroup", "--",
		"sh", "-c", `kill -TERM 1 2>&1; sleep 0.2; echo alive`)
	if err := json.Unmarshal([]byte(out), &r); err != nil || !strings.Contains(r.Stdout, "Operation not permitted") || !strings.Contains(r.Stdout, "alive") {
		t.Errorf("kill -TERM 1 from the command: %+v", r)
	}

	// doctor works as a normal user and says what is missing.
	code, out, _ = runAs(t, bin, nobody, "doctor")
	if code != 1 || !strings.Contains(out, "rootless") || !strings.Contains(out, "--allow-degraded cgroup") {
		t.Errorf("doctor as nobody: exit %d\n%s", code, out)
	}
}

func TestDoctorAsRoot(t *testing.T) {
	requireRoot(t)
	code, out, _ := run(t, "", "doctor")
	if code != 0 || !strings.Contains(out, "jail") || strings.Contains(out, "missing") ||
		!strings.Contains(out, "built a jail with a network; its DNS answered") {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}
}
