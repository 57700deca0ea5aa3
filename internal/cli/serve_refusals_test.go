package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve refuses, before it starts anything, a token that would name two
// clients: two named clients with one token, or an anonymous token that is
// a named client's too. The message names the clients, never the token.
func TestServeTokensApart(t *testing.T) {
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
	t.Setenv("CRUCIBLE_TEST_ALICE", alice)
	t.Setenv("CRUCIBLE_TEST_BOB", bob)
	t.Setenv("CRUCIBLE_TOKEN", "")
	for _, c := range []struct{ yaml, want string }{
		{"serve:\n  token: " + bob + "\nclients:\n  alice: {token: {from: env:CRUCIBLE_TEST_ALICE}}\n  bob: {token: {from: env:CRUCIBLE_TEST_BOB}}\n",
			"an anonymous token (CRUCIBLE_TOKEN, serve.token or serve.tokens) is clients.bob's token too"},
		{"serve:\n  tokens: [" + alice + "]\nclients:\n  alice: {token: {from: env:CRUCIBLE_TEST_ALICE}}\n",
			"is clients.alice's token too"},
		{"clients:\n  alice: {token: {from: env:CRUCIBLE_TEST_ALICE}}\n  bob: {token: {from: env:CRUCIBLE_TEST_ALICE}}\n",
			"clients.bob.token: the same as clients.alice's: each client needs a token of its own"},
	} {
		code, errs := serveOnce(t, c.yaml, "--http", "127.0.0.1:0")
		if code == 0 || !strings.Contains(errs, c.want) || strings.Contains(errs, alice) || strings.Contains(errs, bob) {
			t.Errorf("exit %d, stderr %q; want a refusal saying %q", code, errs, c.want)
		}
	}
}

// serveOnce runs serve with the config text yaml and args, bounded: one
// that started would serve until told to stop.
func serveOnce(t *testing.T, yaml string, args ...string) (int, string) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errb bytes.Buffer
	code := Run(ctx, append([]string{"serve", "--config", cfg}, args...), Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb})
	return code, errb.String()
}

// serve.replicas needs --http, and a key of 32 bytes or more, said before
// anything starts.
func TestServeReplicasRefused(t *testing.T) {
	t.Setenv("CRUCIBLE_TEST_KEY", "short")
	t.Setenv("CRUCIBLE_TOKEN", "")
	const cfg = "serve:\n  token: 0123456789abcdef0123\n  replicas:\n    name: crucible-0\n    peer: http://{name}.peers:8080\n    key: {from: env:CRUCIBLE_TEST_KEY}\n"
	if code, errs := serveOnce(t, cfg); code == 0 || !strings.Contains(errs, "serve.replicas: the replicas serve each other's clients over HTTP: add --http ADDR") {
		t.Errorf("stdio: exit %d, %q", code, errs)
	}
	if code, errs := serveOnce(t, cfg, "--http", "127.0.0.1:0"); code == 0 || !strings.Contains(errs, "serve.replicas: the replicas' key has 5 bytes: want at least 32") {
		t.Errorf("a short key: exit %d, %q", code, errs)
	}
}
