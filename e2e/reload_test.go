package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Reload without a restart, the binary's: SIGHUP and POST /reload read
// the file again. A host the new file allows is reached by the next
// execution of a session opened before, in the same workspace; a client
// the new file names is let in; a file that does not load is refused
// whole, saying its line, and the one before keeps serving; each reload is
// counted in crucible_config_reloads_total.
func TestServeReload(t *testing.T) {
	requireRoot(t)
	f := newNetFix(t)
	const bobToken = "bob-reload-token-0123456789"
	cfgFile := filepath.Join(t.TempDir(), "crucible.yaml")
	network := func(allow string) string {
		return fmt.Sprintf("network:\n  allow: [%s]\n  hosts: {%s: 127.0.0.1}\n  allow_private: [127.0.0.0/8]\n  resolver: %s\n", allow, svcName, f.dns)
	}
	write := func(yaml string) {
		t.Helper()
		if err := os.WriteFile(cfgFile, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(embeddedYAML + network(fmt.Sprintf("%s:%d", upName, f.http)))
	sp := startHTTPServe(t, crucibleCmd("serve", "--http", "127.0.0.1:0", "--config", cfgFile), crucibleEnv("CRUCIBLE_TOKEN="+serveToken, "BOB_TOKEN="+bobToken))

	connect := func(token string) (*mcp.ClientSession, error) { return sessionOf(sp.url, token, "reloader") }
	cs, err := connect(serveToken)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	type out struct {
		Result     json.RawMessage
		Workspace  string
		Violations []struct{ Kind, Host string }
	}
	run := func(cs *mcp.ClientSession, code, workspace string) out {
		t.Helper()
		args := map[string]any{"code": code}
		if workspace != "" {
			args["workspace"] = workspace
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("execute: %v %+v", err, res)
		}
		var o out
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	fetch := fmt.Sprintf(`const r = await fetch("http://%s:%d/x").then((r) => r.text(), (e) => "refused");`, svcName, f.http)
	first := run(cs, `fs.writeTextFile("note.txt", "kept"); `+fetch+` return r`, "")
	if string(first.Result) != `"refused"` || len(first.Violations) == 0 || f.hits.Load() != 0 {
		t.Fatalf("before the reload: %+v (%d requests reached the host)", first, f.hits.Load())
	}

	reloaded := func(want string) {
		t.Helper()
		if err := sp.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); !strings.Contains(sp.log(), want); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q on serve's stderr within a minute:\n%s", want, sp.log())
			}
		}
	}
	write(embeddedYAML + network(fmt.Sprintf("%s:%d", svcName, f.http)) + "clients:\n  bob: {token: {from: env:BOB_TOKEN}}\n")
	reloaded("crucible serve: reloaded")
	after := run(cs, fetch+` return [fs.readTextFile("note.txt"), r]`, first.Workspace)
	want := fmt.Sprintf(`["kept","hello from %s:%d /x\n"]`, svcName, f.http)
	if string(after.Result) != want || len(after.Violations) != 0 {
		t.Errorf("the session's next execution after the reload: %s %+v, want %s", after.Result, after.Violations, want)
	}
	bob, err := connect(bobToken)
	if err != nil {
		t.Fatalf("the client the reload added: %v", err)
	}
	_ = bob.Close()

	// Refused whole: the line is named, the configuration before serves.
	write(embeddedYAML + "network:\n  allow: 5\n")
	reloaded("reload refused, the configuration before it keeps serving: ")
	if !strings.Contains(sp.log(), "crucible.yaml:4") {
		t.Errorf("the refusal does not name the file's line:\n%s", sp.log())
	}
	post := func() (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", sp.url+"/reload", nil)
		req.Header.Set("Authorization", "Bearer "+serveToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if code, body := post(); code != http.StatusConflict || !strings.Contains(body, "crucible.yaml:4") {
		t.Errorf("POST /reload of a bad file: %d %q", code, body)
	}
	if again := run(cs, fetch+` return r`, ""); !strings.Contains(string(again.Result), "hello from") {
		t.Errorf("after refused reloads: %s, want the configuration before them", again.Result)
	}
	write(embeddedYAML + network(fmt.Sprintf("%s:%d", upName, f.http)))
	if code, body := post(); code != http.StatusOK || !strings.HasPrefix(body, "reloaded") {
		t.Errorf("POST /reload: %d %q", code, body)
	}
	if _, err := connect(bobToken); err == nil {
		t.Error("a client the last reload removed is let in")
	}
	// Without the token, no reload.
	resp, err := http.Post(sp.url+"/reload", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /reload without a token: %d", resp.StatusCode)
	}

	_, metrics, err := opsGetErr(sp.url, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`crucible_config_reloads_total{result="ok"} 2`, `crucible_config_reloads_total{result="error"} 2`} {
		if !strings.Contains(metrics, w) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
}
