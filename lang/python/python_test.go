package python

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/toolchannel"
	"golang.org/x/sys/unix"
)

// writeFiles puts files, by their paths in the jail, under root.
func writeFiles(t *testing.T, root string, files map[string][]byte) {
	t.Helper()
	for path, data := range files {
		f := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runHere runs p with the host's python3 outside any jail, with stdin: its
// files go under a temporary directory instead of /crucible/python. With
// tools, that is its tools channel (fd 4, as the sandbox gives it).
func runHere(t *testing.T, p *lang.Program, stdin []byte, tools ...*os.File) (code int, stderr string, out *lang.Outcome) {
	t.Helper()
	root := t.TempDir()
	writeFiles(t, root, p.Files)
	args := append([]string(nil), p.Args...)
	for i, a := range args {
		if a == runner {
			args[i] = filepath.Join(root, runner)
		}
	}
	rr, rw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	var errb bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr, cmd.ExtraFiles = bytes.NewReader(stdin), &errb, append([]*os.File{rw}, tools...)
	if len(tools) > 0 {
		cmd.Env = append(os.Environ(), toolchannel.EnvVar+"=4")
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	var report bytes.Buffer
	_, _ = report.ReadFrom(rr)
	var ee *exec.ExitError
	if err := cmd.Wait(); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Args, "--warm") && !bytes.HasPrefix(report.Bytes(), []byte{lang.ReadyMark}) {
		t.Errorf("the warm runner did not say it waits: %q", report.String())
	}
	out, err = lang.ParseOutcome(report.Bytes())
	if err != nil {
		t.Fatalf("%v: %q", err, report.String())
	}
	if strings.Contains(errb.String(), root) || strings.Contains(errb.String(), dir) {
		t.Errorf("a runner's path reaches the output:\n%s", errb.String())
	}
	return code, errb.String(), out
}

// Tracebacks name the program as the user knows it: its file's name, or
// <stdin>; never the runner's copy of it, nor any path of the runner.
func TestTracebackNames(t *testing.T) {
	python := testenv.NeedTool(t, "python3")
	for _, tc := range []struct {
		src, file, name string
		want            []string
	}{
		{"def f():\n    raise ValueError('boom')\n\nf()\n", "/home/u/jobs/prog.py", "ValueError",
			[]string{`File "prog.py", line 4, in <module>`, `File "prog.py", line 2, in f`, "    raise ValueError('boom')"}},
		{"x = 1\ny = [\n", "-", "SyntaxError", []string{`File "<stdin>", line 2`}},
		// What the program prints of its own tracebacks says the same.
		{"import traceback\ntry:\n    1/0\nexcept ZeroDivisionError:\n    traceback.print_exc()\nraise KeyError(1)\n", "-", "KeyError",
			[]string{`File "<stdin>", line 3, in <module>`, `File "<stdin>", line 6, in <module>`}},
		// An exception that will not say what it is is reported all the
		// same, as Python prints it.
		{"class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\nraise E()\n", "x.py", "E",
			[]string{`File "x.py", line 5, in <module>`, "E: <"}}, // "<unprintable E object>" before 3.11
	} {
		code, stderr, out := runHere(t, Program([]byte(tc.src), tc.file, python), nil)
		// A warm runner, given the same program as its job, says the same.
		wcode, wstderr, wout := runHere(t, WarmProgram(python), input(t, []byte(tc.src), tc.file))
		if wcode != code || wstderr != stderr || !reflect.DeepEqual(wout, out) {
			t.Errorf("%q: cold: exit %d, %+v\n%s\nwarm: exit %d, %+v\n%s", tc.src, code, out.Error, stderr, wcode, wout.Error, wstderr)
		}
		if code != 1 || out.Error == nil || out.Error.Name != tc.name {
			t.Errorf("%q: exit %d, error %+v\n%s", tc.src, code, out.Error, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: no %q on stderr:\n%s", tc.src, w, stderr)
			}
		}
		if w := tc.want[len(tc.want)-1]; !strings.Contains(out.Error.Stack, w) {
			t.Errorf("%q: no %q in the stack:\n%s", tc.src, w, out.Error.Stack)
		}
		if strings.Contains(out.Error.Stack, "run.py") || strings.Contains(out.Error.Stack, "runpy") || strings.Contains(out.Error.Stack, "crucible_runner") {
			t.Errorf("%q: the runner shows in the stack:\n%s", tc.src, out.Error.Stack)
		}
	}
}

// input is what the registered language hands a warm runner for src.
func input(t *testing.T, src []byte, file string) []byte {
	t.Helper()
	l, ok := lang.Lookup(lang.Python)
	if !ok || l.Warm == nil {
		t.Fatal("python registers no warm worker")
	}
	b, err := l.Warm.Input(src, file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A warm runner runs its job as the cold one runs main.py: as __main__,
// named like its file, byte for byte (a coding comment's encoding too), its
// result crucible.result, its exit code its own.
func TestWarm(t *testing.T) {
	python := testenv.NeedTool(t, "python3")
	l, _ := lang.Lookup(lang.Python)
	if w, _ := l.Warm.Program(lang.Settings{Python: python}); w.Main != "" || w.Files[Main] != nil || !slices.Contains(w.Args, "--warm") {
		t.Errorf("the warm worker holds a program already: %+v", w)
	}
	latin1 := append([]byte("# -*- coding: latin-1 -*-\nimport crucible\ncrucible.result = '"), 0xe9, '\'', '\n')
	for _, tc := range []struct {
		src  []byte
		file string
		code int
		want string
	}{
		{[]byte("import crucible, sys\ncrucible.result = [__name__, sys.argv, __file__.endswith('" + Main + "')]\n"), "/home/u/job.py", 0,
			`["__main__", ["job.py"], true]`},
		{latin1, "-", 0, `"\u00e9"`},
		{[]byte("import crucible\ncrucible.result = 2\nraise SystemExit(3)\n"), "x.py", 3, "2"},
	} {
		code, stderr, out := runHere(t, Program(tc.src, tc.file, python), nil)
		if code != tc.code || string(out.Result) != tc.want || out.Error != nil {
			t.Errorf("cold %q: exit %d, %s %+v\n%s", tc.src, code, out.Result, out.Error, stderr)
		}
		code, stderr, out = runHere(t, WarmProgram(python), input(t, tc.src, tc.file))
		if code != tc.code || string(out.Result) != tc.want || out.Error != nil {
			t.Errorf("warm %q: exit %d, %s %+v\n%s", tc.src, code, out.Result, out.Error, stderr)
		}
	}
	// A job that is not one is reported, not run.
	for _, bad := range []string{"", "x.py", "\nprint(1)\n"} {
		code, _, out := runHere(t, WarmProgram(python), []byte(bad))
		if code != 1 || out.Error == nil || out.Error.Name != "CrucibleError" || !strings.HasPrefix(out.Error.Message, "reading the job: ") {
			t.Errorf("job %q: exit %d, %+v", bad, code, out.Error)
		}
	}
}

// The result is what the json module makes of crucible.result, byte for
// byte: the runner writes plain values itself, and hands everything else
// to that module (NaN and the infinities too, which are not JSON, to be
// refused).
func TestResultJSON(t *testing.T) {
	python := testenv.NeedTool(t, "python3")
	dir := t.TempDir()
	for path, data := range map[string][]byte{"lib/crucible_runner.py": bodySource, "lib/crucible.py": moduleSource} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Each value's encoding by the runner, or None where it is not plain,
	// against the json module's, or the error it raises.
	check := `import json, sys
sys.path.insert(0, sys.argv[1] + "/lib")
import crucible_runner as run
plain, other = [
    None, True, False, 0, -7, 2**100, 1.5, -0.0, 1e300, 1/3, 5e-324,
    "", "plain", "\"\\/\b\f\n\r\t\x00\x1f\x7f ~", [], (), {}, [1, [2, [3, []]], (4, 5)],
    {"a": 1, "b": [None, {"c": "d"}]}, [1, "x", {"y": (2, [3.25, None])}], {"n": list(range(3))},
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
    "\u00e9", "\u20ac\uffff\U0001F600\U0010FFFF", "\ud800 \udfff", "caf\u00e9 \u65e5\u672c \x80\x9f\xa0", {"\u00e9": "\u00e9"},
    "".join(map(chr, range(0x3000))), "x" * (1 << 16),
], [
    float("nan"), float("-inf"), {1: "int key"}, {"k": {2.5: 1}}, "x" * (1 << 16) + "y",
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], list(range(5000)),
    __import__("enum").IntEnum("E", "A").A, type("S", (str,), {})("sub"), {"s": {1, 2}}, b"bytes",
]
# Too long for str() from Python 3.11 (sys.set_int_max_str_digits), not before.
either = [10**5000]
for v in plain + other + either:
    try:
        want = json.dumps(v, allow_nan=False)
    except (TypeError, ValueError) as e:
        want = "refused: %s" % e
    got = run.encode(v)
    declined = got is None
    if declined and any(v is p for p in plain) or not declined and any(v is o for o in other) or not declined and got != want:
        print("%.80r: encoded %.200r, the json module: %.200r" % (v, got, want))
`
	out, err := exec.Command(python, "-I", "-B", "-c", check, dir).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("%v\n%s", err, out)
	}
	// Through the runner: plain results, one the json module writes, and
	// one it refuses.
	for v, want := range map[string]string{`{"a": (1, 2.5)}`: `{"a": [1, 2.5]}`, `"\u00e9"`: `"\u00e9"`, "{1: 2}": `{"1": 2}`, "float('nan')": ""} {
		code, stderr, out := runHere(t, WarmProgram(python), input(t, []byte("import crucible\ncrucible.result = "+v+"\n"), "-"))
		switch {
		case want != "" && (code != 0 || string(out.Result) != want || out.Error != nil):
			t.Errorf("%s: exit %d, result %s, %+v, want %s\n%s", v, code, out.Result, out.Error, want, stderr)
		case want == "" && (code != 1 || out.Error == nil || !strings.HasPrefix(out.Error.Message, "crucible.result cannot be encoded as JSON: ")):
			t.Errorf("%s: exit %d, result %s, %+v, want it refused\n%s", v, code, out.Result, out.Error, stderr)
		}
	}
}

// A warm runner that runs a program importing nothing but crucible, and
// reports a plain result, loads none of the modules that cost more than
// the interpreter's own start: json, linecache and traceback (re, enum),
// socket and threading. Those load with the first tool call, or a
// traceback, or when the program imports them.
func TestRunnerImportsLittle(t *testing.T) {
	python := testenv.NeedTool(t, "python3")
	heavy := `{"json", "re", "enum", "tokenize", "linecache", "traceback", "socket", "threading", "base64", "struct", "selectors", "site"}`
	// What the interpreter has loaded at its start here is not the
	// runner's doing: a script of its own says, run as the runner is (with
	// -c, Python 3.13 loads linecache to keep the command's text).
	loadedAtStart := func(names string) []byte {
		script := filepath.Join(t.TempDir(), "start.py")
		if err := os.WriteFile(script, []byte("import sys\nprint(sorted("+names+" & set(sys.modules)))\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := exec.Command(python, "-I", "-S", "-B", script).Output()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base := loadedAtStart(heavy)
	src := "import atexit, crucible, sys\ncrucible.result = {'a': [1, 2.5, 'x', None, True]}\n" +
		"atexit.register(lambda: sys.stderr.write('loaded: %s\\n' % sorted(" + heavy + " & set(sys.modules))))\n"
	for _, warm := range []bool{false, true} {
		p, stdin := Program([]byte(src), "x.py", python), []byte(nil)
		if warm {
			p, stdin = WarmProgram(python), input(t, []byte(src), "x.py")
		}
		code, stderr, out := runHere(t, p, stdin)
		if code != 0 || string(out.Result) != `{"a": [1, 2.5, "x", null, true]}` {
			t.Fatalf("warm %v: exit %d, %s %+v\n%s", warm, code, out.Result, out.Error, stderr)
		}
		if want := "loaded: " + string(base); stderr != want {
			t.Errorf("warm %v: the runner loaded more than the interpreter does:\n%s\nwant %s", warm, stderr, want)
		}
	}

	// A tool call loads json (and with it re and enum), and no more: the
	// channel is a file, its reader a bare thread.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "tools"), os.NewFile(uintptr(fds[1]), "tools-python")
	defer ours.Close()
	go func() { // the sandbox's side: each request answered with its id
		sc := bufio.NewScanner(ours)
		for sc.Scan() {
			var req struct{ ID int }
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				return
			}
			fmt.Fprintf(ours, "{\"id\":%d,\"result\":\"done\"}\n", req.ID)
		}
	}()
	some := `{"socket", "threading", "selectors", "traceback", "linecache", "base64"}`
	base = loadedAtStart(some)
	src = "import atexit, crucible, sys\ncrucible.result = crucible.tools.call('s', 't', {'a': 1})\n" +
		"atexit.register(lambda: sys.stderr.write('loaded: %s\\n' % sorted(" + some + " & set(sys.modules))))\n"
	code, stderr, out := runHere(t, Program([]byte(src), "x.py", python), nil, theirs)
	theirs.Close()
	if code != 0 || string(out.Result) != `"done"` {
		t.Fatalf("a tool call: exit %d, %s %+v\n%s", code, out.Result, out.Error, stderr)
	}
	if want := "loaded: " + string(base); stderr != want {
		t.Errorf("a tool call loaded more than json:\n%s\nwant %s", stderr, want)
	}
}

// The interpreter starts without site (-S), which runs once the program
// needs it: for a package in site-packages (and its .pth files), for a
// module that lists what is installed, for exit() and its kind. Here in a
// virtual environment of the test's own, whose site-packages it fills.
func TestSiteWhenNeeded(t *testing.T) {
	python := testenv.NeedTool(t, "python3")
	// The interpreter itself, not a shim that runs it (pyenv's).
	b, err := exec.Command(python, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2], sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	ver, exe, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	venv := t.TempDir()
	pkgs := filepath.Join(venv, "lib", "python"+ver, "site-packages")
	for path, data := range map[string]string{
		filepath.Join(venv, "pyvenv.cfg"):           "home = " + filepath.Dir(real) + "\ninclude-system-site-packages = false\n",
		filepath.Join(pkgs, "crucible_sitepkg.py"):  "VALUE = 7\n",
		filepath.Join(pkgs, "crucible_sitepkg.pth"): "import os; os.environ['CRUCIBLE_PTH'] = 'ran'\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(venv, "bin", "python3")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, bin); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		src, want string
		code      int
	}{
		// Nothing of site for a program that needs none of it.
		{"import sys, json\ncrucible.result = ['site' in sys.modules, callable(exit)]", `[false, true]`, 0},
		{"import crucible_sitepkg, os, sys\ncrucible.result = [crucible_sitepkg.VALUE, os.environ.get('CRUCIBLE_PTH'), 'site' in sys.modules]",
			`[7, "ran", true]`, 0},
		{"try:\n    import crucible_nowhere\nexcept ImportError as e:\n    crucible.result = e.name", `"crucible_nowhere"`, 0},
		{"import pkgutil, os\ncrucible.result = os.environ.get('CRUCIBLE_PTH')", `"ran"`, 0},
		{"import os\ncrucible.result = [repr(quit).startswith('Use quit()'), os.environ.get('CRUCIBLE_PTH')]", `[true, "ran"]`, 0},
		{"exit(3)", `null`, 3},
	} {
		src := "import crucible\n" + c.src + "\n"
		for _, warm := range []bool{false, true} {
			p, stdin := Program([]byte(src), "x.py", bin), []byte(nil)
			if warm {
				p, stdin = WarmProgram(bin), input(t, []byte(src), "x.py")
			}
			code, stderr, out := runHere(t, p, stdin)
			if code != c.code || string(out.Result) != c.want || out.Error != nil {
				t.Errorf("warm %v, %q: exit %d, %s %+v; want exit %d, %s\n%s", warm, c.src, code, out.Result, out.Error, c.code, c.want, stderr)
			}
		}
	}
}

// The runner's modules load from the bytecode that CompileProgram makes
// with the interpreter that runs them, checked against their source (a
// source changed since loads from itself), and Compiled takes nothing
// but that bytecode.
func TestCompiled(t *testing.T) {
	python := testenv.NeedTool(t, "python3")
	root := t.TempDir()
	p := CompileProgram(python)
	writeFiles(t, root, p.Files)
	args := slices.Clone(p.Args)
	for i, a := range args {
		if strings.HasPrefix(a, dir+"/") {
			args[i] = root + a
		}
	}
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	files, err := Compiled(bytes.ReplaceAll(out, []byte(root), nil))
	if err != nil {
		t.Fatal(err)
	}
	tag, _, _ := strings.Cut(string(out), "\n")
	want := []string{cached(module, tag), cached(body, tag)} // sorted
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	writeFiles(t, root, files)
	// The bytecode each module's code came from, as -v says it (a module
	// compiled from its source says so without quotes).
	from := func() string {
		t.Helper()
		imp := fmt.Sprintf("import sys; sys.path.insert(0, %q); import crucible_runner", root+dir+"/lib")
		var errb bytes.Buffer
		cmd := exec.Command(python, "-I", "-S", "-B", "-v", "-c", imp)
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v\n%s", err, errb.String())
		}
		var lines []string
		for _, l := range strings.Split(errb.String(), "\n") {
			if strings.HasPrefix(l, "# code object from '") && strings.Contains(l, root) {
				lines = append(lines, strings.ReplaceAll(l, root, ""))
			}
		}
		return strings.Join(lines, "\n")
	}
	if got, want := from(), fmt.Sprintf("# code object from '%s'\n# code object from '%s'", want[1], want[0]); got != want {
		t.Errorf("the runner's modules loaded from:\n%s\nwant\n%s", got, want)
	}
	if err := os.WriteFile(root+body, append(slices.Clone(bodySource), "# changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := from(), fmt.Sprintf("# code object from '%s'", want[0]); got != want {
		t.Errorf("with the runner's source changed, its modules loaded from:\n%s\nwant\n%s", got, want)
	}

	// Nothing but each module's bytecode, where the interpreter looks for it.
	line := func(src string) string { return src + " " + base64.StdEncoding.EncodeToString([]byte("pyc")) + "\n" }
	both := line(body) + line(module)
	if files, err := Compiled([]byte("\n")); err != nil || files != nil {
		t.Errorf("no cache tag: %v %v, want none and no error", files, err)
	}
	if files, err := Compiled([]byte("cpython-399\n" + both)); err != nil || len(files) != 2 || string(files[dir+"/lib/__pycache__/crucible.cpython-399.pyc"]) != "pyc" {
		t.Errorf("a good output: %v %v", files, err)
	}
	for name, bad := range map[string]string{
		"a tag with a slash":      "../x\n" + both,
		"a tag with a dot":        "cpython.311\n" + both,
		"a module of the program": "cpython-311\n" + both + line(Main),
		"a module twice":          "cpython-311\n" + both + line(body),
		"a module missing":        "cpython-311\n" + line(body),
		"not base64":              "cpython-311\n" + line(body) + module + " @@@\n",
		"empty bytecode":          "cpython-311\n" + line(body) + module + " \n",
		"a path outside":          "cpython-311\n" + both + "/etc/passwd eA==\n",
	} {
		if files, err := Compiled([]byte(bad)); err == nil {
			t.Errorf("%s: taken: %v", name, files)
		}
	}
}
