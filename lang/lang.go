// Package lang turns a program's source into what runs it inside the jail:
// a command, the files it needs (a small runner and the source), and the
// host paths to bind. Each language lives in a subpackage that registers
// itself here ([Register]); they all hand back the program's result the same
// way, as one JSON object ([Outcome]) written to the command's fd 3.
//
// It knows nothing of the jail's mechanics or of the config file: the
// operator's settings arrive as [Settings].
package lang

import (
	"encoding/json"
	"fmt"
)

// Languages, as `crucible run --lang` names them.
const (
	TypeScript = "ts"
	JavaScript = "js"
	Python     = "py"
	Deno       = "deno"
)

// Dir is where a program's own files are in the jail: the jail places
// [Program.Files], and binds [Program.Self], read-only under it. Each
// language keeps to a folder of its own below it.
const Dir = "/crucible"

// Program is a language runtime's plan for one execution.
type Program struct {
	Lang     string            // which language, as Detect names it
	Main     string            // the program's source, among Files
	Args     []string          // the command inside the jail
	Env      map[string]string // added to the jail's environment
	Files    map[string][]byte // placed read-only in the jail, by absolute path
	ReadOnly []string          // host paths the command needs, bound read-only
	Self     string            // where the command, this very binary, is bound; "" for none

	// ReportsExit says that the runner gives its exit code in its report
	// (Outcome.Exit), then exits with it, nothing of the program's left to
	// run: the execution may end on that report (jail.Spec.ReportedExit),
	// once every process of it has begun to exit. A program that can write
	// fd 3 itself (Deno's) can only spoil the report, which then has no
	// exit and the execution waits for init, or forge one, and end with a
	// code it could have exited with. A runner whose program may run on
	// after the report (Python's exit handlers) does not.
	ReportsExit bool
	// ToolPipes says that the runner takes its tools channel as two
	// pipes (toolchannel.Options.Pipes): a runtime that can open a pipe by
	// its descriptor and no socket (Deno, without its Node layer).
	ToolPipes bool
}

// Outcome is what a runner reports on fd 3.
type Outcome struct {
	Result json.RawMessage `json:"result,omitempty"` // the program's value, as JSON
	Error  *Error          `json:"error,omitempty"`  // an uncaught error

	// Exit is the runner's exit code, from a runner that exits as soon as
	// it has reported, with nothing of the program's left to run: the
	// execution can end on it before the kernel has torn the runner down
	// (jail.Spec.ReportedExit). A runner that may run more of the program
	// after its report (Python's exit handlers, say) leaves it out.
	Exit *int `json:"exit,omitempty"`
}

// Error is an uncaught error, with a stack whose lines are those of the
// program's own source.
type Error struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

// ParseOutcome reads what a runner wrote. Empty means the runner never got
// to report (the program was killed, or replaced the runner): no result.
func ParseOutcome(b []byte) (*Outcome, error) {
	var o Outcome
	if len(b) == 0 {
		return &o, nil
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("the program's result channel held no valid result: %w", err)
	}
	return &o, nil
}
