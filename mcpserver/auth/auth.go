// Package auth says who presents a bearer token to crucible serve's HTTP
// faces: a named client (clients.NAME.token), or an anonymous one
// (CRUCIBLE_TOKEN, serve.token, serve.tokens), whose tokens it reads from
// the configuration and the environment once, at start, keeping only
// their digests (Tokens); or, with serve.oauth, the holder of an access
// token of its issuer, checked with the issuer's keys (Verifier). The
// HTTP answers (401, 403, their challenges, the resource's metadata) are
// the server's, not its.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync/atomic"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/randomid"
	"github.com/cruciblehq/crucible/sandbox"
)

// Tokens are the bearer tokens a server takes, as SHA-256 digests, each
// with its client's name ("" for an anonymous one). A token presented is
// hashed and compared with every digest in constant time: the time taken
// tells neither its length, nor how much of it is right, nor which token
// it is. A nil *Tokens takes none. A reload replaces them (Set).
type Tokens struct{ set atomic.Pointer[tokenSet] }

type tokenSet struct {
	known  []knownToken
	shared string // a named client whose token is anonymous too
}

type knownToken struct {
	digest [sha256.Size]byte
	name   string
}

// New are the anonymous tokens anon and the named clients' tokens, by
// name.
func New(anon []string, named map[string]string) *Tokens {
	ts := &tokenSet{}
	for _, t := range anon {
		ts.known = append(ts.known, knownToken{digest: sha256.Sum256([]byte(t))})
	}
	for _, name := range slices.Sorted(maps.Keys(named)) {
		ts.known = append(ts.known, knownToken{digest: sha256.Sum256([]byte(named[name])), name: name})
		if ts.shared == "" && slices.Contains(anon, named[name]) {
			ts.shared = name
		}
	}
	out := &Tokens{}
	out.set.Store(ts)
	return out
}

// Set makes ts take the tokens of other from now on.
func (ts *Tokens) Set(other *Tokens) { ts.set.Store(other.set.Load()) }

// Client returns the client of token if it is one of ts: its name, or, for
// an anonymous token, part of its digest, so that no token is kept in the
// server's maps or logs.
func (ts *Tokens) Client(token string) (string, bool) {
	if ts == nil {
		return "", false
	}
	known := ts.set.Load().known
	d := sha256.Sum256([]byte(token))
	match := -1
	for i := range known {
		match = subtle.ConstantTimeSelect(subtle.ConstantTimeCompare(d[:], known[i].digest[:]), i, match)
	}
	if match < 0 {
		return "", false
	}
	if n := known[match].name; n != "" {
		return n, true
	}
	return "token:" + hex.EncodeToString(known[match].digest[:8]), true
}

// Shared names a named client whose token is one of the anonymous tokens
// too, or is "": which would a request with it be?
func (ts *Tokens) Shared() string { return ts.set.Load().shared }

// LoadClients reads the named clients' bearer tokens of cfg, by name:
// each checked as a token and none shared by two clients. A client known
// by its OAuth claims has none.
func LoadClients(cfg *config.Config) (map[string]string, error) {
	out := map[string]string{}
	by := map[string]string{}
	for _, name := range cfg.ClientNames() {
		if cfg.Clients[name].Token.From == "" {
			continue // known by its OAuth claims
		}
		b, err := sandbox.ReadSource(cfg.Clients[name].Token.From)
		if err != nil {
			return nil, fmt.Errorf("clients.%s.token: %w", name, err)
		}
		t := string(b)
		if !config.TokenOK(t) {
			return nil, fmt.Errorf("clients.%s.token: must be at least 16 characters, without spaces or line breaks", name)
		}
		if other, ok := by[t]; ok {
			return nil, fmt.Errorf("clients.%s.token: the same as clients.%s's: each client needs a token of its own", name, other)
		}
		by[t], out[name] = name, t
	}
	return out, nil
}

// EnvToken is the environment variable whose token, when set, a server
// takes instead of serve.token.
const EnvToken = "CRUCIBLE_TOKEN"

// Anonymous are the anonymous bearer tokens of a server on addr (which
// listens on loopback only if loopback): $CRUCIBLE_TOKEN and serve.tokens,
// else serve.token and serve.tokens; else none when there are named
// clients; else, on loopback, one made now, which made is too (the caller
// shows it once).
func Anonymous(cfg *config.Config, addr string, loopback bool) (tokens []string, made string, err error) {
	if t := os.Getenv(EnvToken); t != "" {
		if !config.TokenOK(t) {
			return nil, "", errors.New("CRUCIBLE_TOKEN must be at least 16 characters, without spaces or line breaks")
		}
		return append([]string{t}, cfg.Serve.Tokens...), "", nil
	}
	if cfg.Serve.Token != "" {
		tokens = append(tokens, cfg.Serve.Token)
	}
	tokens = append(tokens, cfg.Serve.Tokens...)
	if len(tokens) > 0 || len(cfg.Clients) > 0 {
		return tokens, "", nil // named clients need no anonymous token
	}
	if !loopback {
		return nil, "", fmt.Errorf("--http %s is not a loopback address: set a token (CRUCIBLE_TOKEN or serve.token) for the clients to present", addr)
	}
	made = randomid.New("", 24)
	return []string{made}, made, nil
}
