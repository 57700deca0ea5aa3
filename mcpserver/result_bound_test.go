package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cruciblehq/crucible/config"
)

// A program that prints megabytes, returns a huge value and throws a huge
// error: what goes back to the model is bounded by serve.max_result_output
// (each part's head and tail kept, truncated set), far below the jail's own
// output limit, so that one answer cannot flood the model's context.
func TestAttackResultFloodsTheModel(t *testing.T) {
	const bound = 4 << 10
	// The program builds strings of megabytes: under the race detector, on
	// two cores shared with other packages' tests, that took more than the
	// tests' usual 20s once. Its time is not what is tested here.
	s := ownServer(t, func(c *config.Config) {
		c.Serve.MaxResultOutput = bound
		c.Sandbox.Timeout = config.Duration(2 * time.Minute)
	}, Options{})
	cs := connect(t, s)
	// Stdout twice the jail's output cap (1 MiB): more would only cost the
	// race detector time.
	code := `console.log("HEAD-OUT" + "o".repeat(2 << 20) + "TAIL-OUT");
console.error("HEAD-ERR" + "e".repeat(512 << 10) + "TAIL-ERR");
return "HEAD-RES" + "r".repeat(512 << 10) + "TAIL-RES"`
	res, out := execute(t, cs, map[string]any{"code": code})
	if out == nil {
		t.Fatalf("no structured result: %s", text(res))
	}
	if !out.Truncated {
		t.Error("truncated is false")
	}
	for _, p := range []struct{ name, s, head, tail string }{
		{"stdout", out.Stdout, "HEAD-OUT", ""}, // the jail's 1MiB limit cut its tail first
		{"stderr", out.Stderr, "HEAD-ERR", "TAIL-ERR"},
		{"result", string(out.Result), `"HEAD-RES`, `TAIL-RES"`}, // a string still, cut
	} {
		if len(p.s) > bound+200 || !strings.HasPrefix(p.s, p.head) || !strings.HasSuffix(strings.TrimSpace(p.s), p.tail) ||
			!strings.Contains(p.s, "serve.max_result_output") {
			t.Errorf("%s: %d bytes, head %q, tail %q", p.name, len(p.s), p.s[:min(len(p.s), 20)], p.s[max(0, len(p.s)-20):])
		}
	}
	var r string
	if err := json.Unmarshal(out.Result, &r); err != nil {
		t.Errorf("the cut result is not JSON: %v", err)
	}
	b, _ := json.Marshal(res)
	if len(b) > 8*bound+16<<10 {
		t.Errorf("the whole answer is %d bytes", len(b))
	}

	// An uncaught error as large is bounded as well.
	res, out = execute(t, cs, map[string]any{"code": `throw new Error("HEAD-MSG" + "m".repeat(256 << 10))`})
	if out == nil || out.Error == nil || len(out.Error.Message) > bound+200 || !strings.HasPrefix(out.Error.Message, "HEAD-MSG") {
		t.Errorf("a large error: %s", text(res))
	}

	// Under the bound, nothing is cut.
	_, out = execute(t, cs, map[string]any{"code": `console.log("small"); return {a: 1}`})
	if out == nil || out.Truncated || out.Stdout != "small\n" || string(out.Result) != `{"a":1}` {
		t.Errorf("a small result: %+v", out)
	}
}

// cutMiddle bounds what a part takes as JSON, whatever it holds: control
// characters (six bytes each there) and characters of several bytes cut
// at the edges, which stay whole.
func TestCutMiddle(t *testing.T) {
	const limit = 1000
	for name, s := range map[string]string{
		"ascii":    strings.Repeat("a", 10*limit),
		"controls": strings.Repeat("\x01", 900), // under the limit, six times over as JSON
		"runes":    strings.Repeat("é€😀", 3*limit),
		"invalid":  strings.Repeat("\xff\xfe", 3*limit),
	} {
		got, cut := cutMiddle(s, limit)
		if !cut || !strings.Contains(got, "bytes cut here") {
			t.Errorf("%s: not cut", name)
			continue
		}
		note := len(fmt.Sprintf(cutNote, 0)) + 8
		if n := jsonLen(got); n > limit+note+16 {
			t.Errorf("%s: %d bytes as JSON", name, n)
		}
		if name != "invalid" && !utf8.ValidString(got) {
			t.Errorf("%s: a character was cut in two", name)
		}
	}
	if got, cut := cutMiddle("small\n", limit); cut || got != "small\n" {
		t.Errorf("a small part: %q, %v", got, cut)
	}
}
