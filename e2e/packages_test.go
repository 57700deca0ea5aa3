package e2e

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/cli"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/packaging/packages"
)

// The .deb and the .rpm, built as the README says, hold what they should;
// the .deb, unpacked into a scratch directory (nothing is installed),
// gives a crucible that runs doctor, reads its packaged config, and has the
// AppArmor profile for /usr/bin/crucible.
func TestPackages(t *testing.T) {
	dpkg := testenv.NeedTool(t, "dpkg-deb")
	rpm := testenv.NeedTool(t, "rpm")
	// The .deb holds this test binary as crucible (62 MB under -race),
	// uncompressed: nfpm's compressor would run instrumented. The .rpm,
	// read only for its layout, holds a stand-in.
	out := t.TempDir()
	o := packages.Options{Out: out, Version: "0.1.0", Binary: publicCrucible(t), Man: cli.ManPage("2026-11-27"), Format: []string{"deb"}, DebCompression: "none"}
	debs, err := packages.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Binary, o.Format = "/usr/bin/true", []string{"rpm"}
	rpms, err := packages.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(debs) != 1 || filepath.Base(debs[0]) != "crucible_0.1.0_"+goarchDeb()+".deb" || len(rpms) != 1 || !strings.HasSuffix(rpms[0], ".rpm") {
		t.Fatalf("packages %q %q", debs, rpms)
	}
	deb, rpmPath := debs[0], rpms[0]

	want := []string{"./usr/bin/crucible", "./usr/share/man/man1/crucible.1.gz", "./usr/lib/systemd/system/crucible.service",
		"./etc/crucible/crucible.yaml", "./etc/apparmor.d/crucible"}
	list := runTool(t, dpkg, "-c", deb)
	for _, w := range want {
		if !strings.Contains(list, " "+w+"\n") {
			t.Errorf("the .deb lacks %s:\n%s", w, list)
		}
	}
	if !strings.Contains(list, "-rwxr-xr-x root/root") {
		t.Errorf("no executable owned by root in the .deb:\n%s", list)
	}
	if c := runTool(t, dpkg, "-f", deb, "Package", "Version", "Recommends"); c != "Package: crucible\nVersion: 0.1.0\nRecommends: uidmap\n" {
		t.Errorf("control: %q", c)
	}
	scripts := t.TempDir()
	runTool(t, dpkg, "-e", deb, scripts)
	conf, _ := os.ReadFile(filepath.Join(scripts, "conffiles"))
	if string(conf) != "/etc/apparmor.d/crucible\n/etc/crucible/crucible.yaml\n" {
		t.Errorf("conffiles: %q", conf)
	}
	if post, _ := os.ReadFile(filepath.Join(scripts, "postinst")); !strings.Contains(string(post), "apparmor_parser -r -T -W /etc/apparmor.d/crucible") {
		t.Errorf("postinst:\n%s", post)
	}

	root := testenv.PublicDir(t)
	runTool(t, dpkg, "-x", deb, root)
	cmd := exec.Command(filepath.Join(root, "usr/bin/crucible"), "doctor")
	cmd.Env = append(os.Environ(), cliEnv)
	doctor, _ := cmd.Output()
	if code := cmd.ProcessState.ExitCode(); (code != 0 && code != 1) || !strings.Contains(string(doctor), "FEATURE") || !strings.Contains(string(doctor), "built a jail") {
		t.Errorf("doctor from the .deb: exit %d\n%s", code, doctor)
	}
	tools := exec.Command(filepath.Join(root, "usr/bin/crucible"), "tools", "--config", filepath.Join(root, "etc/crucible/crucible.yaml"))
	tools.Env = append(os.Environ(), cliEnv)
	if tools.Run() != nil {
		t.Errorf("the packaged config: crucible tools --config: %v", tools.ProcessState)
	}
	if p, _ := os.ReadFile(filepath.Join(root, "etc/apparmor.d/crucible")); string(p) != jail.AppArmorProfile("/usr/bin/crucible") {
		t.Errorf("the AppArmor profile:\n%s", p)
	}
	f, err := os.Open(filepath.Join(root, "usr/share/man/man1/crucible.1.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if page, _ := io.ReadAll(zr); !strings.HasPrefix(string(page), ".TH CRUCIBLE 1 ") || !strings.Contains(string(page), `.SS "crucible serve"`) {
		t.Errorf("the man page:\n%.300s", page)
	}
	if unit, _ := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/crucible.service")); !strings.Contains(string(unit), "\nExecStart=/usr/bin/crucible serve --http 127.0.0.1:8787 --config /etc/crucible/crucible.yaml\n") {
		t.Errorf("the unit:\n%s", unit)
	}

	// The .rpm: the same files but the AppArmor profile, which is Debian's
	// and Ubuntu's.
	rl := runTool(t, rpm, "-qlp", rpmPath)
	for _, w := range want {
		in := strings.Contains(rl, strings.TrimPrefix(w, ".")+"\n")
		if in != (w != "./etc/apparmor.d/crucible") {
			t.Errorf("the .rpm holds %s: %v\n%s", w, in, rl)
		}
	}
	if c := runTool(t, rpm, "-qcp", rpmPath); c != "/etc/crucible/crucible.yaml\n" {
		t.Errorf("the .rpm's config files: %q", c)
	}
}

func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %q: %v\n%s", name, args, err, stderr)
	}
	return string(out)
}

// goarchDeb is this architecture as Debian names it (for the package's
// file name).
func goarchDeb() string {
	out, err := exec.Command("dpkg", "--print-architecture").Output()
	if err != nil {
		return "amd64"
	}
	return strings.TrimSpace(string(out))
}
