package sandbox

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/toolbridge"
)

// FuzzToolChannel sends the channel whatever the code may: every line gets
// one answer, a JSON object with the request's id (or null), and nothing
// panics. The bridge has no servers, so that no call leaves the process.
func FuzzToolChannel(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"list"}`,
		`{"id":2,"method":"call","server":"x","tool":"y","args":{"a":1}}`,
		`{"id":"s","method":"resource","server":"x","uri":"u"}`,
		`{"id":3,"method":"call","args":[1]}`,
		`{"id":{},"method":7}`,
		`not json`, `{}`, `null`, `[1,2]`, "\x00\xff",
	} {
		f.Add(s)
	}
	b, err := toolbridge.New(toolbridge.Options{})
	if err != nil {
		f.Fatal(err)
	}
	tools := &Tools{bridge: b, maxLine: 1 << 16, records: 8}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) >= tools.maxLine || strings.Contains(line, "\n") {
			return
		}
		c, err := newToolChannel(tools, &jail.Spec{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.serve("fuzz")
		code, err := net.FileConn(c.peer)
		if err != nil {
			t.Fatal(err)
		}
		defer code.Close()
		go func() { _, _ = io.WriteString(code, line+"\n") }()
		r := bufio.NewReader(code)
		answer, err := r.ReadBytes('\n')
		c.stop()
		if err != nil {
			t.Fatalf("%q: no answer: %v", line, err)
		}
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct{ Kind, Message string }
		}
		if err := json.Unmarshal(answer, &a); err != nil || a.ID == nil || (a.Result == nil) == (a.Error == nil) {
			t.Fatalf("%q: answer %q (%v)", line, answer, err)
		}
	})
}
