package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/oauthtest"
)

// A remote server that wants an OAuth login, end to end with the CLI: no
// login is an error naming crucible login NAME (crucible tools, and a
// program's call); crucible login runs $BROWSER, takes the redirect and
// keeps the tokens in a file of the user's alone; crucible tools lists the
// server's tools and a program calls them as the account logged in; the
// program, searching its environment, every file it can read, /proc and
// the network for a token, finds none, and a token the server echoes comes
// to it redacted; crucible logout forgets the login.
func TestLogin(t *testing.T) {
	requireRoot(t)
	f := oauthtest.New(t, oauthtest.Options{IssParameter: true})
	state := t.TempDir()
	t.Setenv("CRUCIBLE_STATE_DIR", state)
	script, _ := filepath.Abs("testdata/conformance_client.py")
	t.Setenv("BROWSER", "/usr/bin/python3 "+script+" --browse")
	cfg := onEmbedded(t, "servers:\n  tracker:\n    url: "+f.MCPURL()+"\n    oauth: {}\n")
	const needs = "server tracker needs a login: run crucible login tracker"

	code, _, errs := run(t, "", append([]string{"tools"}, cfg...)...)
	if code != 1 || !strings.Contains(errs, needs) {
		t.Fatalf("tools with no login: exit %d\n%s", code, errs)
	}
	r := runJSON(t, "try { await tools.tracker.whoami({}); return 'called'; } catch (e) { return e.message; }", append(cfg, "--lang", "js", "-")...)
	if !strings.Contains(string(r.Result), needs) {
		t.Fatalf("a call with no login: %s", r.Result)
	}

	code, _, errs = run(t, "", append(append([]string{"login"}, cfg...), "tracker")...)
	if code != 0 || !strings.Contains(errs, "open this URL in a browser:\n\n  "+f.Issuer()+"/authorize?") || !strings.Contains(errs, "logged in to server tracker (") {
		t.Fatalf("login: exit %d\n%s", code, errs)
	}
	file := filepath.Join(state, "tracker", "operator.json")
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v %v", fi, err)
	}
	code, out, errs := run(t, "", append([]string{"tools"}, cfg...)...)
	if code != 0 || !strings.Contains(out, "whoami") {
		t.Fatalf("tools after the login: exit %d\n%s\n%s", code, out, errs)
	}

	// The attack: everything the program can reach, searched for anything
	// shaped like the fixture's tokens (at_..., rt_...).
	r = runJSON(t, `import crucible, os, re, socket
shape = re.compile(rb"(?:at|rt)_[A-Za-z0-9_-]{20,}")
found, read = set(), 0
def search(where, data):
    for m in shape.findall(data):
        found.add((where, m.decode()))
for k, v in os.environ.items():
    search("env " + k, v.encode())
def grep(p):
    global read
    try:
        with open(p, "rb") as fh:
            read += 1
            search(p, fh.read(1 << 20))
    except Exception:
        pass
# Every file but the system's own (/usr, /sys, /dev), and of /proc what a
# process says of itself: its environment, command line, maps, fds.
for root, dirs, files in os.walk("/", onerror=lambda e: None):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/usr", "/sys", "/dev", "/proc")]
    for name in files:
        if read < 20000:
            grep(os.path.join(root, name))
for pid in [d for d in os.listdir("/proc") if d.isdigit()] + ["self"]:
    for what in ("environ", "cmdline", "maps", "mountinfo", "status"):
        grep("/proc/%s/%s" % (pid, what))
    try:
        for fd in os.listdir("/proc/%s/fd" % pid):
            search("fd " + fd, os.readlink("/proc/%s/fd/%s" % (pid, fd)).encode())
    except OSError:
        pass
for port in (80, 443, `+portOf(t, f.MCPURL())+`):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        found.add(("connected", str(port)))
    except OSError:
        pass
crucible.result = {"found": sorted(found), "read": read,
    "whoami": crucible.tools.tracker.whoami(), "leak": crucible.tools.tracker.leak()}
`, append(cfg, "--lang", "py", "--timeout", "2m", "-")...)
	if r.ExitCode != 0 {
		t.Fatalf("the search: %+v", r)
	}
	var got struct {
		Found        [][2]string
		Read         int
		Whoami, Leak string
	}
	if err := json.Unmarshal(r.Result, &got); err != nil {
		t.Fatalf("%s: %v", r.Result, err)
	}
	tokens := f.Tokens()
	for _, x := range got.Found {
		for _, tok := range tokens {
			if strings.Contains(x[1], tok) {
				t.Errorf("the program found a token in %s", x[0])
			}
		}
		if x[0] == "connected" {
			t.Errorf("the program reached 127.0.0.1:%s", x[1])
		}
	}
	for _, tok := range tokens {
		if strings.Contains(string(r.Result), tok) || strings.Contains(r.Stdout+r.Stderr, tok) {
			t.Fatal("a token reached the program's output")
		}
	}
	t.Logf("read %d files, found %d shapes", got.Read, len(got.Found))
	if got.Read < 20 || got.Whoami != "alice" || !strings.Contains(got.Leak, "[redacted]") {
		t.Errorf("read %d files, whoami %q, leak %q", got.Read, got.Whoami, got.Leak)
	}

	code, _, errs = run(t, "", append(append([]string{"logout"}, cfg...), "tracker")...)
	if code != 0 || !strings.Contains(errs, "forgot the login to server tracker") {
		t.Fatalf("logout: exit %d\n%s", code, errs)
	}
	if code, _, errs = run(t, "", append([]string{"tools"}, cfg...)...); code != 1 || !strings.Contains(errs, needs) {
		t.Fatalf("tools after logout: exit %d\n%s", code, errs)
	}
}

// portOf is the port of URL u.
func portOf(t *testing.T, u string) string {
	t.Helper()
	rest := u[strings.LastIndex(u, ":")+1:]
	port, _, _ := strings.Cut(rest, "/")
	return port
}
