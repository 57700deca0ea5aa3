package deno

import "github.com/cruciblehq/crucible/lang"

func init() {
	lang.Register(lang.Language{
		Name: lang.Deno, // by --lang only: .ts and .js go to the embedded engine
		Program: func(src []byte, file string, s lang.Settings) (*lang.Program, error) {
			bin, err := Find(s.Deno)
			if err != nil {
				return nil, err
			}
			return Program(src, file, bin), nil
		},
		Check: func(s lang.Settings) (string, error) { return Find(s.Deno) },
	})
}
