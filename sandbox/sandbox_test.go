package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/egress"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang"
)

func TestJailSpec(t *testing.T) {
	s := config.Default().Sandbox
	s.Env = map[string]string{"MODE": "test", "HOME": "/tmp"}
	s.RO = []string{"/opt/data"}
	spec := jailSpec(&s, []string{"sh"}, map[string]string{"MODE": "prog", "DENO_DIR": "/tmp/d"})
	want := []string{"DENO_DIR=/tmp/d", "HOME=/tmp", "LANG=C.UTF-8", "MODE=test",
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", "TMPDIR=/tmp", "USER=sandbox"}
	if !slices.Equal(spec.Env, want) {
		t.Errorf("env = %q, want %q (defaults, then the program's, then the config's, sorted)", spec.Env, want)
	}
	if spec.Timeout != 30*time.Second || spec.Memory != 512<<20 || spec.Pids != 128 || spec.CPUs != 1 ||
		spec.TmpSize != 64<<20 || spec.WorkspaceSize != 64<<20 || spec.MaxOutput != 1<<20 {
		t.Errorf("limits not carried over: %+v", spec)
	}
	if !slices.Equal(spec.ReadOnly, s.RO) {
		t.Errorf("ro = %q", spec.ReadOnly)
	}
	for k := range s.Env {
		if _, ok := defaultEnv[k]; ok && k != "HOME" {
			t.Errorf("the config changed the defaults map itself (%s)", k)
		}
	}
	if defaultEnv["HOME"] != "/workspace" {
		t.Error("jailSpec modified defaultEnv")
	}
}

// The names the config accepts are the names the jail understands.
func TestDegradableLayersAgree(t *testing.T) {
	jailLayers := []string{jail.LayerCgroup, jail.LayerLandlock, jail.LayerSeccompNotify}
	if !slices.Equal(config.DegradableLayers, jailLayers) {
		t.Fatalf("config %q, jail %q", config.DegradableLayers, jailLayers)
	}
}

func TestCheckPaths(t *testing.T) {
	dir := t.TempDir()
	// A workspace owned by root is refused (see below): the good one belongs
	// to nobody.
	if err := os.Chown(dir, 65534, 65534); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	rootOwned := t.TempDir()
	if err := os.Chown(rootOwned, 0, 0); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		s       config.Sandbox
		wantErr string
	}{
		{"none", config.Sandbox{}, ""},
		{"workspace dir", config.Sandbox{Workspace: dir}, ""},
		{"workspace missing", config.Sandbox{Workspace: filepath.Join(dir, "nope")}, "no such file"},
		{"workspace file", config.Sandbox{Workspace: file}, "not a directory"},
		{"workspace through a symlink", config.Sandbox{Workspace: link}, "symbolic link"},
		{"workspace /etc", config.Sandbox{Workspace: "/etc"}, "system directory"},
		{"workspace /usr", config.Sandbox{Workspace: "/usr"}, "system directory"},
		{"workspace above /home", config.Sandbox{Workspace: "/home"}, "system directory"},
		{"workspace ~", config.Sandbox{Workspace: home}, "home directory"},
		{"workspace /etc, insisted", config.Sandbox{Workspace: "/etc", UnsafeWorkspace: true}, ""},
		{"ro file", config.Sandbox{RO: []string{file}}, ""},
		{"ro missing", config.Sandbox{RO: []string{filepath.Join(dir, "nope")}}, "no such file"},
		{"ro /etc", config.Sandbox{RO: []string{"/etc"}}, ""},
	} {
		err := checkPaths(&tc.s)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	if os.Geteuid() == 0 {
		err := checkPaths(&config.Sandbox{Workspace: rootOwned})
		if err == nil || !strings.Contains(err.Error(), "owned by root") {
			t.Errorf("a root-owned workspace: %v", err)
		}
	}
	cfg := config.Default()
	cfg.Sandbox.Workspace, cfg.Sandbox.UnsafeWorkspace = "/etc", true
	if w := Warnings(cfg); len(w) != 1 || !strings.Contains(w[0], "/etc is a system directory") {
		t.Errorf("warnings %q", w)
	}
}

// TestNetLogCap: endless distinct refusals are all counted, in a bounded
// number of entries.
func TestNetLogCap(t *testing.T) {
	l := newNetLog(nil)
	const n = 10000
	for i := range n {
		l.report(egress.Event{Kind: egress.KindDNS, Name: fmt.Sprintf("x%d.evil.test", i), Reason: "not in the allowlist"})
		l.report(egress.Event{Kind: egress.KindUDP, Name: "8.8.8.8", Port: uint16(i), Reason: "UDP goes only to the sandbox's DNS resolver"})
	}
	l.report(egress.Event{Kind: egress.KindDNS, Name: "x0.evil.test", Reason: "not in the allowlist"}) // listed: counted there
	l.report(egress.Event{Kind: egress.KindDNS, Allowed: true, Name: "ok.test"})                       // not a refusal
	counts := map[string]int{}
	for _, v := range l.result() {
		counts[v.Kind] += v.Count
	}
	if got := l.result(); len(got) != maxNetViolations+2 || counts["dns"] != n+1 || counts["udp"] != n {
		t.Errorf("%d entries (want %d), counts %v", len(got), maxNetViolations+2, counts)
	}
	if v := l.result()[0]; v.Host != "x0.evil.test" || v.Count != 2 {
		t.Errorf("first entry %+v", v)
	}
}

// The languages put their files where the jail places them.
func TestFilesDir(t *testing.T) {
	if lang.Dir != jail.FilesDir {
		t.Errorf("lang.Dir %q, jail.FilesDir %q", lang.Dir, jail.FilesDir)
	}
}

// The config refuses what the jail cannot run under, and no more.
func TestPidsFloor(t *testing.T) {
	for _, n := range []int{jail.MinPids - 1, jail.MinPids} {
		c := config.Default()
		c.Sandbox.Pids = n
		if err := c.Validate(); (err == nil) != (n >= jail.MinPids) {
			t.Errorf("pids %d: %v (jail.MinPids %d)", n, err, jail.MinPids)
		}
	}
}
