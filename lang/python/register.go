package python

import (
	"errors"
	"fmt"

	"github.com/cruciblehq/crucible/lang"
	"golang.org/x/sys/unix"
)

func init() {
	lang.Register(lang.Language{
		Name:       lang.Python,
		Extensions: []string{".py"},
		Program: func(src []byte, file string, s lang.Settings) (*lang.Program, error) {
			// Checked here, on the host: a missing interpreter is the
			// operator's to fix, named by its setting; inside the jail it
			// would be only "not found".
			if unix.Access(s.Python, unix.X_OK) != nil {
				// No path in the message: it may reach the model.
				return nil, errors.New("the interpreter of runtimes.python is not there: install python3 (apt-get install python3), or set runtimes.python")
			}
			return Program(src, file, s.Python), nil
		},
		Check: check,
		Warm: &lang.Warm{
			// A missing interpreter fails each warm jail as it starts, and
			// its execution with it: Program's check is not there to say
			// why, but `crucible doctor` is.
			Program: func(s lang.Settings) (*lang.Program, error) { return WarmProgram(s.Python), nil },
			Input: func(src []byte, file string) ([]byte, error) {
				return Input(src, file), nil
			},
			SaysReady: true, // runner.py's job()
			Compile: &lang.Compile{
				Program: func(s lang.Settings) *lang.Program { return CompileProgram(s.Python) },
				Files:   Compiled,
			},
		},
	})
}

// check is crucible doctor's: it names the path, for the operator.
func check(s lang.Settings) (string, error) {
	if err := unix.Access(s.Python, unix.X_OK); err != nil {
		return "", fmt.Errorf("%s: %w: install python3 (apt-get install python3), or set runtimes.python", s.Python, err)
	}
	return s.Python, nil
}
