package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// Every network line of the audit trail names the execution it belongs
// to, whichever way the execution ran: a session that moves between
// languages runs some programs in a new jail and some on warm ones (before,
// once a session changed language, the network lines of that execution and
// of every later one said "exec":""). Each program looks up a name of its
// own, with no network rules: the jail's resolver refuses it, and the
// refusal is the execution's.
func TestAuditNetworkLinesNameTheirExecution(t *testing.T) {
	var trail testenv.Buffer
	w := audit.New(&trail)
	s := ownServer(t, nil, Options{Audit: w})
	cs := connect(t, s)
	langs := []string{"ts", "py", "ts", "py", "js"}
	for i, l := range langs {
		code := fmt.Sprintf(`try { await fetch("https://n%d.example.com/") } catch (e) {}`, i)
		if l == "py" {
			code = fmt.Sprintf("import socket\ntry:\n    socket.getaddrinfo('n%d.example.com', 443)\nexcept OSError:\n    pass\n", i)
		}
		res, out := execute(t, cs, map[string]any{"code": code, "language": l})
		if res.IsError || out == nil || len(out.Violations) == 0 {
			t.Fatalf("execution %d (%s): %s", i, l, text(res))
		}
	}
	closeWithin(t, s)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The execution line comes after its network lines: pair them by the
	// name each program looked up.
	var execs []string           // in order
	asked := map[string]string{} // name -> exec of its network lines
	for _, line := range strings.Split(strings.TrimSpace(trail.String()), "\n") {
		var ev struct{ Event, Exec, Name, Language string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		switch ev.Event {
		case "execution":
			execs = append(execs, ev.Exec)
		case "network":
			if ev.Exec == "" {
				t.Errorf("a network line without its execution: %s", line)
			}
			asked[ev.Name] = ev.Exec
		}
	}
	if len(execs) != len(langs) {
		t.Fatalf("%d execution lines, want %d:\n%s", len(execs), len(langs), trail.String())
	}
	for i, exec := range execs {
		if got := asked[fmt.Sprintf("n%d.example.com", i)]; got != exec {
			t.Errorf("execution %d (%s) is %q, its lookup's line says %q", i, langs[i], exec, got)
		}
	}
}
