package callrule

import (
	"strings"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/toolargs"
)

// The rules of the example, and calls that try to slip past them.
func TestRefuses(t *testing.T) {
	rules, err := Compile([]Rule{
		{Tools: []string{"create_issue", "update_issue"}, AllowIf: `args.owner == "acme" && size(args.body) < 20000`, Reason: "issues only in the acme org"},
		{Tools: []string{"transfer"}, AllowIf: `args.amount < 500`},
		{Tools: []string{"*/delete_*", "delete_*"}, AllowIf: `false`, Reason: "nothing is deleted"},
		{Tools: []string{"paged"}, AllowIf: `execution.calls < 3 && tool.server == "gh" && now > timestamp("2020-01-01T00:00:00Z")`},
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, c := range []struct {
		tool, args string
		calls      int
		want       string // "" allowed; else a part of the refusal
	}{
		{"create_issue", `{"owner": "acme", "body": "hi"}`, 0, ""},
		{"create_issue", `{"owner": "evil", "body": "hi"}`, 0, "rule 0 of this server: issues only in the acme org"},
		// Nested JSON in a string is a string, not the object it spells.
		{"create_issue", `{"owner": "{\"owner\": \"acme\"}", "body": "hi"}`, 0, "acme org"},
		{"create_issue", `{"owner": "acme", "body": "` + strings.Repeat("x", 20000) + `"}`, 0, "acme org"},
		// A missing field does not read as anything: the evaluation errs,
		// and the call is refused.
		{"update_issue", `{"body": "hi"}`, 0, "could not be evaluated"},
		{"update_issue", `{"owner": "ACME", "body": "hi"}`, 0, "acme org"},
		{"transfer", `{"amount": 499}`, 0, ""},
		{"transfer", `{"amount": 500}`, 0, "its condition args.amount < 500 is false"},
		{"transfer", `{"amount": 1e9}`, 0, "is false"},
		{"transfer", `{"amount": "100"}`, 0, "could not be evaluated"}, // a number as a string
		{"transfer", `{"amount": [1]}`, 0, "could not be evaluated"},
		// Exact integers: a float would read the first as the second.
		{"transfer", `{"amount": 9007199254740992}`, 0, "is false"},
		{"transfer", `{}`, 0, "could not be evaluated"},
		{"admin/delete_repo", `{}`, 0, "nothing is deleted"}, // '/' in the name
		{"delete_/x", `{}`, 0, "nothing is deleted"},
		{"paged", `{}`, 2, ""},
		{"paged", `{}`, 3, "is false"},
		{"other", `{"anything": true}`, 0, ""}, // no rule names it
	} {
		got := Decide(rules, Call{Server: "gh", Tool: c.tool, Args: args(t, c.args), Calls: c.calls, Now: now}).Refused
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s(%.60s): %q, want %q", c.tool, c.args, got, c.want)
		}
	}
}

// A condition that does not load is refused with where and why, before any
// call: syntax, types, a value that is not a condition, and one that could
// cost past the limit over a 1 MiB argument.
func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		rule Rule
		want string
	}{
		{Rule{Tools: []string{"x"}, AllowIf: `args.owner == `}, "rules[0].allow_if, column 15: "},
		{Rule{Tools: []string{"x"}, AllowIf: `args.owner == 1 +`}, "rules[0].allow_if, column"},
		{Rule{Tools: []string{"x"}, AllowIf: `request.method == "GET"`}, "undeclared reference to 'request'"},
		{Rule{Tools: []string{"x"}, AllowIf: `client.name == 1`}, "found no matching overload"},
		{Rule{Tools: []string{"x"}, AllowIf: `args.owner`}, "is a dyn, not a condition"},
		{Rule{Tools: []string{"x"}, AllowIf: `size(args.body)`}, "not a condition"},
		{Rule{Tools: []string{"x"}, AllowIf: `args.items.all(a, args.items.all(b, a == b))`}, "more than the 1000000 a condition may"},
		{Rule{Tools: []string{"x"}, AllowIf: ``}, "rules[0].allow_if: is empty (give a condition, e.g. args.owner == \"acme\", or approve: true)"},
		{Rule{AllowIf: `true`}, "rules[0].tools: names no tool"},
		{Rule{Tools: []string{"[x"}, AllowIf: `true`}, `rules[0].tools: pattern "[x"`},
	} {
		_, err := Compile([]Rule{c.rule})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.rule, err, c.want)
		}
	}
}

// Approval: a rule with approve and no condition names every call for a
// human; with a condition, only the calls it allows (the others are
// refused without asking). A rule without approve never asks.
func TestApprove(t *testing.T) {
	rules, err := Compile([]Rule{
		{Tools: []string{"transfer"}, AllowIf: `args.amount < 500`, Reason: "small transfers only"},
		{Tools: []string{"wire"}, AllowIf: `args.amount < 10000`, Approve: true, Reason: "a human confirms wires"},
		{Tools: []string{"delete_*", "*/delete_*"}, Approve: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool, args string
		want       Decision
	}{
		{"transfer", `{"amount": 1}`, Decision{Rule: 0, Reason: "small transfers only"}},
		{"wire", `{"amount": 1}`, Decision{Rule: 1, Approve: true, Reason: "a human confirms wires"}},
		{"wire", `{"amount": 20000}`, Decision{Rule: 1, Reason: "a human confirms wires", Refused: "tool wire is refused by rule 1 of this server: a human confirms wires"}},
		{"delete_repo", `{}`, Decision{Rule: 2, Approve: true}},
		{"admin/delete_repo", `{"x": 1}`, Decision{Rule: 2, Approve: true}},
		{"list", `{}`, Decision{Rule: -1}},
	} {
		if got := Decide(rules, Call{Tool: c.tool, Args: args(t, c.args)}); got != c.want {
			t.Errorf("%s(%s): %+v, want %+v", c.tool, c.args, got, c.want)
		}
	}
}

// The variables of who asks: the client's name and profile, the
// execution's language.
func TestClientAndLanguage(t *testing.T) {
	rules, err := Compile([]Rule{
		{Tools: []string{"*"}, AllowIf: `client.name == "ci" && client.profile == "" && execution.language in ["py", "ts"]`},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		client, language string
		ok               bool
	}{{"ci", "py", true}, {"ci", "ts", true}, {"ci", "", false}, {"alice", "py", false}, {"", "py", false}} {
		d := Decide(rules, Call{Tool: "x", Args: args(t, `{}`), Client: c.client, Language: c.language})
		if (d.Refused == "") != c.ok {
			t.Errorf("client %q, language %q: %+v, want allowed %v", c.client, c.language, d, c.ok)
		}
	}
}

// The cost of a rule on a call: one condition over the arguments, the tool
// and the execution, decided (bench/tools -rule measures it end to end).
func BenchmarkDecide(b *testing.B) {
	rules, err := Compile([]Rule{{Tools: []string{"echo"}, AllowIf: `size(args.message) < 1000 && tool.server == "ev" && execution.calls < 100000`}})
	if err != nil {
		b.Fatal(err)
	}
	c := Call{Server: "ev", Tool: "echo", Args: args(b, `{"message": "hello"}`), Now: time.Now()}
	for b.Loop() {
		if d := Decide(rules, c); d.Refused != "" {
			b.Fatal(d.Refused)
		}
	}
}

func args(t testing.TB, raw string) *toolargs.Args {
	t.Helper()
	a, err := toolargs.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return a
}
