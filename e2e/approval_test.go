package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// approvalStep is a line of testdata/approvalclient.mjs.
type approvalStep struct {
	Step, Error string
	Index       int
	Result      struct {
		IsError           bool
		StructuredContent struct {
			Result     json.RawMessage
			Violations []struct {
				Kind   string
				Count  int
				Reason string
			}
		}
	}
	Shown []string
}

// approvalClient runs testdata/approvalclient.mjs with args against
// `crucible serve` over stdio with cfg, and returns its executes' steps.
func approvalClient(t *testing.T, cfg string, args ...string) []approvalStep {
	t.Helper()
	node, _ := mcpNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	argv := append(append([]string{"testdata/approvalclient.mjs"}, args...), append([]string{"--stdio"}, crucibleCmd("serve", "--config", cfg)...)...)
	cmd := exec.CommandContext(ctx, node, argv...)
	cmd.Env = crucibleEnv()
	cmd.WaitDelay = 10 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	var steps []approvalStep
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var s approvalStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("approvalclient: not a JSON step: %v\n%s", err, sc.Text())
		}
		if s.Error != "" {
			t.Fatalf("approvalclient: step %s failed: %s\nstderr:\n%s", s.Step, s.Error, stderr.String())
		}
		steps = append(steps, s)
	}
	return steps
}

// approvals counts the violations of kind approval in s.
func (s approvalStep) approvals() int {
	n := 0
	for _, v := range s.Result.StructuredContent.Violations {
		if v.Kind == "approval" {
			n += v.Count
		}
	}
	return n
}

// A rule says a human approves each echo; the official TypeScript SDK's
// client is the human's agent, and its elicitation handler answers:
// accept lets the call out, decline, cancel and no answer in time refuse
// it (violations of kind approval, each answer in the audit trail with the
// client and the arguments' hash). A program that asks in a loop is
// stopped by max_calls, each question asked once and in turn; a client
// that cannot be asked gets each such call refused, saying why.
func TestServeApproval(t *testing.T) {
	requireRoot(t)
	// Mostly waits: see parallel, in main_test.go.
	t.Parallel()
	mcpNode(t)
	dir := t.TempDir()
	trail := filepath.Join(dir, "audit.ndjson")
	// The answers that are to arrive in time get all the time a loaded
	// machine may need to carry them (serve to node over stdio and back);
	// the one that is to come too late is asked under a short timeout, in
	// an execution of its own, below.
	config := func(timeout string) string {
		cfg, _ := everythingConfig(t, "    rules: [{tools: [echo], approve: true, reason: echoes need a human}]\n"+
			"    approval_timeout: "+timeout+"\ntools:\n  max_calls: 6\naudit:\n  file: "+trail+"\n")
		return cfg
	}
	cfg := config("5m")
	each := `const out = [];
for (const m of ["one", "two", "three"]) {
  try { out.push(await tools.ev.echo({ message: m })); } catch (e) { out.push("refused: " + e.message); }
}
return out;`
	loop := `let n = 0;
for (let i = 0; i < 100; i++) {
  try { await tools.ev.echo({ message: "again" }); } catch (e) { n++; if (e.message.includes("tool calls")) return [i, e.message]; }
}
return n;`
	const refused = "tool echo needs a human's approval (rule 0 of this server: echoes need a human), and was refused"
	steps := approvalClient(t, cfg, "--answers", "accept,decline,cancel,decline", "--code", each, "--code", loop)
	if len(steps) != 2 {
		t.Fatalf("%d executes ran, want 2: %+v", len(steps), steps)
	}
	var got []string
	if err := json.Unmarshal(steps[0].Result.StructuredContent.Result, &got); err != nil || len(got) != 3 {
		t.Fatalf("the first program's result: %s", steps[0].Result.StructuredContent.Result)
	}
	for i, want := range []string{"Echo: one", "the human declined it", "the human dismissed the request"} {
		if !strings.Contains(got[i], want) || (i > 0 && !strings.Contains(got[i], refused)) {
			t.Errorf("call %d: %q, want %q", i, got[i], want)
		}
	}
	if n := steps[0].approvals(); n != 2 {
		t.Errorf("%d approval violations, want 2", n)
	}
	if len(steps[0].Shown) != 3 || !strings.Contains(steps[0].Shown[0], `the tool echo of the server ev`) || !strings.Contains(steps[0].Shown[0], `message: "one"`) {
		t.Errorf("the human was shown %q", steps[0].Shown)
	}
	// max_calls is 6: six questions, in turn, then the limit.
	if r := string(steps[1].Result.StructuredContent.Result); !strings.Contains(r, `[6,"this execution has made its 6 tool calls`) || len(steps[1].Shown) != 6 {
		t.Errorf("the loop: %s, after %d questions", r, len(steps[1].Shown))
	}

	// No answer in time: refused when the approval_timeout is up.
	steps = approvalClient(t, config("2s"), "--answers", "hang", "--code",
		`try { return await tools.ev.echo({ message: "four" }); } catch (e) { return "refused: " + e.message; }`)
	if len(steps) != 1 {
		t.Fatalf("%d executes ran, want 1: %+v", len(steps), steps)
	}
	var hung string
	if err := json.Unmarshal(steps[0].Result.StructuredContent.Result, &hung); err != nil ||
		!strings.Contains(hung, "no answer came within 2s (servers.ev.approval_timeout)") || !strings.Contains(hung, refused) {
		t.Errorf("no answer in time: %s", steps[0].Result.StructuredContent.Result)
	}
	if n := steps[0].approvals(); n != 1 || len(steps[0].Shown) != 1 || !strings.Contains(steps[0].Shown[0], `message: "four"`) {
		t.Errorf("no answer in time: %d approval violations, the human was shown %q", n, steps[0].Shown)
	}

	// The audit trail: each answer, for the stdio client, by the
	// arguments' hash.
	b, err := os.ReadFile(trail)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil || ev["event"] != "approval" {
			continue
		}
		if ev["client"] != "stdio" || ev["server"] != "ev" || ev["tool"] != "echo" || len(ev["args_sha256"].(string)) != 64 {
			t.Errorf("an approval line: %s", line)
		}
		answers = append(answers, ev["answer"].(string))
	}
	if want := "accept decline cancel decline decline decline decline decline decline timeout"; strings.Join(answers, " ") != want {
		t.Errorf("the audit trail's answers: %q, want %q", answers, want)
	}

	// A client without elicitation: refused, and told why.
	steps = approvalClient(t, cfg, "--no-elicitation", "--code", `return await tools.ev.echo({ message: "x" })`)
	if len(steps) != 1 || !steps[0].Result.IsError || steps[0].approvals() != 1 {
		t.Fatalf("without elicitation: %+v", steps)
	}
	b, _ = json.Marshal(steps[0].Result)
	if !strings.Contains(string(b), "no one could be asked: the MCP client did not declare form elicitation") {
		t.Errorf("without elicitation: %s", b)
	}
}

// crucible run has no human to ask: a call that a rule says one must
// approve is refused, saying what would let it out; --approve-all lets it
// out unasked, with a warning, and the audit trail says no human was asked.
func TestRunApproveAll(t *testing.T) {
	requireRoot(t)
	cfg, dir := everythingConfig(t, "    rules: [{tools: [echo], approve: true}]\n")
	prog := program(t, dir, "p.ts", `return await tools.ev.echo({ message: "x" })`)
	r := jsonRun(t, "", "run", "--json", "--config", cfg, prog)
	if r.Error == nil || !strings.Contains(r.Error.Message, "no one could be asked: this execution has no one to ask (crucible serve asks its MCP client; crucible run and exec approve only with --approve-all)") ||
		len(r.Violations) != 1 || r.Violations[0].Kind != "approval" {
		t.Errorf("without --approve-all: %+v %+v", r.Error, r.Violations)
	}

	trail := filepath.Join(t.TempDir(), "audit.ndjson")
	code, out, errs := run(t, "", "run", "--approve-all", "--audit", trail, "--config", cfg, prog)
	if code != 0 || out != "\"Echo: x\"\n" || !strings.Contains(errs, "crucible: warning: --approve-all: every tool call that a rule says a human must approve goes out unasked") {
		t.Errorf("--approve-all: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	lines := auditLines(t, trail, "approval")
	if len(lines) != 1 || lines[0]["answer"] != "accept" || lines[0]["why"] != "--approve-all: no human was asked" {
		t.Errorf("the audit trail: %v", lines)
	}
}
