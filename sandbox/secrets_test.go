package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/toolbridge"
)

const testValue = "sk-live-0123456789abcdef"

// LoadSecrets refuses every source it cannot use with one line that names
// the setting, and never the value or the file's path.
func TestLoadSecretsErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("CRUCIBLE_TEST_SHORT", "short")
	t.Setenv("CRUCIBLE_TEST_OK", testValue)
	t.Setenv("CRUCIBLE_TEST_EMPTY", "")
	long := strings.Repeat("x", 5000)
	t.Setenv("CRUCIBLE_TEST_LONG", long)
	noCerts := write("nocerts.pem", "not a certificate\n")
	for _, tc := range []struct {
		name, from, ca, want string
	}{
		{"unset", "env:CRUCIBLE_TEST_UNSET", "", `secrets["TOKEN"].from: the environment variable CRUCIBLE_TEST_UNSET is not set, or empty`},
		{"empty env", "env:CRUCIBLE_TEST_EMPTY", "", `secrets["TOKEN"].from: the environment variable CRUCIBLE_TEST_EMPTY is not set, or empty`},
		{"short", "env:CRUCIBLE_TEST_SHORT", "", `secrets["TOKEN"].from: the value is shorter than 8 bytes, too short to replace safely`},
		{"long", "env:CRUCIBLE_TEST_LONG", "", `secrets["TOKEN"].from: the value is longer than 4096 bytes`},
		{"missing file", "file:" + filepath.Join(dir, "private-name"), "", `secrets["TOKEN"].from: the file cannot be read: no such file or directory`},
		{"empty file", "file:" + write("empty", "\n"), "", `secrets["TOKEN"].from: the file is empty`},
		{"ca missing", "env:CRUCIBLE_TEST_OK", filepath.Join(dir, "private-ca"), `network.upstream_ca: the file cannot be read: no such file or directory`},
		{"ca without certs", "env:CRUCIBLE_TEST_OK", noCerts, `network.upstream_ca: the file holds no PEM certificate`},
	} {
		cfg := config.Default()
		cfg.Secrets = map[string]config.Secret{"TOKEN": {From: tc.from, Hosts: []string{"api.example.com"}}}
		cfg.Network.UpstreamCA = tc.ca
		s, err := LoadSecrets(cfg)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %s", tc.name, err, tc.want)
		}
		if s != nil {
			t.Errorf("%s: secrets returned with an error", tc.name)
		}
		if err != nil && (strings.Contains(err.Error(), "short") && tc.name != "short" || strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "xxxxxxxx")) {
			t.Errorf("%s: the error holds a value or a path: %v", tc.name, err)
		}
	}

	// Two secrets of one value: named both, the value not.
	cfg := config.Default()
	cfg.Secrets = map[string]config.Secret{
		"A": {From: "env:CRUCIBLE_TEST_OK", Hosts: []string{"a.example.com"}},
		"B": {From: "file:" + write("b", testValue+"\n"), Hosts: []string{"b.example.com"}},
	}
	if _, err := LoadSecrets(cfg); err == nil || !strings.Contains(err.Error(), `"A" and "B" have the same value`) || strings.Contains(err.Error(), testValue) {
		t.Errorf("one value twice: %v", err)
	}
	// A host rule that does not compile is named by its key.
	cfg.Secrets = map[string]config.Secret{"A": {From: "env:CRUCIBLE_TEST_OK", Hosts: []string{"ok.example.com", "*.com"}}}
	if _, err := LoadSecrets(cfg); err == nil || !strings.HasPrefix(err.Error(), `secrets["A"].hosts[1]: "*.com": `) {
		t.Errorf("a bad host rule: %v", err)
	}
	if err := CheckConfig(cfg); err == nil || !strings.HasPrefix(err.Error(), `secrets["A"].hosts[1]: "*.com": `) {
		t.Errorf("CheckConfig, a bad host rule: %v", err)
	}
	if s, err := LoadSecrets(config.Default()); s != nil || err != nil {
		t.Errorf("no secrets: %v, %v", s, err)
	}
}

// What an execution with secrets gets: placeholders of its own in its
// environment, the trusted certificates, the secrets' hosts allowed, and
// each secret for its own hosts only.
func TestExecutionSecrets(t *testing.T) {
	t.Setenv("CRUCIBLE_TEST_OK", testValue)
	t.Setenv("CRUCIBLE_TEST_OTHER", "another-value-0123")
	cfg := config.Default()
	cfg.Sandbox.Env = map[string]string{"SSL_CERT_FILE": "/mine.pem"}
	cfg.Secrets = map[string]config.Secret{
		"TOKEN": {From: "env:CRUCIBLE_TEST_OK", Hosts: []string{"api.example.com", "*.up.example.com:8443"}},
		"OTHER": {From: "env:CRUCIBLE_TEST_OTHER", Hosts: []string{"other.example.com"}},
	}
	s := loadSecrets(t, cfg)
	a, b := attached(t, cfg, Options{Secrets: s}), attached(t, cfg, Options{Secrets: s})
	env := func(x *execution, k string) string {
		for _, kv := range x.spec.Env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	pa, pb := env(a, "TOKEN"), env(b, "TOKEN")
	if len(pa) != len(testValue) || pa == testValue || pa == pb {
		t.Errorf("placeholders %q and %q: want the value's length, not the value, one per execution", pa, pb)
	}
	if !slices.IsSorted(a.spec.Env) || env(a, "SSL_CERT_FILE") != trustFile || env(a, "DENO_CERT") != trustFile {
		t.Errorf("env %q: want sorted, the trust file over the config's", a.spec.Env)
	}
	if strings.Contains(strings.Join(a.spec.Env, " "), testValue) {
		t.Error("the value is in the environment")
	}
	i := slices.IndexFunc(a.spec.Files, func(f jail.File) bool { return f.Path == trustFile })
	if i < 0 || !bytes.Contains(a.spec.Files[i].Data, s.ca.PEM()) || !slices.Contains(a.spec.Files[i].Over, "/etc/ssl/certs/ca-certificates.crt") {
		t.Error("the jail does not trust the CA")
	}
	if a.network == nil {
		t.Error("no network: the secrets' hosts must be reachable without network.allow")
	}
	for _, tc := range []struct {
		name string
		port uint16
		want []string
	}{
		{"api.example.com", 443, []string{"TOKEN"}},
		{"api.example.com", 8443, nil},
		{"x.up.example.com", 8443, []string{"TOKEN"}},
		{"other.example.com", 443, []string{"OTHER"}},
		{"evil.example.com", 443, nil},
	} {
		if got := a.secrets.forHost(tc.name, tc.port); !slices.Equal(got, tc.want) {
			t.Errorf("for %s:%d = %q, want %q", tc.name, tc.port, got, tc.want)
		}
	}

	// Redaction: the value in any form becomes the placeholder, and an
	// error keeps its type.
	se := &SetupError{Layer: "mount", Msg: "no " + testValue, Detail: testValue}
	err := a.secrets.redactErr(se)
	if !errors.As(err, &se) || strings.Contains(err.Error(), testValue) || se.Detail != pa {
		t.Errorf("redacted error %v (%+v)", err, se)
	}
	out := &Result{Stdout: "x" + testValue, Result: []byte(`"` + testValue + `"`), Violations: []Violation{{Reason: testValue}}}
	a.redact(out)
	if out.Stdout != "x"+pa || string(out.Result) != `"`+pa+`"` || out.Violations[0].Reason != pa {
		t.Errorf("redacted result %+v", out)
	}

	// Secrets in the configuration, none given: refused.
	x := newTrue(cfg, Options{})
	if err := x.attach(cfg); err == nil || !strings.Contains(err.Error(), "LoadSecrets") {
		t.Errorf("secrets not loaded: %v", err)
	}
}

// tokenSecrets is a configuration whose one secret, TOKEN, holds testValue
// for api.example.com, and its secrets, loaded.
func tokenSecrets(t *testing.T) (*config.Config, *Secrets) {
	t.Helper()
	t.Setenv("CRUCIBLE_TEST_OK", testValue)
	cfg := config.Default()
	cfg.Secrets = map[string]config.Secret{"TOKEN": {From: "env:CRUCIBLE_TEST_OK", Hosts: []string{"api.example.com"}}}
	return cfg, loadSecrets(t, cfg)
}

// loadSecrets is LoadSecrets(cfg), which must succeed.
func loadSecrets(t *testing.T, cfg *config.Config) *Secrets {
	t.Helper()
	s, err := LoadSecrets(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTrue is an execution of `true` in cfg's sandbox, not yet attached.
func newTrue(cfg *config.Config, opts Options) *execution {
	return newExecution(jailSpec(&cfg.Sandbox, []string{"true"}, nil), opts, nil)
}

// attached is newTrue's execution attached to cfg, which must succeed.
func attached(t *testing.T, cfg *config.Config, opts Options) *execution {
	t.Helper()
	x := newTrue(cfg, opts)
	if x.err != nil {
		t.Fatal(x.err)
	}
	if err := x.attach(cfg); err != nil {
		t.Fatal(err)
	}
	return x
}

// The streaming redactor finds a value cut across writes, and passes the
// rest on as it was.
func TestRedactor(t *testing.T) {
	_, s := tokenSecrets(t)
	e, err := s.forExecution()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := newRedactor(e.set, &out)
	for _, p := range []string{"a" + testValue[:5], testValue[5:] + "b\n", "c"} {
		if _, err := r.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	r.close()
	ph, _ := e.set.Placeholder("TOKEN")
	if out.String() != "a"+ph+"b\nc" {
		t.Errorf("got %q, want %q", out.String(), "a"+ph+"b\nc")
	}
}

// A pool's jails are built before their work: each gets placeholders of
// its own when it is built, and a pool of a configuration with secrets
// refuses to run without them. On each engine.
func TestPoolSecrets(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	secrets, s := tokenSecrets(t)
	onEngines(t, secrets, func(t *testing.T, cfg *config.Config) {
		p := enginePool(t, cfg, PoolOptions{Size: 2, Secrets: s})
		seen := map[string]bool{}
		for range 3 {
			x, err := p.Do(context.Background(), Job{Source: []byte(`return env.TOKEN`), File: "-"})
			if err != nil || x.ExitCode != 0 {
				t.Fatalf("%v %+v", err, x)
			}
			var ph string
			if err := json.Unmarshal(x.Result, &ph); err != nil || len(ph) != len(testValue) || ph == testValue || seen[ph] {
				t.Errorf("placeholder %s: want one of the value's length, new in each jail", x.Result)
			}
			seen[ph] = true
		}

		q := enginePool(t, cfg, PoolOptions{Size: 1})
		if _, err := q.Do(context.Background(), Job{Source: []byte(`return 1`), File: "-"}); err == nil || !strings.Contains(err.Error(), "LoadSecrets") {
			t.Errorf("secrets not given to the pool: %v", err)
		}
	})
}

// An answer on the tools channel that holds a value (here, the error that
// echoes a server's name) reaches the code with the placeholder instead.
func TestToolChannelRedacted(t *testing.T) {
	cfg, s := tokenSecrets(t)
	b, err := toolbridge.New(toolbridge.Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := attached(t, cfg, Options{Secrets: s, Tools: &Tools{bridge: b, maxLine: 1 << 16, records: 8}})
	x.tools.serve("test", toolbridge.Caller{})
	defer x.tools.Stop()
	code, err := net.FileConn(x.tools.Peer())
	if err != nil {
		t.Fatal(err)
	}
	defer code.Close()
	if _, err := io.WriteString(code, `{"id":1,"method":"call","server":"`+testValue+`","tool":"t","args":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	answer, err := bufio.NewReader(code).ReadString('\n')
	ph, _ := x.secrets.set.Placeholder("TOKEN")
	if err != nil || strings.Contains(answer, testValue) || !strings.Contains(answer, ph) {
		t.Errorf("answer %q (%v): want the placeholder %s in place of the value", answer, err, ph)
	}
}

// config refuses, as a secret's name, every variable the sandbox sets in
// a jail: a secret must never shadow one (config keeps its own list).
func TestSecretNamesNotTheSandboxs(t *testing.T) {
	names := slices.Collect(maps.Keys(defaultEnv))
	names = append(names, trustEnv...)
	for _, name := range names {
		cfg := config.Default()
		cfg.Secrets = map[string]config.Secret{name: {From: "env:X", Hosts: []string{"a.test"}}}
		if err := cfg.Validate(); err == nil {
			t.Errorf("a secret named %s was taken", name)
		}
	}
}

// An aws_sigv4 secret: its key pair read once, with errors that name the
// setting; the jail gets a placeholder of each in NAME_ACCESS_KEY_ID and
// NAME_SECRET_ACCESS_KEY, never a value; its hosts get a signer and no
// swap; both values are redacted.
func TestSigV4Secrets(t *testing.T) {
	const id, key = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	t.Setenv("CRUCIBLE_TEST_ID", id)
	t.Setenv("CRUCIBLE_TEST_KEY", key)
	t.Setenv("CRUCIBLE_TEST_BAD_ID", "AKIA/not-an-id-0123")
	t.Setenv("CRUCIBLE_TEST_SHORT", "short")
	secret := func(idFrom, keyFrom string) map[string]config.Secret {
		return map[string]config.Secret{"AWS": {Kind: config.KindAWSSigV4, Hosts: []string{"s3.eu-west-1.amazonaws.com"},
			Region: "eu-west-1", Service: "s3",
			AccessKeyID: config.SecretSource{From: idFrom}, SecretAccessKey: config.SecretSource{From: keyFrom}}}
	}
	for _, tc := range []struct{ id, key, want string }{
		{"env:CRUCIBLE_TEST_UNSET", "env:CRUCIBLE_TEST_KEY", `secrets["AWS"].access_key_id.from: the environment variable CRUCIBLE_TEST_UNSET is not set, or empty`},
		{"env:CRUCIBLE_TEST_BAD_ID", "env:CRUCIBLE_TEST_KEY", `secrets["AWS"].access_key_id.from: the value is not an access key id: 16 to 128 letters, digits or _`},
		{"env:CRUCIBLE_TEST_ID", "env:CRUCIBLE_TEST_SHORT", `secrets["AWS"].secret_access_key.from: the value is shorter than 8 bytes, too short to replace safely`},
		{"env:CRUCIBLE_TEST_ID", "file:" + filepath.Join(t.TempDir(), "aws"), `secrets["AWS"].secret_access_key.from: the file cannot be read: no such file or directory`},
	} {
		cfg := config.Default()
		cfg.Secrets = secret(tc.id, tc.key)
		if _, err := LoadSecrets(cfg); err == nil || err.Error() != tc.want {
			t.Errorf("err = %v, want %s", err, tc.want)
		}
	}

	cfg := config.Default()
	cfg.Secrets = secret("env:CRUCIBLE_TEST_ID", "env:CRUCIBLE_TEST_KEY")
	x := attached(t, cfg, Options{Secrets: loadSecrets(t, cfg)})
	env := strings.Join(x.spec.Env, "\n")
	phID, _ := x.secrets.set.Placeholder("AWS_ACCESS_KEY_ID")
	phKey, _ := x.secrets.set.Placeholder("AWS_SECRET_ACCESS_KEY")
	if !strings.Contains(env, "AWS_ACCESS_KEY_ID="+phID+"\n") || !strings.Contains(env, "AWS_SECRET_ACCESS_KEY="+phKey+"\n") ||
		len(phKey) != len(key) || strings.Contains(env, id) || strings.Contains(env, key) || strings.Contains(env, "AWS=") {
		t.Errorf("the jail's environment:\n%s", env)
	}
	if got := x.secrets.forHost("s3.eu-west-1.amazonaws.com", 443); got != nil {
		t.Errorf("for the signed host = %q, want no secret swapped", got)
	}
	if name, sg := x.secrets.signerFor("s3.eu-west-1.amazonaws.com", 443); name != "AWS" || sg == nil {
		t.Errorf("the signed host's signer: %q, %v", name, sg)
	}
	if _, sg := x.secrets.signerFor("evil.example.com", 443); sg != nil {
		t.Error("another host has a signer")
	}
	if got := x.secrets.redact(id + " " + key); got != phID+" "+phKey {
		t.Errorf("redacted %q", got)
	}
}
