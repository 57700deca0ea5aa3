package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clientScenarios is every client scenario of the conformance suite
// (@modelcontextprotocol/conformance 0.1.16, `conformance list --client`),
// with Crucible as the client of a remote server (crucible login, then
// crucible tools, and crucible run for a call; see
// testdata/conformance_client.py), and why one does not apply.
var clientScenarios = []struct{ name, notApplicable string }{
	{"initialize", ""},
	{"tools_call", ""},
	{"elicitation-sep1034-client-defaults", "the bridge's client declares no elicitation: the code in the jail has no one to ask"},
	{"sse-retry", "the bridge opens no standalone SSE stream and does not resume one: a dropped session is started afresh"},
	{"auth/metadata-default", ""},
	{"auth/metadata-var1", ""},
	{"auth/metadata-var2", ""},
	{"auth/metadata-var3", ""},
	{"auth/basic-cimd", ""},
	{"auth/scope-from-www-authenticate", ""},
	{"auth/scope-from-scopes-supported", ""},
	{"auth/scope-omitted-when-undefined", ""},
	{"auth/scope-step-up", ""}, // stepped up at the next crucible login
	{"auth/scope-retry-limit", ""},
	{"auth/token-endpoint-auth-basic", ""},
	{"auth/token-endpoint-auth-post", ""},
	{"auth/token-endpoint-auth-none", ""},
	{"auth/pre-registration", ""},
	{"auth/2025-03-26-oauth-metadata-backcompat", "2025-03-26: its metadata's issuer is not the URL it is served for, which the SDK refuses (RFC 8414 3.3)"},
	{"auth/2025-03-26-oauth-endpoint-fallback", ""},
	{"auth/resource-mismatch", ""},
	{"auth/offline-access-scope", ""},
	{"auth/offline-access-not-supported", ""},
	{"auth/client-credentials-jwt", "private_key_jwt client authentication: oauth takes a client_secret only"},
	{"auth/client-credentials-basic", ""},
	{"auth/cross-app-access-complete-flow", "the enterprise cross-app access extension (an IdP's ID token exchanged), which oauth does not configure"},
}

// The conformance suite's client scenarios that apply, each of which must
// pass without a failure or a warning.
func TestLoginConformance(t *testing.T) {
	requireRoot(t) // tools_call and scope-step-up call a tool from crucible run
	node, nm := mcpNode(t)
	script, _ := filepath.Abs("testdata/conformance_client.py")
	for _, sc := range clientScenarios {
		t.Run(strings.ReplaceAll(sc.name, "/", "_"), func(t *testing.T) {
			if sc.notApplicable != "" {
				t.Skip("does not apply: " + sc.notApplicable)
			}
			t.Parallel()
			work, out := t.TempDir(), t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(nm, "@modelcontextprotocol/conformance/dist/index.js"),
				"client", "--command", "/usr/bin/python3 "+script, "--scenario", sc.name, "-o", out, "--timeout", "120000")
			cmd.Env = append(os.Environ(), "WORKDIR="+work, "CRUCIBLE="+os.Args[0], "CRUCIBLE_TEST_CLI=1", quickExit)
			cmd.WaitDelay = 10 * time.Second
			output, err := cmd.CombinedOutput()
			checkConformance(t, sc.name, out, output, err)
		})
	}
}

// checkConformance reads the checks.json that a run of the suite left in
// dir: each check must be a success (or only informative), and one at
// least a success.
func checkConformance(t *testing.T, name, dir string, output []byte, err error) {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	nested, _ := filepath.Glob(filepath.Join(dir, "*", "*", "checks.json")) // auth/NAME-time/
	found = append(found, nested...)
	if len(found) != 1 {
		t.Fatalf("conformance %s: %v, no checks.json in %s:\n%s", name, err, dir, output)
	}
	b, rerr := os.ReadFile(found[0])
	var checks []struct{ ID, Status, Description, ErrorMessage string }
	if rerr != nil || json.Unmarshal(b, &checks) != nil || len(checks) == 0 {
		t.Fatalf("conformance %s: %v, unreadable checks %s:\n%s", name, rerr, found[0], b)
	}
	passed := 0
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			passed++
		case "INFO":
		default:
			t.Errorf("%s: %s: %s (%s)", c.ID, c.Status, c.ErrorMessage, c.Description)
		}
	}
	if err != nil || passed == 0 {
		t.Errorf("conformance %s: %v, %d checks passed\n%s", name, err, passed, output)
	}
}

// The table above names every client scenario of the installed suite.
func TestClientScenarioList(t *testing.T) {
	var known []string
	for _, sc := range clientScenarios {
		known = append(known, sc.name)
	}
	checkScenarioList(t, "client", known)
}
