package toolbridge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/policy/callrule"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const canary = "canary-7f3a91c2e5"

// testCtx bounds a test: generous, since the servers start on a slow VM.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// goServer is the test binary as a stdio server, with extra environment.
func goServer(t *testing.T, env ...string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	s := Server{Command: exe, Args: []string{"-home", home}, Dir: t.TempDir(),
		Env: map[string]string{testServerEnv: "1", "CANARY": canary}}
	for i := 0; i+1 < len(env); i += 2 {
		s.Env[env[i]] = env[i+1]
	}
	return s
}

func newBridge(t *testing.T, o Options) *Bridge {
	t.Helper()
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func call(t *testing.T, s *Session, server, tool, args string) (string, error) {
	t.Helper()
	out, err := s.Call(testCtx(t), server, tool, []byte(args))
	return string(out), err
}

func mustCall(t *testing.T, s *Session, server, tool, args string) string {
	t.Helper()
	out, err := call(t, s, server, tool, args)
	if err != nil {
		t.Fatalf("%s.%s(%s): %v", server, tool, args, err)
	}
	return out
}

// started calls server's pid tool until the server has started: a start
// that takes longer than a short per-call timeout goes on after the call
// that began it gives up, on a slow machine.
func started(t *testing.T, s *Session, server string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); ; {
		_, err := call(t, s, server, "pid", `{}`)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "it is still starting") || time.Now().After(end) {
			t.Fatalf("%s.pid: %v", server, err)
		}
	}
}

func wantRefusal(t *testing.T, err error, kind, mention string) {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) || r.Kind != kind || !strings.Contains(r.Reason, mention) {
		t.Fatalf("error = %v; want a %q refusal mentioning %q", err, kind, mention)
	}
}

func TestCallValues(t *testing.T) {
	b := newBridge(t, Options{Servers: map[string]Server{"go": goServer(t)}})
	s := b.NewSession()
	for _, tt := range []struct{ tool, args, want string }{
		{"echo", `{"text": "hi there"}`, `"hi there"`},
		{"echo", `{"text": "[1, 2"}`, `"[1, 2"`},       // not JSON: the text
		{"structured", ``, `{"n":42,"unit":"things"}`}, // structured content wins
		{"json_text", `null`, `{"a":1,"b":[2,3]}`},     // text that is JSON
		{"image", `{}`, `{"data":"iVBORw==","mimeType":"image/png","type":"image"}`},
	} {
		if got := mustCall(t, s, "go", tt.tool, tt.args); got != tt.want {
			t.Errorf("%s(%s) = %s; want %s", tt.tool, tt.args, got, tt.want)
		}
	}
	got, err := s.Resource(testCtx(t), "go", "test://hello")
	if err != nil || string(got) != `[{"mimeType":"text/plain","text":"hello","uri":"test://hello"}]` {
		t.Errorf("resource = %s, %v", got, err)
	}
	if _, err := call(t, s, "go", "echo", `[1]`); err == nil || !strings.Contains(err.Error(), "JSON object") {
		t.Errorf("array arguments: %v", err)
	}
	if _, err := call(t, s, "nope", "echo", `{}`); err == nil || !strings.Contains(err.Error(), `no tool server "nope" (servers: go)`) {
		t.Errorf("unknown server: %v", err)
	}
	if _, err := call(t, s, "go", "no_such_tool", `{}`); err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestToolsListAndPolicy(t *testing.T) {
	srv := goServer(t)
	srv.Policy = Policy{Allow: []string{"e*", "json_*", "fail"}, Deny: []string{"env*", "fail"}}
	b := newBridge(t, Options{Servers: map[string]Server{"go": srv}})
	tools, err := b.Tools(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "echo,json_text" {
		t.Errorf("tools = %v; want echo,json_text (allow e*, json_*, fail; deny env*, fail)", names)
	}
	if tools[0].Server != "go" || tools[0].Description == "" || tools[0].InputSchema == nil {
		t.Errorf("echo = %+v", tools[0])
	}
	s := b.NewSession()
	mustCall(t, s, "go", "echo", `{"text":"x"}`)
	_, err = call(t, s, "go", "fail", `{}`)
	wantRefusal(t, err, KindTool, `denied by this server's policy (rule "fail")`)
	_, err = call(t, s, "go", "environ", `{}`)
	wantRefusal(t, err, KindTool, `denied`)
	_, err = call(t, s, "go", "pid", `{}`)
	wantRefusal(t, err, KindTool, "not in this server's allow list")
	if s.Calls() != 1 {
		t.Errorf("calls = %d; want 1 (refusals are not counted)", s.Calls())
	}
}

// The holes of the old policy, each an attack: a '*' that stopped at '/', a
// name the server might take for a denied one (another case, a look-alike
// letter, a name it does not list), and resources read past a tool policy.
func TestPolicyHoles(t *testing.T) {
	for _, c := range []struct {
		name     string
		policy   Policy
		tool     string
		refusal  string // "" when the call goes through
		resource string // "" when reading test://hello goes through
	}{
		{"deny * covers /", Policy{Deny: []string{"*"}}, "admin/delete_repo", `denied by this server's policy (rule "*")`, ""},
		{"delete_* covers delete_/x", Policy{Deny: []string{"delete_*"}}, "delete_/x", `(rule "delete_*")`, ""},
		{"*/delete_*", Policy{Deny: []string{"delete_*", "*/delete_*"}}, "admin/delete_repo", `(rule "*/delete_*")`, ""},
		{"allow admin/*", Policy{Allow: []string{"admin/*"}}, "admin/delete_repo", "", "resources are not open to the code"},
		{"another case", Policy{Deny: []string{"delete_*"}}, "Delete_/x", `has no tool "Delete_/x"`, ""},
		{"a look-alike", Policy{Deny: []string{"delete_*"}}, "dеlete_/x", "cannot match cleanly", ""},
		{"a zero-width joiner", Policy{Deny: []string{"delete_*"}}, "delete\u200d_/x", "cannot match cleanly", ""},
		{"not listed, no policy", Policy{}, "rm_rf", `has no tool "rm_rf"`, ""},
		{"a look-alike past a rule", Policy{Rules: []callrule.Rule{{Tools: []string{"delete_*"}, AllowIf: "false"}}}, "dеlete_/x", "cannot match cleanly", closedByRules},
		{"a rule on a name with /", Policy{Rules: []callrule.Rule{{Tools: []string{"*/delete_*"}, AllowIf: "false", Reason: "no deletions"}}}, "admin/delete_repo", "no deletions", closedByRules},
		// No rule can judge a resource read: a server with rules has its
		// resources closed unless resources.allow names them.
		{"rules, resources denied only", Policy{Rules: []callrule.Rule{{Tools: []string{"delete_*"}, AllowIf: "false"}}, Resources: &Filter{Deny: []string{"file://*"}}}, "echo", "", closedByRules},
		{"rules, resources allowed", Policy{Rules: []callrule.Rule{{Tools: []string{"delete_*"}, AllowIf: "false"}}, Resources: &Filter{Allow: []string{"test://*"}}}, "echo", "", ""},
		{"resources opened", Policy{Allow: []string{"echo"}, Resources: &Filter{Allow: []string{"test://*"}}}, "echo", "", ""},
		{"a resource denied", Policy{Resources: &Filter{Deny: []string{"test://hel*"}}}, "echo", "", `resource test://hello is denied by this server's policy (rule "test://hel*")`},
		{"a resource not allowed", Policy{Resources: &Filter{Allow: []string{"file:///data/*"}}}, "echo", "", "not in this server's resources.allow list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := goServer(t)
			srv.Policy = c.policy
			s := newBridge(t, Options{Servers: map[string]Server{"go": srv}}).NewSession()
			args := `{}`
			if c.tool == "echo" {
				args = `{"text": "x"}`
			}
			out, err := call(t, s, "go", c.tool, args)
			if c.refusal == "" && err != nil {
				t.Errorf("%s: %v", c.tool, err)
			} else if c.refusal != "" {
				wantRefusal(t, err, KindTool, c.refusal)
				if out != "" {
					t.Errorf("%s went through: %s", c.tool, out)
				}
			}
			_, err = s.Resource(testCtx(t), "go", "test://hello")
			if c.resource == "" && err != nil {
				t.Errorf("resource: %v", err)
			} else if c.resource != "" {
				wantRefusal(t, err, KindTool, c.resource)
			}
			want := 0
			if c.refusal == "" {
				want++
			}
			if c.resource == "" {
				want++
			}
			if s.Calls() != want {
				t.Errorf("calls = %d; want %d (refusals are not counted)", s.Calls(), want)
			}
		})
	}
}

// The attacks on a rule through the decoder: arguments that a rule would
// read as one value and the server as another. Each is refused before it
// reaches the server, as a tool violation; what does go out is what the
// rule judged, re-encoded.
func TestArgumentsAsJudged(t *testing.T) {
	srv := goServer(t)
	srv.Policy.Rules = []callrule.Rule{{Tools: []string{"transfer"}, Reason: "only acme's, never forced, never account 2^53",
		AllowIf: `args.owner == "acme" && (!has(args.force) || args.force != true) && (!has(args.id) || args.id != 9007199254740992)`}}
	s := newBridge(t, Options{Servers: map[string]Server{"go": srv}}).NewSession()
	for _, c := range []struct{ args, want string }{
		// encoding/json into a struct takes the last key, in any case.
		{`{"owner": "victim", "owner": "acme"}`, `the key "owner" twice`},
		{`{"owner": "acme", "Owner": "victim"}`, `the keys "owner" and "Owner", which differ only in case`},
		{`{"owner": "acme", "\u212aind": 1, "kind": 2}`, `differ only in case`},
		// A server may read "true" as true.
		{`{"owner": "acme", "force": "true"}`, `compares a string with a bool`},
		// A float reads it as 9007199254740992.
		{`{"owner": "acme", "id": 9007199254740993}`, `the integer 9007199254740993, past 2^53`},
		{`{"owner": "acme", "note": "\ud800"}`, `half of a surrogate pair`},
	} {
		out, err := call(t, s, "go", "transfer", c.args)
		wantRefusal(t, err, KindTool, c.want)
		if out != "" {
			t.Errorf("transfer(%s) went out: %s", c.args, out)
		}
	}
	// What goes out is what the rule read: the canonical encoding.
	out := mustCall(t, s, "go", "transfer", ` {"owner" : "acme", "id": 1e3, "force": false, "n": "\u00e9\/"} `)
	if want := `"owner=acme id=1000 force=false raw={\"owner\":\"acme\",\"id\":1000.0,\"force\":false,\"n\":\"é/\"}"`; out != want {
		t.Errorf("the server read %s, want %s", out, want)
	}
	if s.Calls() != 1 {
		t.Errorf("calls = %d; want 1 (refusals are not counted)", s.Calls())
	}
}

func TestGroups(t *testing.T) {
	mail, paste, free := goServer(t), goServer(t), goServer(t)
	mail.Policy.Group, paste.Policy.Group = "private", "public"
	b := newBridge(t, Options{Servers: map[string]Server{"mail": mail, "paste": paste, "calc": free}})
	s := b.NewSession()
	mustCall(t, s, "calc", "pid", `{}`) // no group: binds nothing
	mustCall(t, s, "mail", "pid", `{}`)
	mustCall(t, s, "calc", "pid", `{}`)
	_, err := call(t, s, "paste", "echo", `{"text":"the mail"}`)
	wantRefusal(t, err, KindTool, `group "public", and this execution has already used group "private"`)
	mustCall(t, s, "mail", "pid", `{}`)
	// Another execution starts afresh.
	s2 := b.NewSession()
	mustCall(t, s2, "paste", "pid", `{}`)
	_, err = call(t, s2, "mail", "pid", `{}`)
	wantRefusal(t, err, KindTool, `already used group "public"`)
}

func TestLimits(t *testing.T) {
	b := newBridge(t, Options{Servers: map[string]Server{"go": goServer(t)},
		Limits: Limits{Calls: 3, ArgBytes: 1024}})
	s := b.NewSession()
	_, err := call(t, s, "go", "echo", `{"text":"`+strings.Repeat("a", 2000)+`"}`)
	wantRefusal(t, err, KindLimit, "more than the 1024 allowed")
	mustCall(t, s, "go", "big", `{"n": 1000}`)
	_, err = call(t, s, "go", "big", `{"n": 10000000}`) // 10 MB: cut short as it is read
	wantRefusal(t, err, KindLimit, "cut short as it was read")
	mustCall(t, s, "go", "echo", `{"text":"third"}`)
	_, err = call(t, s, "go", "echo", `{"text":"fourth"}`)
	wantRefusal(t, err, KindLimit, "its 3 tool calls")
	if _, err := s.Resource(testCtx(t), "go", "test://hello"); err == nil {
		t.Error("a resource read past the call limit was made")
	}
	// The limit is the session's, not the bridge's.
	mustCall(t, b.NewSession(), "go", "echo", `{"text":"again"}`)
}

func TestTimeoutOnHang(t *testing.T) {
	srv := goServer(t)
	srv.Policy.Timeout = 2 * time.Second
	b := newBridge(t, Options{Servers: map[string]Server{"go": srv}})
	s := b.NewSession()
	started(t, s, "go") // so that the timeout is the call's alone
	_, err := call(t, s, "go", "hang", `{}`)
	wantRefusal(t, err, KindLimit, "go.hang did not answer within 2s")
	mustCall(t, s, "go", "echo", `{"text":"still there"}`)

	// The caller's own context is honoured too.
	ctx, cancel := context.WithCancel(testCtx(t))
	go cancel()
	if _, err := s.Call(ctx, "go", "hang", nil); err == nil {
		t.Error("a cancelled call returned no error")
	}
}

func TestCrashRestarts(t *testing.T) {
	b := newBridge(t, Options{Servers: map[string]Server{"go": goServer(t)}})
	s := b.NewSession()
	pid := mustCall(t, s, "go", "pid", `{}`)
	_, err := call(t, s, "go", "crash", `{}`)
	if err == nil || !strings.Contains(err.Error(), "tool server go failed during the call of go.crash") {
		t.Fatalf("crash: %v", err)
	}
	pid2 := mustCall(t, s, "go", "pid", `{}`)
	if pid2 == pid {
		t.Errorf("the same process (%s) answered after the crash", pid)
	}
	mustCall(t, b.NewSession(), "go", "echo", `{"text":"next execution"}`)
}

func TestKeepsFailing(t *testing.T) {
	// Long enough that the third call comes within it on any machine.
	defer func(d time.Duration) { firstBackoff = d }(firstBackoff)
	firstBackoff = maxBackoff
	b := newBridge(t, Options{Servers: map[string]Server{"flaky": goServer(t, "DIE_AT_START", "1")}})
	s := b.NewSession()
	for i := range 3 {
		_, err := call(t, s, "flaky", "echo", `{}`)
		if err == nil || !strings.Contains(err.Error(), "tool server flaky is not available") ||
			!strings.Contains(err.Error(), "fatal: no token configured") {
			t.Fatalf("call %d: %v; want the server named, and its last words", i, err)
		}
		if i == 2 && !strings.Contains(err.Error(), "failed 2 times in a row; next attempt in") {
			t.Errorf("call %d, during the back-off: %v", i, err)
		}
	}
	if _, err := b.Tools(testCtx(t)); err == nil || !strings.Contains(err.Error(), "flaky") {
		t.Errorf("Tools: %v", err)
	}
}

// A server that never finishes starting costs a call its timeout, and is
// stopped when the bridge closes.
func TestHangAtStart(t *testing.T) {
	srv := goServer(t, "SLOW_START", "1h")
	srv.Policy.Timeout = 2 * time.Second
	b := newBridge(t, Options{Servers: map[string]Server{"stuck": srv}})
	_, err := call(t, b.NewSession(), "stuck", "pid", `{}`)
	wantRefusal(t, err, KindLimit, "tool server stuck did not start within the call's time (2s)")
}

func TestBackoff(t *testing.T) {
	for n, want := range []time.Duration{0, 0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		if got := backoff(n, time.Second); got != want {
			t.Errorf("backoff(%d) = %v; want %v", n, got, want)
		}
	}
	if got := backoff(1000, time.Second); got != maxBackoff {
		t.Errorf("backoff(1000) = %v", got)
	}
}

func TestSlowStartShared(t *testing.T) {
	b := newBridge(t, Options{Servers: map[string]Server{"go": goServer(t, "SLOW_START", "1s")}})
	var wg sync.WaitGroup
	pids := make([]string, 6)
	errs := make([]error, 6)
	for i := range pids {
		wg.Go(func() { pids[i], errs[i] = call(t, b.NewSession(), "go", "pid", `{}`) })
	}
	wg.Wait()
	for i := range pids {
		if errs[i] != nil || pids[i] != pids[0] {
			t.Errorf("caller %d: %s, %v; want pid %s, the one process shared", i, pids[i], errs[i], pids[0])
		}
	}
}

// The server's environment is its env alone, and what it holds (a token)
// and the host's paths never come back to the code.
func TestRedaction(t *testing.T) {
	t.Setenv("CRUCIBLE_HOST_CANARY", "host-only")
	srv := goServer(t, "DIGITS", "4242424")
	b := newBridge(t, Options{Servers: map[string]Server{"go": srv}})
	s := b.NewSession()
	if got := mustCall(t, s, "go", "environ", `{}`); got != `["CANARY","DIGITS","TOOLBRIDGE_TEST_SERVER"]` {
		t.Errorf("the server's environment = %s; want only its own env", got)
	}
	// Redacted in strings only, so that the value stays JSON.
	if got := mustCall(t, s, "go", "leak", `{}`); got != `{"n":4242424,"token":"token=[redacted]"}` {
		t.Errorf("leak = %s", got)
	}
	// Encoded, it is redacted as well: every form the secrets package
	// knows.
	got := mustCall(t, s, "go", "leak_encoded", `{}`)
	for _, enc := range encodings(canary) {
		quoted, _ := json.Marshal(enc) // as the result's JSON holds it: a line break is \n
		if strings.Contains(got, enc) || strings.Contains(got, strings.Trim(string(quoted), `"`)) {
			t.Errorf("leak_encoded holds %q: %s", enc, got)
		}
	}
	_, err := call(t, s, "go", "fail", `{}`)
	var te *ToolError
	if !errors.As(err, &te) {
		t.Fatalf("fail: %v; want a ToolError", err)
	}
	home, _ := os.UserHomeDir()
	for _, secret := range []string{canary, srv.Dir, srv.Command, filepath.Dir(srv.Command), home} {
		if strings.Contains(te.Error(), secret) {
			t.Errorf("the error %q holds %q", te, secret)
		}
	}
	if !strings.Contains(te.Message, "cannot open ./data.db") || !strings.Contains(te.Message, "~/.testrc") {
		t.Errorf("error = %q; want the server's message, redacted", te.Message)
	}
	tools, _ := b.Tools(testCtx(t))
	js, _ := json.Marshal(tools)
	if strings.Contains(string(js), canary) || (home != "" && strings.Contains(string(js), home)) {
		t.Errorf("the tool list holds the canary or the home directory: %s", js)
	}
	if !strings.Contains(string(js), "a file under ~; the token is [redacted]") {
		t.Errorf("the leak tool's schema is not in the list, redacted: %s", js)
	}
}

// A URL's key (in its query or userinfo) is redacted from the errors that
// quote the URL.
func TestRedactURL(t *testing.T) {
	r := redactor(Server{URL: "http://user:" + canary + "@127.0.0.1:1/mcp?api_key=" + canary + "&v=1"}, "")
	msg := `Post "http://user:` + canary + `@127.0.0.1:1/mcp?api_key=` + canary + `&v=1": dial tcp: refused; key ` + canary
	got := r.Replace(msg)
	if strings.Contains(got, canary) || !strings.Contains(got, `Post "http://127.0.0.1:1/mcp": dial tcp`) {
		t.Errorf("redacted: %q", got)
	}
}

func TestStreamableHTTP(t *testing.T) {
	ms := testServer("", false)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+canary {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	b := newBridge(t, Options{Servers: map[string]Server{
		"web":    {URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer " + canary}},
		"nokey":  {URL: hs.URL},
		"closed": {URL: "http://127.0.0.1:1/mcp"},
	}})
	s := b.NewSession()
	if got := mustCall(t, s, "web", "structured", `{}`); got != `{"n":42,"unit":"things"}` {
		t.Errorf("structured over HTTP = %s", got)
	}
	for _, name := range []string{"nokey", "closed"} {
		_, err := call(t, s, name, "echo", `{}`)
		if err == nil || !strings.Contains(err.Error(), "tool server "+name+" is not available") || strings.Contains(err.Error(), canary) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// What the console shows: instances up, failing, the last error
	// redacted.
	st := map[string]ServerStatus{}
	for _, x := range b.Status() {
		st[x.Name] = x
	}
	if st["web"].Instances != 1 || st["web"].Failing != 0 || st["closed"].Failing != 1 || st["closed"].LastError == "" ||
		strings.Contains(st["nokey"].LastError, canary) {
		t.Errorf("Status() = %+v", st)
	}
}

// An HTTP server's JSON answer is bounded before it is read whole; the
// next call works again.
func TestHTTPBodyCap(t *testing.T) {
	ms := testServer("", false)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms },
		&mcp.StreamableHTTPOptions{JSONResponse: true}))
	defer hs.Close()
	b := newBridge(t, Options{Servers: map[string]Server{"web": {URL: hs.URL}}})
	s := b.NewSession()
	mustCall(t, s, "web", "pid", `{}`)
	if _, err := call(t, s, "web", "big", `{"n": 40000000}`); err == nil || !strings.Contains(err.Error(), "larger than 33554432 bytes") {
		t.Fatalf("a 40 MB answer: %v; want it cut short", err)
	}
	mustCall(t, s, "web", "echo", `{"text":"again"}`)
}

// A stdio server's message is bounded as it is read, near the result's
// bound (here 1 MiB of JSON: 3 MiB a message), not decoded whole up to the
// SDK's 16 MiB and refused after: the 4 MB answer is a limit, cut short,
// and the next call works again (the server is started anew).
func TestStdioMessageCap(t *testing.T) {
	b := newBridge(t, Options{Servers: map[string]Server{"go": goServer(t)}})
	s := b.NewSession()
	mustCall(t, s, "go", "pid", `{}`)
	_, err := call(t, s, "go", "big", `{"n": 4000000}`)
	wantRefusal(t, err, KindLimit, "go.big answered with more than 3145728 bytes, cut short as it was read")
	mustCall(t, s, "go", "echo", `{"text":"again"}`)
	// Under the message's bound, the result's own is still checked.
	_, err = call(t, s, "go", "big", `{"n": 1500000}`)
	wantRefusal(t, err, KindLimit, "more than the 1048576 allowed")
}

// A server that redirects elsewhere does not get its headers sent there.
func TestHeadersStayHome(t *testing.T) {
	var leaked []string
	var mu sync.Mutex
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer elsewhere.Close()
	home := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/mcp", http.StatusTemporaryRedirect))
	defer home.Close()
	b := newBridge(t, Options{Servers: map[string]Server{"web": {URL: home.URL, Headers: map[string]string{"Authorization": "Bearer " + canary}}}})
	if _, err := call(t, b.NewSession(), "web", "echo", `{}`); err == nil {
		t.Error("a call through a redirect to nothing succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) == 0 {
		t.Fatal("the redirect was not followed: the test proves nothing")
	}
	for _, h := range leaked {
		if h != "" {
			t.Errorf("the redirect target got Authorization: %q", h)
		}
	}
}

func TestNewChecks(t *testing.T) {
	for _, s := range []Server{{}, {Command: "x", URL: "http://x"}, {Command: "x", Policy: Policy{Deny: []string{"[a"}}}} {
		if _, err := New(Options{Servers: map[string]Server{"s": s}}); err == nil {
			t.Errorf("New accepted %+v", s)
		}
	}
}

// npmServer returns the stdio settings of an npm MCP server installed by
// npm install at the repository's root.
func npmServer(t testing.TB, pkg string, env map[string]string) Server {
	t.Helper()
	node := testenv.NeedTool(t, "node")
	main, err := filepath.Abs(filepath.Join("..", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(main); err != nil {
		testenv.Missing(t, "needs @modelcontextprotocol/"+pkg+" (npm install at the repository's root)")
	}
	return Server{Command: node, Args: []string{main}, Env: env}
}

func TestServerEverything(t *testing.T) {
	t.Setenv("CRUCIBLE_HOST_CANARY", "host-only")
	srv := npmServer(t, "server-everything", map[string]string{"API_TOKEN": canary})
	srv.Policy.Deny = []string{"trigger-*"}
	b := newBridge(t, Options{Servers: map[string]Server{"everything": srv}})
	tools, err := b.Tools(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	has := map[string]bool{}
	for _, tl := range tools {
		has[tl.Name] = true
		if strings.HasPrefix(tl.Name, "trigger-") {
			t.Errorf("denied tool %s listed", tl.Name)
		}
	}
	for _, n := range []string{"echo", "get-sum", "get-tiny-image", "get-structured-content", "get-env"} {
		if !has[n] {
			t.Errorf("%s is not listed", n)
		}
	}
	s := b.NewSession()
	if got := mustCall(t, s, "everything", "echo", `{"message":"hello"}`); got != `"Echo: hello"` {
		t.Errorf("echo = %s", got)
	}
	if got := mustCall(t, s, "everything", "get-sum", `{"a": 2, "b": 40}`); !strings.Contains(got, "42") {
		t.Errorf("get-sum = %s", got)
	}
	var img []any
	out := mustCall(t, s, "everything", "get-tiny-image", `{}`)
	if err := json.Unmarshal([]byte(out), &img); err != nil {
		t.Fatalf("get-tiny-image = %.200s: %v", out, err)
	}
	found := false
	for _, it := range img {
		if it, ok := it.(map[string]any); ok && it["type"] == "image" && it["mimeType"] == "image/png" && it["data"] != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("get-tiny-image = %.300s; want an item {type: image, mimeType, data}", out)
	}
	var st map[string]any
	out = mustCall(t, s, "everything", "get-structured-content", `{"location":"New York"}`)
	if err := json.Unmarshal([]byte(out), &st); err != nil || st["temperature"] == nil {
		t.Errorf("get-structured-content = %s", out)
	}
	env := mustCall(t, s, "everything", "get-env", `{}`)
	if strings.Contains(env, canary) || strings.Contains(env, "CRUCIBLE_HOST_CANARY") || !strings.Contains(env, "API_TOKEN") {
		t.Errorf("get-env = %s; want API_TOKEN, its value redacted, and nothing of the host", env)
	}
	_, err = call(t, s, "everything", "trigger-long-running-operation", `{}`)
	wantRefusal(t, err, KindTool, "denied")
}

func TestServerMemory(t *testing.T) {
	srv := npmServer(t, "server-memory", map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")})
	b := newBridge(t, Options{Servers: map[string]Server{"memory": srv}})
	s := b.NewSession()
	mustCall(t, s, "memory", "create_entities", `{"entities":[{"name":"crucible","entityType":"project","observations":["written in Go"]}]}`)
	var g struct {
		Entities []struct {
			Name         string   `json:"name"`
			Observations []string `json:"observations"`
		} `json:"entities"`
	}
	out := mustCall(t, s, "memory", "read_graph", `{}`)
	if err := json.Unmarshal([]byte(out), &g); err != nil || len(g.Entities) != 1 || g.Entities[0].Name != "crucible" {
		t.Errorf("read_graph = %s (%v)", out, err)
	}
}
