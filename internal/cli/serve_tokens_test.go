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
		cfg := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(cfg, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		// Bounded: a serve that took the tokens would serve until told to stop.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var errb bytes.Buffer
		code := Run(ctx, []string{"serve", "--config", cfg, "--http", "127.0.0.1:0"}, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb})
		cancel()
		errs := errb.String()
		if code == 0 || !strings.Contains(errs, c.want) || strings.Contains(errs, alice) || strings.Contains(errs, bob) {
			t.Errorf("exit %d, stderr %q; want a refusal saying %q", code, errs, c.want)
		}
	}
}
