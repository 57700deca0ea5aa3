package jail

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// A file placed over a host file of the read-only root: the jail reads the
// file's data at the host file's path, cannot write it, and the host's
// file is untouched. A path with nothing behind it is left alone.
func TestFileOver(t *testing.T) {
	testenv.NeedRoot(t, "the cgroup layer")
	const bundle = "/etc/ssl/certs/ca-certificates.crt"
	host, err := os.ReadFile(bundle)
	if err != nil {
		testenv.Missing(t, "needs the host's CA bundle at "+bundle)
	}
	s := spec("/bin/sh", "-c", `cat `+bundle+`; echo; cat /crucible/ca.pem; echo; (echo x >>`+bundle+`) 2>/dev/null || echo ro; ls /etc/no-such-dir 2>&1 | wc -l`)
	s.Files = []File{{Path: "/crucible/ca.pem", Data: []byte("test bundle"), Over: []string{bundle, "/etc/no-such-dir/x.crt"}}}
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	r, err := Run(context.Background(), s)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("run: %v %+v\n%s", err, r, out.String())
	}
	if want := "test bundle\ntest bundle\nro\n1\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	if now, _ := os.ReadFile(bundle); !bytes.Equal(now, host) {
		t.Error("the host's bundle changed")
	}

	s = spec("/bin/true")
	s.Files = []File{{Path: "/crucible/x", Over: []string{"etc/x"}}}
	if _, err := Run(context.Background(), s); err == nil || !strings.Contains(err.Error(), "not a clean absolute path") {
		t.Errorf("a relative path to cover: err = %v", err)
	}
}
