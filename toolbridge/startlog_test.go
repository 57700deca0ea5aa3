package toolbridge

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// A server that cannot start: the operator's log says which server, which
// command and the whole reason, host paths and all; the code gets the
// server's name and that it could not start, with no host path or secret.
func TestStartFailureLogged(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "secret-dir", "server.js")
	script := filepath.Join(dir, "server.sh")
	// It says why it fails on stderr, naming a host path and its own
	// credential, and exits.
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"Error: ENOENT: no such file or directory, open '"+missing+"' (key $API_KEY)\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	b := newBridge(t, Options{
		Servers: map[string]Server{
			"broken": {Command: script, Env: map[string]string{"API_KEY": canary}, Dir: dir},
			"absent": {Command: filepath.Join(dir, "no-such-command")},
			// Nothing listens there: the error quotes the URL, key and all.
			"remote": {URL: "http://127.0.0.1:1/mcp?key=" + canary},
		},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	s := b.NewSession()
	for _, name := range []string{"broken", "absent", "remote"} {
		_, err := call(t, s, name, "anything", `{}`)
		if err == nil || !strings.Contains(err.Error(), "tool server "+name+" is not available") {
			t.Fatalf("%s: err = %v; want the server named as not available", name, err)
		}
		if strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), canary) {
			t.Errorf("%s: the code sees a host path or a secret: %v", name, err)
		}
	}
	log := logs.String()
	for _, want := range []string{"server=broken", "command=" + script, missing, "key [redacted]", "server=absent", "command=" + filepath.Join(dir, "no-such-command"), "server=remote", "url=http://127.0.0.1:1"} {
		if !strings.Contains(log, want) {
			t.Errorf("the operator's log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, canary) {
		t.Errorf("the operator's log holds the server's secret:\n%s", log)
	}
}
