package python

import (
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
			if _, err := check(s); err != nil {
				return nil, err
			}
			return Program(src, file, s.Python), nil
		},
		Check: check,
	})
}

func check(s lang.Settings) (string, error) {
	if err := unix.Access(s.Python, unix.X_OK); err != nil {
		return "", fmt.Errorf("%s: %w: install python3 (apt-get install python3), or set runtimes.python", s.Python, err)
	}
	return s.Python, nil
}
