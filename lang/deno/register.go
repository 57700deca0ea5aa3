package deno

import "github.com/cruciblehq/crucible/lang"

// Worker names the warm worker of every language Deno runs: one pool of
// Deno jails serves them all, each program told its language by the
// extension of its name.
const Worker = "deno"

func init() {
	// By --lang only, and warm only as the engine (see As): .ts and .js
	// go to the engine of runtimes.engine.
	lang.Register(As(lang.Deno, nil, ""))
}

// As is the language name, whose sources have the extensions exts, run on
// Deno: its programs run under a name with the extension ext (".ts",
// ".js"), or, without one, under their file's when Deno runs that (else
// .ts).
func As(name string, exts []string, ext string) lang.Language {
	plan := func(s lang.Settings, program func(bin string) *lang.Program) (*lang.Program, error) {
		bin, err := Find(s.Deno)
		if err != nil {
			return nil, err
		}
		p := program(bin)
		p.Lang = name
		return p, nil
	}
	return lang.Language{
		Name:       name,
		Extensions: exts,
		Program: func(src []byte, file string, s lang.Settings) (*lang.Program, error) {
			return plan(s, func(bin string) *lang.Program { return Program(src, file, ext, bin) })
		},
		// JavaScript too: checkJs, so that a wrong tool's name or
		// argument is caught in either.
		TypeCheck: &lang.TypeCheck{
			Program: func(src []byte, file, declarations string, s lang.Settings) (*lang.Program, error) {
				return plan(s, func(bin string) *lang.Program { return CheckedProgram(src, file, ext, bin, declarations) })
			},
			Input: func(src []byte, file, declarations string) ([]byte, error) {
				return CheckedInput(src, file, ext, declarations)
			},
		},
		Check: func(s lang.Settings) (string, error) { return Find(s.Deno) },
		Warm: &lang.Warm{
			Program: func(s lang.Settings) (*lang.Program, error) {
				bin, err := Find(s.Deno)
				if err != nil {
					return nil, err
				}
				return WarmProgram(bin, s.WarmChecker), nil
			},
			Input:     func(src []byte, file string) ([]byte, error) { return Input(src, file, ext) },
			SaysReady: true, // run.js's job()
			Worker:    Worker,
		},
	}
}
