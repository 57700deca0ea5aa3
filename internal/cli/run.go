package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cruciblehq/crucible/sandbox"
)

const runUsage = `Usage: crucible run [flags] [--lang ts|js|py|deno] FILE|-

Runs a program in a brand-new jail: the language comes from --lang, else the
file's extension (.ts .js .mjs .py), else TypeScript. With - the source is
read from standard input. --json adds "result" (the program's value: Python's
crucible.result, a module's default export) and "error" (an uncaught error,
with the program's own line numbers) to the exec result.

Flags (those of crucible exec, and --lang):
`

// maxSource bounds a program's source: it travels in the jail's spec.
const maxSource = 16 << 20

func runRun(ctx context.Context, args []string, env Env) int {
	fs := newFlagSet("run", runUsage)
	var f execFlags
	f.register(fs)
	langName := fs.String("lang", "", "the program's `language`: ts, js, py or deno (default: from the file's extension, else ts)")
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(env.Stderr, "crucible run: want one FILE, or - for standard input (usage: crucible run [flags] FILE|-)")
		return ExitUsage
	}
	// Flags may follow FILE too (crucible run prog.ts --json).
	file := fs.Arg(0)
	if rest := fs.Args()[1:]; len(rest) > 0 {
		if code, ok := parseFlags(fs, rest, env); !ok {
			return code
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(env.Stderr, "crucible run: %q after %s: a program takes no arguments (usage: crucible run [flags] FILE|- [flags])\n", fs.Arg(0), file)
			return ExitUsage
		}
	}
	cfg, err := f.load(fs)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible run: %v\n", err)
		return ExitUsage
	}
	l, err := sandbox.DetectLanguage(*langName, file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible run: --lang: %v\n", err)
		return ExitUsage
	}
	src, stdin, err := readSource(file, env.Stdin)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible run: %v\n", err)
		return ExitUsage
	}
	prog, err := sandbox.Program(cfg, l, src, file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "crucible run: %v\n", err)
		return ExitUsage
	}
	return execute(cfg, &f, stdin, env, func(st sandbox.Options) (*sandbox.Result, error) {
		return sandbox.Run(ctx, cfg, prog, st)
	})
}

// readSource reads the program, from stdin for "-" (which then leaves the
// program no stdin of its own).
func readSource(file string, stdin io.Reader) (src []byte, progStdin io.Reader, err error) {
	r := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		r = f
	}
	src, err = io.ReadAll(io.LimitReader(r, maxSource+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the program: %w", err)
	}
	if len(src) > maxSource {
		return nil, nil, fmt.Errorf("the program is larger than %d MiB", maxSource>>20)
	}
	if file == "-" {
		return src, nil, nil
	}
	return src, stdin, nil
}
