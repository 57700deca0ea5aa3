package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
)

const (
	tokenA = "test-token-aaaaaaaaaaaaaaaa"
	tokenB = "test-token-bbbbbbbbbbbbbbbb"
)

// Each token is its own client, a named client's by its name; a token
// that differs from one of them in its last byte, its length, or
// altogether is none.
func TestTokenClient(t *testing.T) {
	ts := []string{tokenA, tokenB, "another-token-of-another-length"}
	known := New(ts, map[string]string{"ci": "named-client-token-0123", "alice": "alice-token-456789abc"})
	seen := map[string]bool{}
	for _, tok := range ts {
		d := sha256.Sum256([]byte(tok))
		want := "token:" + hex.EncodeToString(d[:8]) // the key of metrics and sessions
		id, ok := known.Client(tok)
		if !ok || id != want || seen[id] {
			t.Errorf("token %q: client %q, %v; want %q, once", tok, id, ok, want)
		}
		seen[id] = true
	}
	for _, wrong := range []string{"", tokenA[:len(tokenA)-1] + "x", tokenA[:len(tokenA)-1], tokenA + "a", strings.Repeat("a", len(tokenB)), tokenA + tokenB} {
		if id, ok := known.Client(wrong); ok {
			t.Errorf("wrong token %q taken as client %q", wrong, id)
		}
	}
	for tok, name := range map[string]string{"named-client-token-0123": "ci", "alice-token-456789abc": "alice"} {
		if id, ok := known.Client(tok); !ok || id != name {
			t.Errorf("a named client's token: %q, %v; want %q", id, ok, name)
		}
	}
	if id, ok := New(nil, nil).Client(""); ok {
		t.Errorf("no tokens, yet the empty one is client %q", id)
	}
}

// A nil Tokens takes no token; Shared names a client whose token is an
// anonymous one too.
func TestTokensNoneShared(t *testing.T) {
	var none *Tokens
	if id, ok := none.Client(tokenA); ok {
		t.Errorf("nil Tokens took %q", id)
	}
	if got := New([]string{tokenA}, map[string]string{"b": tokenB, "a": tokenA}).Shared(); got != "a" {
		t.Errorf("Shared() = %q, want a", got)
	}
	if got := New([]string{tokenA}, map[string]string{"b": tokenB}).Shared(); got != "" {
		t.Errorf("Shared() = %q, want none", got)
	}
}

// The anonymous tokens: CRUCIBLE_TOKEN (checked) with serve.tokens, else
// serve.token and serve.tokens; none needed beside named clients; else
// one made on loopback, and an error elsewhere.
func TestAnonymous(t *testing.T) {
	for _, c := range []struct {
		name, env     string
		token         string
		tokens        []string
		clients       bool
		loopback      bool
		want, wantErr string
		made          bool
	}{
		{name: "env", env: tokenA, token: tokenB, tokens: []string{"t2-0123456789abcdef"}, want: tokenA + " t2-0123456789abcdef"},
		{name: "bad env", env: "short", wantErr: "CRUCIBLE_TOKEN must be at least 16 characters, without spaces or line breaks"},
		{name: "config", token: tokenB, tokens: []string{tokenA}, want: tokenB + " " + tokenA},
		{name: "clients only", clients: true, want: ""},
		{name: "made", loopback: true, made: true},
		{name: "not loopback", wantErr: "--http 10.0.0.1:80 is not a loopback address: set a token (CRUCIBLE_TOKEN or serve.token) for the clients to present"},
	} {
		t.Setenv(EnvToken, c.env)
		cfg := config.Default()
		cfg.Serve.Token, cfg.Serve.Tokens = c.token, c.tokens
		if c.clients {
			cfg.Clients = map[string]config.Client{"ci": {}}
		}
		got, made, err := Anonymous(cfg, "10.0.0.1:80", c.loopback)
		switch {
		case c.wantErr != "":
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("%s: %v, want %q", c.name, err, c.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.made:
			if len(got) != 1 || got[0] != made || !config.TokenOK(made) {
				t.Errorf("%s: %q, made %q", c.name, got, made)
			}
		case strings.Join(got, " ") != c.want || made != "":
			t.Errorf("%s: %q, made %q; want %q", c.name, got, made, c.want)
		}
	}
}

// Named clients' tokens are read from their sources, each a token, none
// another's.
func TestLoadClients(t *testing.T) {
	t.Setenv("CRUCIBLE_TEST_CI", tokenA)
	t.Setenv("CRUCIBLE_TEST_BOT", tokenA)
	t.Setenv("CRUCIBLE_TEST_SHORT", "short")
	load := func(clients map[string]config.Client) (map[string]string, error) {
		cfg := config.Default()
		cfg.Clients = clients
		return LoadClients(cfg)
	}
	got, err := load(map[string]config.Client{"ci": {Token: config.SecretSource{From: "env:CRUCIBLE_TEST_CI"}}, "alice": {OAuth: map[string]string{"sub": "alice"}}})
	if err != nil || len(got) != 1 || got["ci"] != tokenA {
		t.Errorf("LoadClients: %q, %v", got, err)
	}
	for want, clients := range map[string]map[string]config.Client{
		"clients.bot.token: the same as clients.ai's: each client needs a token of its own": {
			"ai": {Token: config.SecretSource{From: "env:CRUCIBLE_TEST_CI"}}, "bot": {Token: config.SecretSource{From: "env:CRUCIBLE_TEST_BOT"}}},
		"clients.s.token: must be at least 16 characters, without spaces or line breaks": {"s": {Token: config.SecretSource{From: "env:CRUCIBLE_TEST_SHORT"}}},
	} {
		if _, err := load(clients); err == nil || err.Error() != want {
			t.Errorf("LoadClients: %v, want %q", err, want)
		}
	}
}
