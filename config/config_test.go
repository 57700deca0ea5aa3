package config

import (
	"errors"
	"flag"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseByteSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want ByteSize
	}{
		{"0", 0},
		{"1", 1},
		{"4096", 4096},
		{"100B", 100},
		{"1K", KiB},
		{"1k", KiB},
		{"1Ki", KiB},
		{"1KiB", KiB},
		{"1kib", KiB},
		{"1KIB", KiB},
		{"512MiB", 512 * MiB},
		{"512M", 512 * MiB},
		{"512m", 512 * MiB},
		{"512 MiB", 512 * MiB},
		{" 64Mi ", 64 * MiB},
		{"2GiB", 2 * GiB},
		{"1TiB", TiB},
		{"1.5GiB", 3 * GiB / 2},
		{"0.5K", 512},
		{"0.25KiB", 256},
		{"007MiB", 7 * MiB},
		{"9223372036854775807", math.MaxInt64},
		{"8388607TiB", 8388607 * TiB},
	} {
		got, err := ParseByteSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseByteSizeErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", `"" is not a size (use e.g. 512MiB)`},
		{"12XB", `"12XB" is not a size (use e.g. 512MiB)`},
		{"MiB", `"MiB" is not a size (use e.g. 512MiB)`},
		{"64MB", `"64MB": decimal units are not accepted, sizes are binary (use e.g. 64MiB)`},
		{"1kb", `"1kb": decimal units are not accepted, sizes are binary (use e.g. 1KiB)`},
		{"2 GB", `"2 GB": decimal units are not accepted, sizes are binary (use e.g. 2GiB)`},
		{"1TB", `"1TB": decimal units are not accepted, sizes are binary (use e.g. 1TiB)`},
		{"1PiB", `"1PiB" is not a size (use e.g. 512MiB)`},
		{"-1", `"-1" is negative`},
		{"-5MiB", `"-5MiB" is negative`},
		{"+5MiB", `"+5MiB" is not a size (use e.g. 512MiB)`},
		{"0.1K", `"0.1K" is not a whole number of bytes`},
		{"1.5", `"1.5" is not a whole number of bytes`},
		{".5K", `".5K" is not a size (use e.g. 512MiB)`},
		{"5.K", `"5.K" is not a size (use e.g. 512MiB)`},
		{"1e6", `"1e6" is not a size (use e.g. 512MiB)`},
		{"0x10", `"0x10" is not a size (use e.g. 512MiB)`},
		{"1_000", `"1_000" is not a size (use e.g. 512MiB)`},
		{"1 000", `"1 000" is not a size (use e.g. 512MiB)`},
		{"9223372036854775808", `"9223372036854775808" is too large`},
		{"8388608TiB", `"8388608TiB" is too large`},
		{"99999999999999999999999GiB", `"99999999999999999999999GiB" is too large`},
		{strings.Repeat("9", 100), `"999999999999999999999999999999999999999999999999"... is too long to be a size`},
	} {
		_, err := ParseByteSize(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseByteSize(%q) error = %v; want %s", tt.in, err, tt.want)
		}
	}
}

func TestByteSizeString(t *testing.T) {
	for _, tt := range []struct {
		in   ByteSize
		want string
	}{
		{0, "0B"},
		{1000, "1000B"},
		{KiB, "1KiB"},
		{1536 * KiB, "1536KiB"},
		{512 * MiB, "512MiB"},
		{3 * GiB / 2, "1536MiB"},
		{2 * TiB, "2TiB"},
		{-MiB, "-1MiB"},
		{math.MaxInt64, "9223372036854775807B"},
	} {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("ByteSize(%d).String() = %q; want %q", int64(tt.in), got, tt.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "30s", want: 30 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "1.5h", want: 90 * time.Minute},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "-5s", want: -5 * time.Second}, // Validate rejects it, with the key
		{in: "30", err: `"30" has no unit (use e.g. 30s or 5m)`},
		{in: "0", err: `"0" has no unit (use e.g. 30s or 5m)`},
		{in: "1.5", err: `"1.5" has no unit (use e.g. 30s or 5m)`},
		{in: "30 s", err: `"30 s" is not a duration (use e.g. 30s, 5m or 1h30m)`},
		{in: "1d", err: `"1d" is not a duration (use e.g. 30s, 5m or 1h30m)`},
		{in: "", err: `"" is not a duration (use e.g. 30s, 5m or 1h30m)`},
		{in: "999999999999h", err: `"999999999999h" is not a duration (use e.g. 30s, 5m or 1h30m)`},
	} {
		var d Duration
		err := d.UnmarshalText([]byte(tt.in))
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("Duration %q: error %v; want %s", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || time.Duration(d) != tt.want):
			t.Errorf("Duration %q = %v, %v; want %v", tt.in, time.Duration(d), err, tt.want)
		}
	}
}

// The CLI can bind flags straight to the fields, with the file's grammar.
func TestFlags(t *testing.T) {
	c := Default()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	fs.TextVar(&c.Sandbox.Memory, "memory", c.Sandbox.Memory, "")
	fs.TextVar(&c.Sandbox.Timeout, "timeout", c.Sandbox.Timeout, "")
	if err := fs.Parse([]string{"-memory", "1GiB", "-timeout", "2m"}); err != nil {
		t.Fatal(err)
	}
	if c.Sandbox.Memory != GiB || c.Sandbox.Timeout != Duration(2*time.Minute) {
		t.Errorf("flags set memory=%v timeout=%v", c.Sandbox.Memory, c.Sandbox.Timeout)
	}
	if err := fs.Parse([]string{"-memory", "1GB"}); err == nil {
		t.Error("-memory 1GB accepted")
	}
}

func TestDefault(t *testing.T) {
	want := Sandbox{
		Timeout:   Duration(30 * time.Second),
		Memory:    512 * MiB,
		Pids:      128,
		CPUs:      1,
		TmpSize:   64 * MiB,
		MaxOutput: MiB,
	}
	c := Default()
	if !reflect.DeepEqual(c.Sandbox, want) {
		t.Errorf("Default() = %+v; want %+v", c.Sandbox, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	for _, in := range []string{"", "\n", "# only a comment\n", "---\n", "~\n", "sandbox:\n", "sandbox: {}\n", "sandbox:\n  memory:\n  ro:\n"} {
		c, err := Parse([]byte(in), "crucible.yaml")
		if err != nil || !sameConfig(c, Default()) {
			t.Errorf("Parse(%q) = %+v, %v; want the defaults", in, c, err)
		}
	}
}

func TestLoadFull(t *testing.T) {
	c, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Sandbox{
		Timeout:         Duration(90 * time.Second),
		Memory:          1536 * MiB,
		Pids:            256,
		CPUs:            0.5,
		TmpSize:         128 * MiB,
		Workspace:       "/srv/crucible/work",
		UnsafeWorkspace: true,
		RO:              []string{"/opt/data", "/usr/share/dict"},
		Env:             map[string]string{"LANG": "C.UTF-8", "_PRIVATE_FLAG": "1"},
		MaxOutput:       4 * MiB,
		AllowDegraded:   []string{"landlock", "cgroup"},
	}
	if !reflect.DeepEqual(c.Sandbox, want) {
		t.Errorf("Load(full.yaml) =\n%+v\nwant\n%+v", c.Sandbox, want)
	}
	wantNet := Network{
		Allow:          []string{"api.github.com", "*.example.com:8443", "1.1.1.1:53"},
		Deny:           []string{"evil.example.com"},
		DenyReasons:    map[string]string{"evil.example.com": "use the mirror instead"},
		AllowAll:       true,
		AllowPrivate:   []string{"10.0.0.0/8"},
		Hosts:          map[string]string{"internal.example.com": "10.1.2.3"},
		Resolver:       "127.0.0.53:53",
		MaxConnections: 16,
		MaxBytesOut:    1 * MiB,
		MaxBytesIn:     16 * MiB,
		IdleTimeout:    Duration(10 * time.Second),
		UpstreamCA:     "/etc/crucible/upstream-ca.pem",
	}
	if !reflect.DeepEqual(c.Network, wantNet) {
		t.Errorf("Load(full.yaml).Network =\n%+v\nwant\n%+v", c.Network, wantNet)
	}

	wantServers := map[string]Server{
		"github": {Command: "/usr/local/bin/github-mcp-server", Args: []string{"stdio", "--read-only"},
			Env: map[string]string{"GITHUB_TOKEN": "ghp_example"}, Cwd: "/srv/mcp/github",
			Tools:     ToolFilter{Allow: []string{"get_*", "search_issues"}, Deny: []string{"get_secret"}},
			Resources: ToolFilter{Allow: []string{"repo://acme/*"}, Deny: []string{"repo://acme/secrets/*"}},
			Rules: []CallRule{{Tools: []string{"create_issue", "update_issue"}, AllowIf: `args.owner == "acme" && size(args.body) < 20000`, Reason: "issues only in the acme org"},
				{Tools: []string{"delete_*"}, Approve: true}},
			Group: "private", Timeout: Duration(10 * time.Second), ApprovalTimeout: Duration(5 * time.Minute),
			Shared: true, MaxClients: 8, IdleTimeout: Duration(5 * time.Minute),
			Jail: true, RO: []string{"/srv/mcp/github"},
			Network: Network{Allow: []string{"api.github.com"}, MaxConnections: 8},
			Limits:  ServerLimits{Memory: 256 * MiB, Pids: 64, CPUs: 0.5}},
		"docs": {URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer example"}},
		"tracker": {URL: "https://mcp.tracker.example/mcp", OAuth: &ServerOAuth{ClientID: "crucible-acme",
			ClientSecret: SecretSource{From: "env:CRUCIBLE_TRACKER_SECRET"}, Scopes: []string{"issues:read"}, Grant: GrantClientCredentials}},
	}
	if !reflect.DeepEqual(c.Servers, wantServers) {
		t.Errorf("Load(full.yaml).Servers =\n%+v\nwant\n%+v", c.Servers, wantServers)
	}
	if want := (Tools{MaxCalls: 20, MaxArgSize: 64 * KiB, MaxResultSize: 2 * MiB}); c.Tools != want {
		t.Errorf("Load(full.yaml).Tools = %+v; want %+v", c.Tools, want)
	}
	wantSecrets := map[string]Secret{"GITHUB_TOKEN": {From: "env:CRUCIBLE_GITHUB_TOKEN", Hosts: []string{"api.github.com"},
		In: []string{"header"}, Headers: []string{"Authorization"}},
		"AWS": {Kind: KindAWSSigV4, Hosts: []string{"s3.eu-west-1.amazonaws.com"}, Region: "eu-west-1", Service: "s3",
			AccessKeyID: SecretSource{From: "env:CRUCIBLE_AWS_ACCESS_KEY_ID"}, SecretAccessKey: SecretSource{From: "file:/run/secrets/aws"}}}
	if !reflect.DeepEqual(c.Secrets, wantSecrets) {
		t.Errorf("Load(full.yaml).Secrets = %+v; want %+v", c.Secrets, wantSecrets)
	}
	wantAPIs := map[string]API{"github": {Description: "GitHub's REST API", Hosts: []string{"api.github.com"}, Secrets: []string{"GITHUB_TOKEN"},
		Docs: "/etc/crucible/github-openapi.json", Rules: []APIRule{{Allow: "GET /repos/**"}, {Allow: "POST /repos/{owner}/{repo}/issues", If: `request.params.owner == "acme"`}, {Deny: "DELETE /**"}}}}
	if !reflect.DeepEqual(c.APIs, wantAPIs) {
		t.Errorf("Load(full.yaml).APIs = %+v; want %+v", c.APIs, wantAPIs)
	}
	wantServe := Serve{Token: "0123456789abcdef0123", Tokens: []string{"fedcba9876543210fedc"}, AllowedOrigins: []string{"http://localhost:3000"}, MaxConcurrent: 8,
		BusyWait: Duration(500 * time.Millisecond), Rate: 2.5, Burst: 5, WorkspaceTTL: Duration(10 * time.Minute), MaxWorkspaces: 64,
		MaxWorkspaceBytes: 8 * GiB, MaxBody: 1 * MiB, MaxResultOutput: 8 * KiB, Pool: 1, TypeCheck: true, Skills: "/srv/crucible/skills", SkillsWritable: true, SavedSkills: "/srv/crucible/saved-skills",
		AllowedHosts: []string{"crucible.example.com"}, OpsPublic: true, MaxWorkspacesPerClient: 8, MaxSessionsPerClient: 4, SkillsPerClient: 8, SkillBytesPerClient: 1 * MiB, DrainTimeout: Duration(2 * time.Minute),
		OAuth:    OAuth{Issuer: "https://auth.example.com", Audience: "https://crucible.example.com/mcp", Scopes: []string{"crucible"}, JWKSURL: "https://auth.example.com/jwks.json"},
		OTel:     OTel{Endpoint: "http://otel-collector:4318", ServiceName: "crucible-team"},
		Replicas: Replicas{Name: "crucible-0", Peer: "http://{name}.crucible-peers:8080", Key: SecretSource{From: "file:/etc/crucible/replica-key"}}}
	if want := map[string]Client{"ci": {Token: SecretSource{From: "env:CRUCIBLE_TOKEN_CI"}}, "alice": {OAuth: map[string]string{"sub": "alice@example.com"}}}; !reflect.DeepEqual(c.Clients, want) {
		t.Errorf("Load(full.yaml).Clients = %+v; want %+v", c.Clients, want)
	}
	if !reflect.DeepEqual(c.Serve, wantServe) {
		t.Errorf("Load(full.yaml).Serve = %+v; want %+v", c.Serve, wantServe)
	}

	// Every field is set away from its default, so the example exercises
	// every field's decoder.
	for _, sec := range [][2]any{{c.Sandbox, Default().Sandbox}, {c.Network, Default().Network}, {c.Tools, Default().Tools}, {c.Serve, Default().Serve},
		{c.Servers["github"], Server{URL: "x", Headers: map[string]string{}, OAuth: &ServerOAuth{}}}, {*c.Servers["tracker"].OAuth, ServerOAuth{}}, {c.Servers["docs"], Server{Command: "x", OAuth: &ServerOAuth{}, Args: []string{}, Env: map[string]string{}, Cwd: "x", Tools: ToolFilter{Allow: []string{"x"}}, Resources: ToolFilter{Allow: []string{"x"}}, Rules: []CallRule{{}}, Group: "x", Timeout: 1, ApprovalTimeout: 1, Shared: true, MaxClients: 1, IdleTimeout: 1,
			Jail: true, RO: []string{}, Network: Network{MaxConnections: 1}, Limits: ServerLimits{Pids: 1}}}} {
		got, def := reflect.ValueOf(sec[0]), reflect.ValueOf(sec[1])
		for i := range got.NumField() {
			if reflect.DeepEqual(got.Field(i).Interface(), def.Field(i).Interface()) {
				t.Errorf("full.yaml leaves %s at its default", got.Type().Field(i).Name)
			}
		}
	}

	// What yaml.v3 encodes parses back to the same thing.
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out, "marshalled")
	if err != nil || !sameConfig(again, c) {
		t.Errorf("round trip of\n%s= %+v, %v", out, again, err)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tt := range []struct{ path, want string }{
		{"testdata/unknown_key.yaml", `testdata/unknown_key.yaml:3: unknown key "memroy" in sandbox`},
		{"testdata/bad_value.yaml", `testdata/bad_value.yaml:4: sandbox.memory: "64MB": decimal units are not accepted, sizes are binary (use e.g. 64MiB)`},
	} {
		_, err := Load(tt.path)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Load(%s) error = %v; want %s", tt.path, err, tt.want)
		}
	}
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v; want ErrNotExist", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		// Shape and keys.
		{"sandbx:\n  memory: 1GiB\n", `c.yaml:1: unknown key "sandbx"`},
		{"# comment\n\ntoolz: {}\n", `c.yaml:3: unknown key "toolz"`},
		// Servers and tools.
		{"servers:\n  gh:\n    command: x\n    jial: true\n", `c.yaml:4: unknown key "jial" in servers["gh"]`},
		{"servers:\n  gh:\n    url: http://a/\n    jail: true\n", `c.yaml:4: servers["gh"].jail: is for a stdio server (a command); a url server runs elsewhere`},
		{"servers:\n  gh:\n    command: x\n    ro: [/opt]\n", `c.yaml:4: servers["gh"].ro: is for a jailed server: add jail: true (a stdio server only)`},
		{"servers:\n  gh:\n    command: x\n    network: {allow: [a.test]}\n", `c.yaml:4: servers["gh"].network: is for a jailed server: add jail: true (a stdio server only)`},
		{"servers:\n  gh:\n    command: x\n    limits: {pids: 20}\n", `c.yaml:4: servers["gh"].limits: is for a jailed server: add jail: true (a stdio server only)`},
		{"servers:\n  gh:\n    command: x\n    jail: true\n    ro: [opt]\n", `c.yaml:5: servers["gh"].ro[0]: "opt" is not an absolute path`},
		{"servers:\n  gh:\n    command: x\n    jail: true\n    ro: [/proc/1]\n", `c.yaml:5: servers["gh"].ro[0]: "/proc/1" is inside /proc, which must not be mounted into the sandbox`},
		{"servers:\n  gh:\n    command: x\n    jail: true\n    network:\n      max_connections: 5000\n", `c.yaml:6: servers["gh"].network.max_connections: must be between 1 and 4096, not 5000`},
		{"servers:\n  gh:\n    command: x\n    jail: true\n    network:\n      resolver: x\n", `c.yaml:6: servers["gh"].network.resolver: "x" is not ip:port (e.g. 1.1.1.1:53 or [::1]:53)`},
		{"servers:\n  gh:\n    command: x\n    jail: true\n    network: {alow: [a]}\n", `c.yaml:5: unknown key "alow" in servers["gh"].network`},
		{"servers:\n  gh:\n    command: x\n    jail: true\n    limits:\n      pids: 5\n", `c.yaml:6: servers["gh"].limits.pids: must be between 16 and 65536, not 5 (the jail's own processes count too)`},
		{"servers:\n  gh:\n    command: x\n    jail: true\n    limits:\n      memory: 1MiB\n", `c.yaml:6: servers["gh"].limits.memory: must be at least 16MiB, not 1MiB`},
		{"servers:\n  gh:\n    command: x\n    jail: true\n    limits: {timeout: 1s}\n", `c.yaml:5: unknown key "timeout" in servers["gh"].limits`},
		{"servers:\n  my-gh:\n    command: x\n", `c.yaml:2: servers["my-gh"]: the name must be an identifier: letters, digits and _, not starting with a digit`},
		{"servers:\n  gh:\n    args: [x]\n", `c.yaml:2: servers["gh"]: needs a command (a stdio server) or a url (a Streamable HTTP server)`},
		{"servers:\n  gh:\n", `c.yaml:2: servers["gh"]: needs a command (a stdio server) or a url (a Streamable HTTP server)`},
		{"servers:\n  gh: {command: x, url: \"http://a\"}\n", `c.yaml:2: servers["gh"]: has both a command and a url; a server is one or the other`},
		{"servers:\n  gh:\n    url: ftp://a/\n", `c.yaml:3: servers["gh"].url: "ftp://a/" is not an http or https URL`},
		{"servers:\n  gh:\n    url: http://a/\n    env: {A: b}\n", `c.yaml:4: servers["gh"].env: is for a command; a url server takes headers`},
		{"servers:\n  gh:\n    command: x\n    headers: {A: b}\n", `c.yaml:4: servers["gh"].headers: is for a url; a command server takes env`},
		{"servers:\n  gh:\n    url: http://a/\n    headers: {\"A B\": c}\n", `c.yaml:4: servers["gh"].headers["A B"]: not a valid header name`},
		{"servers:\n  gh:\n    command: x\n    oauth: {}\n", `c.yaml:4: servers["gh"].oauth: is for a url; a command server takes env`},
		{"serve:\n  otel: {endpoint: collector:4318}\n", `c.yaml:2: serve.otel.endpoint: "collector:4318" is not an http or https URL`},
		{"servers:\n  gh:\n    url: http://a/\n    oauth: {grant: password}\n", `c.yaml:4: servers["gh"].oauth.grant: "password" is not authorization_code or client_credentials`},
		{"servers:\n  gh:\n    url: http://a/\n    oauth: {grant: client_credentials}\n", `c.yaml:4: servers["gh"].oauth.grant: client_credentials needs a pre-registered client_id and its client_secret`},
		{"servers:\n  gh:\n    url: http://a/\n    oauth: {client_secret: {from: env:S}}\n", `c.yaml:4: servers["gh"].oauth.client_secret: needs client_id, the client it is the secret of`},
		{"servers:\n  gh:\n    url: http://a/\n    oauth: {client_id: a, client_secret: {from: hunter2}}\n", `c.yaml:4: servers["gh"].oauth.client_secret.from: must be env:VAR or file:/absolute/path`},
		{"servers:\n  gh:\n    url: http://a/\n    oauth: {client_id: \"https://c.example/\"}\n", `c.yaml:4: servers["gh"].oauth.client_id: "https://c.example/" is not the URL of a Client ID Metadata Document (an https URL with a path)`},
		{"servers:\n  gh:\n    url: http://a/\n    oauth: {client_id: \"https://c.example/c.json\", client_secret: {from: env:S}}\n", `c.yaml:4: servers["gh"].oauth.client_secret: is for a pre-registered client; a Client ID Metadata Document's client has none`},
		{"servers:\n  gh:\n    url: http://a/\n    oauth: {scopes: [\"a b\"]}\n", `c.yaml:4: servers["gh"].oauth.scopes[0]: "a b" is not a scope (no spaces, quotes or backslashes)`},
		{"servers:\n  gh:\n    url: http://a/\n    oauth: {}\n    headers: {authorization: x}\n", `c.yaml:5: servers["gh"].headers["authorization"]: is oauth's to set; a server logs in one way`},
		{"servers:\n  gh:\n    command: x\n    env: {1A: b}\n", `c.yaml:4: servers["gh"].env["1A"]: not a valid variable name (letters, digits and _, not starting with a digit)`},
		{"servers:\n  gh:\n    command: x\n    cwd: rel\n", `c.yaml:4: servers["gh"].cwd: "rel" is not an absolute path`},
		{"servers:\n  gh:\n    command: x\n    tools: {deny: [\"[a\"]}\n", `c.yaml:4: servers["gh"].tools.deny[0]: "[a" is not a tool name pattern: a '[' with no ']' (use e.g. get_*, *_issue or [a-c]*)`},
		{"servers:\n  gh:\n    command: x\n    rules:\n      - tools: [x]\n        allow_if: 'args.owner =='\n", `c.yaml:6: servers["gh"].rules[0].allow_if: at character 14 of the condition: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`},
		{"servers:\n  gh:\n    command: x\n    rules:\n      - tools: [x]\n        allow_if: 'request.method == \"a\"'\n", `c.yaml:6: servers["gh"].rules[0].allow_if: at character 1 of the condition: undeclared reference to 'request'`},
		{"servers:\n  gh:\n    command: x\n    resources: {allow: [\"\"]}\n", `c.yaml:4: servers["gh"].resources.allow[0]: "" is not a resource URI pattern: an empty pattern (use e.g. file:///data/*)`},
		{"servers:\n  gh:\n    command: x\n    timeout: 25h\n", `c.yaml:4: servers["gh"].timeout: must be at most 24h (0 means 30s), not 25h0m0s`},
		{"servers:\n  gh:\n    command: x\n    max_clients: 2000\n", `c.yaml:4: servers["gh"].max_clients: must be between 1 and 1024 (0 means 16), not 2000`},
		{"servers:\n  gh:\n    command: x\n    approval_timeout: 25h\n", `c.yaml:4: servers["gh"].approval_timeout: must be at most 24h (0 means 2m), not 25h0m0s`},
		{"servers:\n  gh:\n    command: x\n    rules: [{tools: [x], allow_if: ''}]\n", `c.yaml:4: servers["gh"].rules[0].allow_if: is empty (give a condition, e.g. args.owner == "acme", or approve: true)`},
		{"servers: [gh]\n", `c.yaml:1: servers: must be a mapping, not a list`},
		{"clients:\n  CI: {token: {from: env:X}}\n", `c.yaml:2: clients["CI"]: the name must be lowercase letters, digits, _ and -, starting with a letter, at most 64`},
		{"clients:\n  stdio: {token: {from: env:X}}\n", `c.yaml:2: clients["stdio"]: "stdio" names a client of its own already (stdio, local, catalog are taken)`},
		{"clients:\n  ci: {token: {from: env:X}, profile: dev}\n", `c.yaml:2: clients["ci"].profile: "dev" is not in the profiles section`},
		{"profiles:\n  dev: {servers: [gh]}\n", `c.yaml:2: profiles["dev"].servers[0]: "gh" is not in the servers section`},
		{"secrets:\n  T: {from: env:T, hosts: [x.test]}\napis:\n  gh: {hosts: [x.test], secrets: [T]}\nprofiles:\n  dev: {apis: [gh]}\n", `c.yaml:6: profiles["dev"].apis: the API gh takes the secret T, which the profile does not have: add it to its secrets, or leave the API out`},
		{"profiles:\n  dev: {tools: {max_calls: 1000}}\n", `c.yaml:2: profiles["dev"].tools.max_calls: can only lower the top level's 50, not raise it to 1000`},
		{"profiles:\n  dev: {limits: {memory: 4GiB}}\n", `c.yaml:2: profiles["dev"].limits.memory: can only lower the top level's 512MiB, not raise it to 4GiB`},
		{"network:\n  allow: [a.example.com]\nprofiles:\n  dev: {network: {allow: [b.example.com]}}\n", `c.yaml:4: profiles["dev"].network.allow[0]: "b.example.com" is not one of network.allow's rules: a profile can only keep some of them`},
		{"profiles:\n  dev: {skills: {writable: true}}\n", `c.yaml:2: profiles["dev"].skills: needs dir, the profile's own directory of skills`},
		{"serve:\n  skills: /srv/s\n  skills_writable: true\n  saved_skills: /srv/s/saved\n", `c.yaml:4: serve.saved_skills: "/srv/s/saved" must be outside every skills directory, which a jail sees whole, and hold none`},
		{"serve:\n  skills: /srv/s\nprofiles:\n  dev: {skills: {dir: /srv/d, writable: true, saved: /srv}}\n", `c.yaml:4: profiles["dev"].skills.saved: "/srv" must be outside every skills directory, which a jail sees whole, and hold none`},
		{"clients:\n  al: {oauth: {sub: a}}\n", `c.yaml:2: clients["al"].oauth: needs serve.oauth, the issuer whose tokens carry the claims`},
		{"serve:\n  oauth: {issuer: http://auth.example.com, audience: https://c.example.com/mcp}\n", `c.yaml:2: serve.oauth.issuer: "http://auth.example.com" is not an https URL (http only on loopback)`},
		{"clients:\n  ci: {}\n", `c.yaml:2: clients["ci"].token: needs from: env:VAR or file:/absolute/path, where its bearer token is (or oauth: claims)`},
		{"clients:\n  ci: {token: {from: s3cr3t-token-value}}\n", `c.yaml:2: clients["ci"].token.from: must be env:VAR or file:/absolute/path`},
		{"apis:\n  gh:\n    hosts: [x.test]\n    rules:\n      - allow: GET /x\n        if: 'request.query.q =='\n", `c.yaml:6: apis["gh"].rules[0].if: at character 19 of the condition: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`},
		{"apis:\n  gh:\n    hosts: [x.test]\n    rules:\n      - allow: GET /x\n        if: 'args.x == 1'\n", `c.yaml:6: apis["gh"].rules[0].if: at character 1 of the condition: undeclared reference to 'args'`},
		{"tools:\n  max_calls: 0\n", `c.yaml:2: tools.max_calls: must be between 1 and 100000, not 0`},
		{"tools:\n  max_arg_size: 1\n", `c.yaml:2: tools.max_arg_size: must be between 1KiB and 64MiB, not 1B`},
		{"tools:\n  max_result_size: 1GiB\n", `c.yaml:2: tools.max_result_size: must be between 1KiB and 64MiB, not 1GiB`},
		// Secrets.
		{"secrets:\n  1A: {from: env:X, hosts: [a.test]}\n", `c.yaml:2: secrets["1A"]: the name must be an environment variable name: letters, digits and _, not starting with a digit`},
		{"secrets:\n  PATH: {from: env:X, hosts: [a.test]}\n", `c.yaml:2: secrets["PATH"]: "PATH" is set by the sandbox itself; choose another name`},
		{"secrets:\n  SSL_CERT_FILE: {from: env:X, hosts: [a.test]}\n", `c.yaml:2: secrets["SSL_CERT_FILE"]: "SSL_CERT_FILE" is set by the sandbox itself; choose another name`},
		{"sandbox:\n  env: {K: v}\nsecrets:\n  K: {from: env:X, hosts: [a.test]}\n", `c.yaml:4: secrets["K"]: "K" is also set in sandbox.env; a variable is one or the other`},
		{"secrets:\n  K: {from: X, hosts: [a.test]}\n", `c.yaml:2: secrets["K"].from: must be env:VAR or file:/absolute/path`},
		{"secrets:\n  K: {from: file:rel, hosts: [a.test]}\n", `c.yaml:2: secrets["K"].from: must be env:VAR or file:/absolute/path`},
		{"secrets:\n  K: {from: env:X}\n", `c.yaml:2: secrets["K"].hosts: must name at least one host that may receive the secret (or an api must list it)`},
		{"secrets:\n  K: {from: env:X, hosts: [a.test], value: x}\n", `c.yaml:2: unknown key "value" in secrets["K"]`},
		{"secrets:\n  K: {from: env:X, hosts: [a.test], in: [cookie]}\n", `c.yaml:2: secrets["K"].in[0]: "cookie" is not a place: want header, query, path, body`},
		{"secrets:\n  K: {from: env:X, hosts: [a.test], in: [body], headers: [Authorization]}\n", `c.yaml:2: secrets["K"].headers: names headers, but in does not allow header`},
		{"secrets:\n  K: {from: env:X, hosts: [a.test], headers: [\"Bad Name\"]}\n", `c.yaml:2: secrets["K"].headers[0]: "Bad Name" is not a header name`},
		{"secrets:\n  K: {kind: hmac, from: env:X, hosts: [a.test]}\n", `c.yaml:2: secrets["K"].kind: "hmac" is not a kind of secret: want aws_sigv4, or nothing`},
		{"secrets:\n  AWS:\n    kind: aws_sigv4\n    hosts: [s3.test]\n    service: s3\n    access_key_id: {from: env:I}\n    secret_access_key: {from: env:S}\n", `c.yaml:2: secrets["AWS"].region: must be a lowercase name of letters, digits and - (e.g. eu-west-1), not ""`},
		{"secrets:\n  AWS:\n    kind: aws_sigv4\n    hosts: [s3.test]\n    region: eu-west-1\n    service: S3/x\n    access_key_id: {from: env:I}\n    secret_access_key: {from: env:S}\n", `c.yaml:6: secrets["AWS"].service: must be a lowercase name of letters, digits and - (e.g. s3), not "S3/x"`},
		{"secrets:\n  AWS:\n    kind: aws_sigv4\n    hosts: [s3.test]\n    region: eu-west-1\n    service: s3\n    secret_access_key: {from: env:S}\n", `c.yaml:2: secrets["AWS"].access_key_id.from: must be env:VAR or file:/absolute/path`},
		{"secrets:\n  AWS:\n    kind: aws_sigv4\n    hosts: [s3.test]\n    region: eu-west-1\n    service: s3\n    access_key_id: {from: env:I}\n    secret_access_key: {from: AKIAIOSFODNN7EXAMPLE}\n", `c.yaml:8: secrets["AWS"].secret_access_key.from: must be env:VAR or file:/absolute/path`},
		{"secrets:\n  AWS:\n    kind: aws_sigv4\n    from: env:X\n    hosts: [s3.test]\n", `c.yaml:4: secrets["AWS"].from: is for a secret whose value is swapped; an aws_sigv4 secret signs with access_key_id and secret_access_key`},
		{"secrets:\n  AWS:\n    kind: aws_sigv4\n    hosts: [s3.test]\n    in: [query]\n", `c.yaml:5: secrets["AWS"].in: is for a secret whose value is swapped; an aws_sigv4 secret signs with access_key_id and secret_access_key`},
		{"secrets:\n  AWS:\n    kind: aws_sigv4\n    region: eu-west-1\n    service: s3\n    access_key_id: {from: env:I}\n    secret_access_key: {from: env:S}\n", `c.yaml:2: secrets["AWS"].hosts: must name at least one host that may receive the secret (or an api must list it)`},
		{"secrets:\n  K: {from: env:X, hosts: [a.test], access_key_id: {from: env:I, value: x}}\n", `c.yaml:2: unknown key "value" in secrets["K"].access_key_id`},
		{"sandbox:\n  env: {AWS_ACCESS_KEY_ID: x}\nsecrets:\n  AWS:\n    kind: aws_sigv4\n    hosts: [s3.test]\n", `c.yaml:4: secrets["AWS"]: "AWS_ACCESS_KEY_ID" is also set in sandbox.env; a variable is one or the other`},
		{"secrets:\n  AWS:\n    kind: aws_sigv4\n    hosts: [s3.test]\n    region: eu-west-1\n    service: s3\n    access_key_id: {from: env:I}\n    secret_access_key: {from: env:S}\n  AWS_SECRET_ACCESS_KEY: {from: env:X, hosts: [a.test]}\n", `c.yaml:9: secrets["AWS_SECRET_ACCESS_KEY"]: "AWS_SECRET_ACCESS_KEY" is also set by secrets["AWS"]; a variable is one or the other`},
		// APIs.
		{"apis:\n  gh-api: {hosts: [a.test]}\n", `c.yaml:2: apis["gh-api"]: the name must be an identifier: letters, digits and _, not starting with a digit`},
		{"apis:\n  gh: {description: x}\n", `c.yaml:2: apis["gh"].hosts: must name at least one host`},
		{"apis:\n  gh: {hosts: [a.test], secrets: [NOPE]}\n", `c.yaml:2: apis["gh"].secrets[0]: "NOPE" is not a secret of the secrets section`},
		{"apis:\n  gh: {hosts: [a.test], docs: rel.md}\n", `c.yaml:2: apis["gh"].docs: "rel.md" is not an absolute path`},
		{"apis:\n  gh:\n    hosts: [a.test]\n    rules: [{allow: GET}]\n", `c.yaml:4: apis["gh"].rules[0]: "GET" is not METHOD /path (e.g. "GET /repos/**" or "* /admin/**")`},
		{"apis:\n  gh:\n    hosts: [a.test]\n    rules: [{allow: \"get /x\"}]\n", `c.yaml:4: apis["gh"].rules[0]: "get /x" is not METHOD /path (e.g. "GET /repos/**" or "* /admin/**")`},
		{"apis:\n  gh:\n    hosts: [a.test]\n    rules: [{deny: \"GET /a/**/b\"}]\n", `c.yaml:4: apis["gh"].rules[0]: "GET /a/**/b": ** is only allowed as the last segment (/**)`},
		{"apis:\n  gh:\n    hosts: [a.test]\n    rules: [{deny: \"GET /a?x=1\"}]\n", `c.yaml:4: apis["gh"].rules[0]: "GET /a?x=1": the path must start with / and hold no spaces, query or fragment`},
		{"apis:\n  gh:\n    hosts: [a.test]\n    rules: [{allow: \"GET /\", deny: \"GET /\"}]\n", `c.yaml:4: apis["gh"].rules[0]: needs one of allow or deny`},
		// Serve.
		{"serve:\n  token: short\n", `c.yaml:2: serve.token: must be at least 16 characters, without spaces or line breaks`},
		{"serve:\n  tokens: [\"a b c d e f g h i j\"]\n", `c.yaml:2: serve.tokens[0]: must be at least 16 characters, without spaces or line breaks`},
		{"serve:\n  allowed_origins: [localhost]\n", `c.yaml:2: serve.allowed_origins[0]: "localhost" is not an origin such as http://localhost:3000 or https://app.example.com`},
		{"serve:\n  max_concurrent: 0\n", `c.yaml:2: serve.max_concurrent: must be between 1 and 1024, not 0`},
		{"serve:\n  busy_wait: 2m\n", `c.yaml:2: serve.busy_wait: must be from 0 to 1m, not 2m0s`},
		{"serve:\n  rate: -1\n", `c.yaml:2: serve.rate: must be from 0 (no limit) to 1e+06 per second, not -1`},
		{"serve:\n  burst: 0\n", `c.yaml:2: serve.burst: must be between 1 and 1000000, not 0`},
		{"serve:\n  workspace_ttl: 0s\n", `c.yaml:2: serve.workspace_ttl: must be from 1s to 168h, not 0s`},
		{"serve:\n  max_body: 1\n", `c.yaml:2: serve.max_body: must be between 1KiB and 256MiB, not 1B`},
		{"serve:\n  max_result_output: 16GiB\n", `c.yaml:2: serve.max_result_output: must be between 1KiB and 16MiB, not 16GiB`},
		{"serve:\n  max_workspaces: 0\n", `c.yaml:2: serve.max_workspaces: must be between 1 and 65536, not 0`},
		{"serve:\n  max_workspace_bytes: 32MiB\n", `c.yaml:2: serve.max_workspace_bytes: must be between one workspace (sandbox.tmp_size: 64MiB) and 1TiB, not 32MiB`},
		{"serve:\n  max_workspace_bytes: 2TiB\n", `c.yaml:2: serve.max_workspace_bytes: must be between one workspace (sandbox.tmp_size: 64MiB) and 1TiB, not 2TiB`},
		{"serve:\n  pool: 65\n", `c.yaml:2: serve.pool: must be from 0 to 64, not 65`},
		{"serve:\n  replicas:\n    peer: http://peers:8080\n    key: {from: env:K}\n", `c.yaml:3: serve.replicas.peer: "http://peers:8080" is not an http or https URL with {name} in its host where a replica's name goes, such as http://{name}.crucible-peers:8080`},
		{"serve:\n  replicas:\n    peer: http://{name}:8080\n", `c.yaml:2: serve.replicas.key: is needed: the replicas' shared key (from: file:PATH or env:VAR)`},
		{"serve:\n  replicas:\n    name: Crucible_0\n    peer: http://{name}:8080\n    key: {from: env:K}\n", `c.yaml:3: serve.replicas.name: "Crucible_0" is not a DNS name (lowercase letters, digits, '-' and '.')`},
		{"serve:\n  replicas:\n    key: {from: env:K}\n", `c.yaml:2: serve.replicas.peer: is needed: the URL of a replica, {name} where its name goes`},
		{"serve:\n  skills_writable: true\n", `c.yaml:2: serve.skills_writable: needs serve.skills, the directory of the operator's skills`},
		{"network:\n  upstream_ca: ca.pem\n", `c.yaml:2: network.upstream_ca: "ca.pem" is not an absolute path`},
		// Network.
		{"network:\n  allow_all: yes\n", `c.yaml:2: network.allow_all: must be true or false, not "yes"`},
		{"network:\n  allow_private: [10.0.0.1/8]\n", `c.yaml:2: network.allow_private[0]: "10.0.0.1/8" is not a CIDR without host bits (e.g. 10.0.0.0/8)`},
		{"network:\n  hosts:\n    a.test: nowhere\n", `c.yaml:3: network.hosts["a.test"]: "nowhere" is not an IP address`},
		{"network:\n  resolver: 1.1.1.1\n", `c.yaml:2: network.resolver: "1.1.1.1" is not ip:port (e.g. 1.1.1.1:53 or [::1]:53)`},
		{"network:\n  max_connections: 0\n", `c.yaml:2: network.max_connections: must be between 1 and 4096, not 0`},
		{"network:\n  max_bytes_out: 1\n", `c.yaml:2: network.max_bytes_out: must be at least 1KiB, not 1B`},
		{"network:\n  idle_timeout: 0s\n", `c.yaml:2: network.idle_timeout: must be more than 0 and at most 24h, not 0s`},
		{"sandbox:\n  pids: 5\n\n  memroy: 1GiB\n", `c.yaml:4: unknown key "memroy" in sandbox`},
		{"sandbox: {Memory: 1GiB}\n", `c.yaml:1: unknown key "Memory" in sandbox`},
		{"sandbox:\n  memory: 1GiB\n  pids: 5\n  memory: 2GiB\n", `c.yaml:4: duplicate key "memory" in sandbox (first on line 2)`},
		{"sandbox: {}\nsandbox: {}\n", `c.yaml:2: duplicate key "sandbox" (first on line 1)`},
		{"sandbox:\n  env:\n    A: x\n    A: y\n", `c.yaml:4: duplicate key "A" in sandbox.env (first on line 3)`},
		{"sandbox:\n  ? [a]\n  : 1\n", `c.yaml:2: a key in sandbox is a list, not a string`},
		{"- sandbox\n", `c.yaml:1: the file must be a mapping of sections such as "sandbox:", not a list`},
		{"hello\n", `c.yaml:1: the file must be a mapping of sections such as "sandbox:", not "hello"`},
		{"sandbox: 5\n", `c.yaml:1: sandbox: must be a mapping, not "5"`},
		{"sandbox: {}\n---\nsandbox: {}\n", `c.yaml:2: more than one YAML document (remove the --- separator)`},
		{"sandbox:\n  memory: [1]\n", `c.yaml:2: sandbox.memory: must be a single value, not a list`},

		// Scalars.
		{"sandbox:\n  pids: \"x\"\n", `c.yaml:2: sandbox.pids: must be an integer, not "x"`},
		{"sandbox:\n  pids: 1.9\n", `c.yaml:2: sandbox.pids: must be an integer, not "1.9"`},
		{"sandbox:\n  pids: 0x10\n", `c.yaml:2: sandbox.pids: must be an integer, not "0x10"`},
		{"sandbox:\n  pids: 99999999999999999999\n", `c.yaml:2: sandbox.pids: must be an integer, not "99999999999999999999"`},
		{"sandbox:\n  pids: {a: 1}\n", `c.yaml:2: sandbox.pids: must be an integer, not a mapping`},
		{"sandbox:\n  cpus: .nan\n", `c.yaml:2: sandbox.cpus: must be a number, not ".nan"`},
		{"sandbox:\n  cpus: .inf\n", `c.yaml:2: sandbox.cpus: must be a number, not ".inf"`},
		{"sandbox:\n  cpus: Inf\n", `c.yaml:2: sandbox.cpus: must be a number, not "Inf"`},
		{"sandbox:\n  cpus: two\n", `c.yaml:2: sandbox.cpus: must be a number, not "two"`},
		{"sandbox:\n  workspace: [a]\n", `c.yaml:2: sandbox.workspace: must be a string, not a list`},
		{"sandbox:\n  ro: /opt\n", `c.yaml:2: sandbox.ro: must be a list, not "/opt"`},
		{"sandbox:\n  ro:\n    - /opt\n    - [x]\n", `c.yaml:4: sandbox.ro[1]: must be a string, not a list`},
		{"sandbox:\n  env: [A]\n", `c.yaml:2: sandbox.env: must be a mapping, not a list`},
		{"sandbox:\n  env:\n    A: {b: c}\n", `c.yaml:3: sandbox.env["A"]: must be a string, not a mapping`},
		{"sandbox:\n  memory: 12XB\n", `c.yaml:2: sandbox.memory: "12XB" is not a size (use e.g. 512MiB)`},
		{"sandbox:\n  memory: \"\"\n", `c.yaml:2: sandbox.memory: "" is not a size (use e.g. 512MiB)`},
		{"sandbox:\n  timeout: 30\n", `c.yaml:2: sandbox.timeout: "30" has no unit (use e.g. 30s or 5m)`},
		{"sandbox:\n  timeout: soon\n", `c.yaml:2: sandbox.timeout: "soon" is not a duration (use e.g. 30s, 5m or 1h30m)`},

		// Aliases are followed, and errors point at where they are used.
		{"x: &m [1]\n", `c.yaml:1: unknown key "x"`},
		{"sandbox:\n  ro: &r [/a]\n  tmp_size: *r\n", `c.yaml:3: sandbox.tmp_size: must be a single value, not a list`},
		{"sandbox: &s\n  env: *s\n", `c.yaml:2: sandbox.env["env"]: must be a string, not a mapping`},

		// Syntax errors keep yaml's line, when it gives one.
		{"sandbox:\n  memory: 1GiB\n   pids: 5\n", `c.yaml:3: mapping values are not allowed in this context`},
		{"sandbox: [\n", `c.yaml:1: did not find expected node content`},
		{"sandbox:\n\tmemory: 1GiB\n", `c.yaml:2: found character that cannot start any token`},
		{"sandbox: *nope\n", `c.yaml: unknown anchor 'nope' referenced`},
		{"a: 1\n---\n]\n", `c.yaml:2: did not find expected node content`},

		// Validation, placed on the key's line.
		{"sandbox:\n  timeout: 0s\n", `c.yaml:2: sandbox.timeout: must be more than 0 and at most 24h, not 0s`},
		{"sandbox:\n  timeout: -1s\n", `c.yaml:2: sandbox.timeout: must be more than 0 and at most 24h, not -1s`},
		{"sandbox:\n  timeout: 24h1s\n", `c.yaml:2: sandbox.timeout: must be more than 0 and at most 24h, not 24h0m1s`},
		{"sandbox:\n  memory: 15MiB\n", `c.yaml:2: sandbox.memory: must be at least 16MiB, not 15MiB`},
		{"sandbox:\n  memory: 0\n", `c.yaml:2: sandbox.memory: must be at least 16MiB, not 0B`},
		{"sandbox:\n  pids: 15\n", `c.yaml:2: sandbox.pids: must be between 16 and 65536, not 15 (the jail's own processes count too)`},
		{"sandbox:\n  pids: 0\n", `c.yaml:2: sandbox.pids: must be between 16 and 65536, not 0 (the jail's own processes count too)`},
		{"sandbox:\n  pids: 65537\n", `c.yaml:2: sandbox.pids: must be between 16 and 65536, not 65537 (the jail's own processes count too)`},
		{"sandbox:\n  pids: -1\n", `c.yaml:2: sandbox.pids: must be between 16 and 65536, not -1 (the jail's own processes count too)`},
		{"sandbox:\n  cpus: 0\n", `c.yaml:2: sandbox.cpus: must be between 0.01 and 1024, not 0`},
		{"sandbox:\n  cpus: 0.001\n", `c.yaml:2: sandbox.cpus: must be between 0.01 and 1024, not 0.001`},
		{"sandbox:\n  cpus: 1024.5\n", `c.yaml:2: sandbox.cpus: must be between 0.01 and 1024, not 1024.5`},
		{"sandbox:\n  cpus: -1\n", `c.yaml:2: sandbox.cpus: must be between 0.01 and 1024, not -1`},
		{"sandbox:\n  tmp_size: 1023KiB\n", `c.yaml:2: sandbox.tmp_size: must be at least 1MiB, not 1023KiB`},
		{"sandbox:\n  max_output: 1023\n", `c.yaml:2: sandbox.max_output: must be between 1KiB and 1GiB, not 1023B`},
		{"sandbox:\n  max_output: 1025MiB\n", `c.yaml:2: sandbox.max_output: must be between 1KiB and 1GiB, not 1025MiB`},
		{"sandbox:\n  workspace: work\n", `c.yaml:2: sandbox.workspace: "work" is not an absolute path`},
		{"sandbox:\n  workspace: /proc/self/root\n", `c.yaml:2: sandbox.workspace: "/proc/self/root" is inside /proc, which must not be mounted into the sandbox`},
		{"sandbox:\n  ro:\n    - /opt\n    - opt/data\n", `c.yaml:4: sandbox.ro[1]: "opt/data" is not an absolute path`},
		{"sandbox:\n  ro: [/]\n", `c.yaml:2: sandbox.ro[0]: "/" is the host's root`},
		{"sandbox:\n  ro: [/opt/..]\n", `c.yaml:2: sandbox.ro[0]: "/opt/.." is the host's root`},
		{"sandbox:\n  ro: [\"\"]\n", `c.yaml:2: sandbox.ro[0]: "" is not an absolute path`},
		{"sandbox:\n  ro: [/sys]\n", `c.yaml:2: sandbox.ro[0]: "/sys" is inside /sys, which must not be mounted into the sandbox`},
		{"sandbox:\n  ro: [/dev/shm/]\n", `c.yaml:2: sandbox.ro[0]: "/dev/shm/" is inside /dev, which must not be mounted into the sandbox`},
		{"sandbox:\n  ro: [/opt/../proc/1]\n", `c.yaml:2: sandbox.ro[0]: "/opt/../proc/1" is inside /proc, which must not be mounted into the sandbox`},
		{"sandbox:\n  ro: [\"/a\\0b\"]\n", `c.yaml:2: sandbox.ro[0]: "/a\x00b" contains a NUL byte`},
		{"sandbox:\n  env:\n    OK: 1\n    1BAD: x\n", `c.yaml:4: sandbox.env["1BAD"]: not a valid variable name (letters, digits and _, not starting with a digit)`},
		{"sandbox:\n  env:\n    \"A=B\": x\n", `c.yaml:3: sandbox.env["A=B"]: not a valid variable name (letters, digits and _, not starting with a digit)`},
		{"sandbox:\n  env:\n    \"A\\nB\": x\n", `c.yaml:3: sandbox.env["A\nB"]: not a valid variable name (letters, digits and _, not starting with a digit)`},
		{"sandbox:\n  env:\n    TOKEN: \"secret\\0\"\n", `c.yaml:3: sandbox.env["TOKEN"]: value contains a NUL byte`},
		{"sandbox:\n  allow_degraded:\n    - landlock\n    - userns\n", `c.yaml:4: sandbox.allow_degraded[1]: unknown layer "userns" (want one of cgroup, landlock, seccomp_notify)`},
	} {
		c, err := Parse([]byte(tt.in), "c.yaml")
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q)\n = %+v, %v\nwant %s", tt.in, c, err, tt.want)
		}
	}
}

// Normalize and Validate alone (as the CLI calls them after applying flags):
// paths are cleaned, and errors name the key without a file or line.
// Validate changes nothing.
func TestValidate(t *testing.T) {
	c := Default()
	c.Sandbox.RO = []string{"/opt//data/"}
	c.Sandbox.Workspace = "/tmp/ws/."
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Sandbox.RO[0] != "/opt//data/" || c.Sandbox.Workspace != "/tmp/ws/." {
		t.Errorf("Validate changed the paths: %q %q", c.Sandbox.RO, c.Sandbox.Workspace)
	}
	c.Normalize()
	if c.Sandbox.RO[0] != "/opt/data" || c.Sandbox.Workspace != "/tmp/ws" {
		t.Errorf("paths not cleaned: %q %q", c.Sandbox.RO, c.Sandbox.Workspace)
	}
	c.Sandbox.CPUs = math.NaN()
	if err := c.Validate(); err == nil || err.Error() != "sandbox.cpus: must be between 0.01 and 1024, not NaN" {
		t.Errorf("Validate() = %v", err)
	}
	for _, l := range DegradableLayers {
		c := Default()
		c.Sandbox.AllowDegraded = []string{l}
		if err := c.Validate(); err != nil {
			t.Errorf("allow_degraded %s: %v", l, err)
		}
	}
}

// Written values replace the defaults; null ones keep them.
func TestParseValues(t *testing.T) {
	c, err := Parse([]byte("sandbox:\n  pids: +64\n  cpus: 2\n  memory: 536870912\n  env: {}\n  ro: []\n  workspace:\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Default().Sandbox
	want.Pids, want.CPUs, want.Env, want.RO = 64, 2, map[string]string{}, []string{}
	if !reflect.DeepEqual(c.Sandbox, want) {
		t.Errorf("got %+v; want %+v", c.Sandbox, want)
	}
}

func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("sandbox: &s\n  env: *s\n  ro: [*s]\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("sandbox:\n  memory: 1.5GiB\n  timeout: 1h\n  cpus: 1e-2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "f.yaml")
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, "f.yaml:") {
				t.Fatalf("error is not one line starting with the file name: %q", msg)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate rejects: %v", err)
		}
	})
}

// Whatever parses formats back to a string that parses to the same size.
func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"512MiB", "1.5G", "0.5k", "12XB", "64MB", "-1", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseByteSize(s)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if b < 0 {
			t.Fatalf("ParseByteSize(%q) = %d", s, b)
		}
		if again, err := ParseByteSize(b.String()); err != nil || again != b {
			t.Fatalf("ParseByteSize(%q) = %d, but %q parses to %d, %v", s, b, b.String(), again, err)
		}
	})
}

func TestRuntimes(t *testing.T) {
	c, err := Parse([]byte("runtimes:\n  deno: /opt/deno/bin/../deno\n"), "crucible.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Runtimes.Deno != "/opt/deno/deno" || c.Runtimes.Python != "/usr/bin/python3" || c.Runtimes.JSHeap != 256*MiB || c.Runtimes.JSStack != 10000 {
		t.Errorf("runtimes = %+v, want the cleaned deno path and the default python", c.Runtimes)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"runtimes:\n  deno: deno\n", `crucible.yaml:2: runtimes.deno: "deno" is not an absolute path`},
		{"runtimes:\n  python: \"\"\n", `runtimes.python: must not be empty`},
		{"runtimes:\n  node: /usr/bin/node\n", `crucible.yaml:2: unknown key "node" in runtimes`},
		{"runtimes:\n  js_heap: 1MiB\n", `crucible.yaml:2: runtimes.js_heap: must be from 16MiB to 4GiB, not 1MiB`},
		{"runtimes:\n  js_stack: 10\n", `crucible.yaml:2: runtimes.js_stack: must be from 100 to 100000 frames, not 10`},
	} {
		_, err := Parse([]byte(tc.yaml), "crucible.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// sameConfig compares what two configs say, not where they were written.
func sameConfig(a, b *Config) bool {
	x, y := *a, *b
	x.src, y.src = nil, nil
	return reflect.DeepEqual(x, y)
}

// Where names the line of a key, for problems found after loading.
func TestWhere(t *testing.T) {
	c, err := Parse([]byte("network:\n  allow:\n    - a.test\n    - b.test\n  hosts:\n    x.test: 1.2.3.4\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		KeyPath("network.allow", 1, ""):        "c.yaml:4",
		KeyPath("network.hosts", -1, "x.test"): "c.yaml:6",
		KeyPath("network.allow", 2, ""):        "",
	} {
		if got := c.Where(path); got != want {
			t.Errorf("Where(%s) = %q, want %q", path, got, want)
		}
	}
	if got := Default().Where("network.allow[0]"); got != "" {
		t.Errorf("a default config has a place: %q", got)
	}
}

// A secret that an API lists goes to the API's hosts, and needs none of its
// own.
func TestSecretHostsFromAPIs(t *testing.T) {
	c, err := Parse([]byte("secrets:\n  T: {from: env:T}\n  U: {from: env:U, hosts: [u.test]}\napis:\n  a: {hosts: [a.test, b.test], secrets: [T, U]}\n  b: {hosts: [c.test]}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SecretHosts("T"); !reflect.DeepEqual(got, []string{"a.test", "b.test"}) {
		t.Errorf("SecretHosts(T) = %v", got)
	}
	if got := c.SecretHosts("U"); !reflect.DeepEqual(got, []string{"u.test", "a.test", "b.test"}) {
		t.Errorf("SecretHosts(U) = %v", got)
	}
}

// A profile's configuration holds only what the profile names, its tool
// limits lowered; the whole configuration is left as it was.
func TestForProfile(t *testing.T) {
	c := Default()
	c.Servers = map[string]Server{"docs": {Command: "d"}, "github": {Command: "g"}}
	c.Secrets = map[string]Secret{"GH": {From: "env:GH", Hosts: []string{"api.github.com"}}, "OTHER": {From: "env:O", Hosts: []string{"x.test"}}}
	c.APIs = map[string]API{"github": {Hosts: []string{"api.github.com"}, Secrets: []string{"GH"}}}
	c.Profiles = map[string]Profile{
		"readonly": {Servers: []string{"docs"}},
		"dev": {Servers: []string{"docs", "github"}, APIs: []string{"github"}, Secrets: []string{"GH"}, Tools: Tools{MaxCalls: 5},
			Limits:  ProfileLimits{Timeout: Duration(5 * time.Second), Memory: 128 * MiB},
			Network: ProfileNetwork{Allow: []string{"docs.example.com"}, Deny: []string{"evil.example.com"}, MaxConnections: 4}},
	}
	c.Network.Allow, c.Network.AllowAll = []string{"docs.example.com", "pypi.org"}, true
	c.Clients = map[string]Client{"ci": {Token: SecretSource{From: "env:CI"}, Profile: "readonly"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ro, dev := c.ForProfile("readonly"), c.ForProfile("dev")
	if !slices.Equal(slices.Sorted(maps.Keys(ro.Servers)), []string{"docs"}) || len(ro.APIs) != 0 || len(ro.Secrets) != 0 || ro.Tools.MaxCalls != 50 {
		t.Errorf("readonly: %+v %+v %+v %+v", ro.Servers, ro.APIs, ro.Secrets, ro.Tools)
	}
	if len(dev.Servers) != 2 || len(dev.APIs) != 1 || !slices.Equal(slices.Sorted(maps.Keys(dev.Secrets)), []string{"GH"}) || dev.Tools.MaxCalls != 5 {
		t.Errorf("dev: %+v %+v %+v %+v", dev.Servers, dev.APIs, dev.Secrets, dev.Tools)
	}
	if dev.Sandbox.Timeout != Duration(5*time.Second) || dev.Sandbox.Memory != 128*MiB || dev.Sandbox.Pids != c.Sandbox.Pids ||
		!slices.Equal(dev.Network.Allow, []string{"docs.example.com"}) || dev.Network.AllowAll || !slices.Equal(dev.Network.Deny, []string{"evil.example.com"}) ||
		dev.Network.MaxConnections != 4 || dev.Network.MaxBytesOut != c.Network.MaxBytesOut {
		t.Errorf("dev's limits and network: %+v %+v", dev.Sandbox, dev.Network)
	}
	if !slices.Equal(ro.Network.Allow, c.Network.Allow) || !ro.Network.AllowAll {
		t.Errorf("a profile that does not narrow the network: %+v", ro.Network)
	}
	if err := dev.Validate(); err != nil {
		t.Errorf("a profile's configuration does not validate: %v", err)
	}
	if len(c.Servers) != 2 || len(c.Secrets) != 2 || c.Tools.MaxCalls != 50 || len(c.Network.Deny) != 0 || len(c.Network.Allow) != 2 || c.ForProfile("") != c || c.ProfileOf("ci") != "readonly" || c.ProfileOf("stdio") != "" {
		t.Errorf("the whole configuration changed: %+v", c)
	}
}
