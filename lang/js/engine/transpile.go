package engine

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/cruciblehq/crucible/lang"
)

// A program without import or export runs as the body of an async function,
// so that both a top-level return and a top-level await work; its return
// value is the module's default export. The wrapper takes the line before the
// program's first.
const (
	scriptPrefix = "export default await (async () => {\n"
	scriptSuffix = "\n})();\n"
)

// program is what the engine runs: one ES module, and how to map its
// positions back to the source the user wrote.
type program struct {
	name  string // the module's name, as stack traces show it
	code  string
	smap  func() *sourceMap // made on first use: most programs never need it
	skip  int               // lines the wrapper put before the source
	lines int               // the source's own
}

// transpile strips TypeScript's types (esbuild; no type checking) and picks
// the program's form: a script, wrapped as above, else a module.
func transpile(src, name string, ts bool) (*program, *lang.Error) {
	p, serr := transform(scriptPrefix+src+scriptSuffix, name, ts)
	if serr == nil {
		p.skip, p.lines = 1, lineCount(src)
		return p, nil
	}
	p, merr := transform(src, name, ts)
	if merr == nil {
		return p, nil
	}
	// Neither form parses: report the module form's error. Both forms are
	// ES modules, so the grammars differ only where the wrapper does: the
	// script form also takes a top-level return, which esbuild accepts in a
	// module too until the parse is over (it reports a syntax error first),
	// and takes what the module form does not (an export) or cannot be
	// (a stray "}" that closes the wrapper), or runs into the wrapper's end
	// when the source ends too early. Each time the module form names the
	// real mistake, where it is.
	merr.clamp(src)
	return nil, merr.langError(name)
}

// parseError is esbuild's first error, at a 1-based line and column.
type parseError struct {
	msg       string
	line, col int
}

// lineCount counts src's lines as lineBreak splits them, without
// allocating (every program is counted).
func lineCount(src string) int {
	return 1 + strings.Count(src, "\n") + strings.Count(src, "\r") - strings.Count(src, "\r\n") +
		strings.Count(src, "\u2028") + strings.Count(src, "\u2029")
}

// lineBreak is JavaScript's line terminators, by which esbuild counts lines.
// Compiled on first use, not by every process of the binary at its start.
var lineBreak = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("\r\n|[\r\n\u2028\u2029]") })

// clamp moves a position past the source's last line that holds anything
// (the end of the file, after blank lines) to the end of that line, where
// the user looks for what is missing.
func (e *parseError) clamp(src string) {
	text := strings.TrimRight(src, " \t\r\n\u2028\u2029")
	breaks := lineBreak().FindAllStringIndex(text, -1)
	last, start := len(breaks)+1, 0
	if len(breaks) > 0 {
		start = breaks[len(breaks)-1][1]
	}
	end := len(text) - start + 1 // the column after the line's last byte
	if e.line > last || e.line == last && e.col > end {
		e.line, e.col = last, end
	}
}

func (e *parseError) langError(name string) *lang.Error {
	le := &lang.Error{Name: "SyntaxError", Message: e.msg}
	if e.line > 0 {
		le.Stack = "    at " + position(name, e.line, e.col)
	}
	return le
}

// transform runs esbuild on code, without a source map: writing one and
// reading it back was nearly a third of a transpile's time, on the path of
// every execution, and only a stack trace needs it. The first that does asks
// esbuild again for the same output with its map (see mapOf).
func transform(code, name string, ts bool) (*program, *parseError) {
	r := api.Transform(code, transformOptions(name, ts, api.SourceMapNone))
	if len(r.Errors) > 0 {
		m := r.Errors[0]
		e := &parseError{msg: m.Text}
		if m.Location != nil {
			e.line, e.col = m.Location.Line, m.Location.Column+1
		}
		return nil, e
	}
	out := string(r.Code)
	return &program{name: name, code: out, smap: sync.OnceValue(func() *sourceMap { return mapOf(code, out, name, ts) })}, nil
}

func transformOptions(name string, ts bool, sourcemap api.SourceMap) api.TransformOptions {
	loader := api.LoaderJS
	if ts {
		loader = api.LoaderTS
	}
	return api.TransformOptions{
		Loader: loader,
		Target: api.ES2023,
		// QuickJS spreads a string into an object as {}: esbuild's helper
		// copies its indices, as the language says.
		Supported:      map[string]bool{"object-rest-spread": false},
		Format:         api.FormatESModule,
		Sourcefile:     name,
		Sourcemap:      sourcemap,
		SourcesContent: api.SourcesContentExclude,
		Charset:        api.CharsetUTF8,
		LogLevel:       api.LogLevelSilent,
	}
}

// mapOf is the source map of out, which transform made of code. esbuild
// writes the same code with or without a map; should it ever not, the map
// would place positions wrongly, so there is none, and stack traces lose
// their frames rather than point at the wrong lines.
func mapOf(code, out, name string, ts bool) *sourceMap {
	r := api.Transform(code, transformOptions(name, ts, api.SourceMapExternal))
	if len(r.Errors) > 0 || string(r.Code) != out {
		return nil
	}
	m, err := parseSourceMap(r.Map)
	if err != nil {
		return nil
	}
	return m
}

// framePos finds the positions in a stack frame: "name:line:col".
var framePos = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([^\s()]+):(\d+):(\d+)`) })

// mapStack rewrites an engine stack trace in the user's terms: positions in
// the program map to the source's lines, and frames of Crucible's own code
// are left out.
func (p *program) mapStack(stack string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(stack, "\n"), "\n") {
		m := framePos().FindStringSubmatchIndex(l)
		if m == nil {
			if strings.TrimSpace(l) != "" && !strings.Contains(l, "<") {
				out = append(out, l) // "at <anonymous>" and such carry no position
			}
			continue
		}
		if l[m[2]:m[3]] != p.name {
			continue // the prelude's, or native
		}
		line, _ := strconv.Atoi(l[m[4]:m[5]])
		col, _ := strconv.Atoi(l[m[6]:m[7]])
		ol, oc, ok := p.smap().lookup(line, col)
		if !ok || ol <= p.skip || p.lines > 0 && ol > p.skip+p.lines {
			continue // the wrapper's own code, before or after the source
		}
		out = append(out, l[:m[0]]+position(p.name, ol-p.skip, oc)+l[m[1]:])
	}
	return strings.Join(out, "\n")
}
