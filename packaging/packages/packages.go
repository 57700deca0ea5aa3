// Package packages builds crucible's .deb and .rpm with nfpm: the binary,
// the man page crucible(1), a systemd unit for `crucible serve --http`
// with its config in /etc/crucible, and, in the .deb, the AppArmor profile
// that lets crucible make user namespaces on Ubuntu 23.10 and later
// (loaded on install where AppArmor runs). The command ./packaging runs it.
package packages

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/cruciblehq/crucible/jail"
	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the packagers
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm"
)

var (
	//go:embed crucible.service
	unit []byte
	//go:embed crucible.yaml
	config []byte
	//go:embed postinst
	postinst []byte
)

// Options say what Build packages, and where.
type Options struct {
	Out     string // the directory the packages are written to
	Version string
	// Binary is the crucible binary; "": a static build of ./cmd/crucible
	// (Build then runs from the repository's root).
	Binary string
	Man    string   // the man page crucible(1), in roff (cli.ManPage)
	Format []string // "deb", "rpm"; default both
	// DebCompression is the .deb's data compression; default gzip. The
	// tests take "none": their binary is large, and the compressor runs
	// instrumented under -race.
	DebCompression string
}

// Build writes the packages into o.Out and returns their paths.
func Build(o Options) ([]string, error) {
	out, version, binary, man := o.Out, o.Version, o.Binary, o.Man
	formats := o.Format
	if len(formats) == 0 {
		formats = []string{"deb", "rpm"}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp("", "crucible-packaging-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	if binary == "" {
		binary = filepath.Join(stage, "crucible")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/cruciblehq/crucible/internal/cli.Version="+version, "-o", binary, "./cmd/crucible")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build: %w\n%s", err, b)
		}
	}
	now := time.Now().UTC()
	var manGz bytes.Buffer
	zw := gzip.NewWriter(&manGz)
	if _, err := zw.Write([]byte(man)); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	staged := map[string][]byte{
		"crucible.1.gz":    manGz.Bytes(),
		"apparmor":         []byte(jail.AppArmorProfile("/usr/bin/crucible")),
		"crucible.service": unit,
		"crucible.yaml":    config,
		"postinst":         postinst,
	}
	for name, b := range staged {
		if err := os.WriteFile(filepath.Join(stage, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	at := func(name string) string { return filepath.Join(stage, name) }
	var paths []string
	for _, format := range formats {
		info := &nfpm.Info{
			Name:        "crucible",
			Arch:        runtime.GOARCH,
			Platform:    "linux",
			Version:     version,
			Maintainer:  "Crucible maintainers <crucible@users.noreply.github.com>",
			Description: "Runs code that an AI wrote in a fresh, fail-closed Linux sandbox, as an MCP server in code mode.",
			Homepage:    "https://github.com/cruciblehq/crucible",
			Section:     "utils",
			MTime:       now,
			Overridables: nfpm.Overridables{
				Recommends: []string{"uidmap"}, // newuidmap, for jails with ids of their own as a user
				Contents: files.Contents{
					{Source: binary, Destination: "/usr/bin/crucible", FileInfo: &files.ContentFileInfo{Mode: 0o755}},
					{Source: at("crucible.1.gz"), Destination: "/usr/share/man/man1/crucible.1.gz", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
					{Source: at("crucible.service"), Destination: "/usr/lib/systemd/system/crucible.service", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
					{Source: at("crucible.yaml"), Destination: "/etc/crucible/crucible.yaml", Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
					{Source: at("apparmor"), Destination: "/etc/apparmor.d/crucible", Type: files.TypeConfigNoReplace, Packager: "deb", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
				},
			},
		}
		if format == "deb" {
			info.Scripts.PostInstall = at("postinst")
			info.Deb.Compression = o.DebCompression
		}
		p, err := packageOne(nfpm.WithDefaults(info), format, out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", format, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func packageOne(info *nfpm.Info, format, out string) (string, error) {
	pkgr, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	path := filepath.Join(out, pkgr.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := pkgr.Package(info, f); err != nil {
		f.Close()
		_ = os.Remove(path)
		return "", err
	}
	return path, f.Close()
}
