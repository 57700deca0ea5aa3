package sandbox

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// denoPool is a pool of Deno workers with cfg, the default one if nil, on
// the engine deno, closed at the test's end. Its deno is the repository's
// (npm install).
func denoPool(t *testing.T, cfg *config.Config, o PoolOptions) *Pool {
	t.Helper()
	return testPool(t, cfg, "ts", o, func(c *config.Config) string {
		c.Runtimes.Engine = config.EngineDeno
		needDeno(t, c)
		return ""
	})
}

// Deno programs, one after another on a pool of 2: each takes a jail that
// waited ready, and runs in a jail of its own (nothing another left in
// /tmp or in the runtime); a script's top-level return and a module's
// default export are the result; an uncaught error names the program's
// own line; a program that does not parse is a SyntaxError, and never runs.
func TestPoolDeno(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox.Timeout = config.Duration(30 * time.Second)
	p := denoPool(t, cfg, PoolOptions{Size: 2})
	for i := range 4 {
		awaitReady(t, p, 1)
		src := fmt.Sprintf(`let fresh = true;
try { Deno.statSync("/tmp/mark"); fresh = false; } catch { /* none: a fresh jail */ }
Deno.writeTextFileSync("/tmp/mark", "");
const n: number = %d;
console.log("n", n);
return { n: n * 2, fresh, mark: (globalThis as any).mark ?? null };
`, i)
		x, err := p.Do(context.Background(), Job{Language: []string{"ts", "deno"}[i%2], Source: []byte(src), File: "-"})
		if err != nil || x.Error != nil || x.ExitCode != 0 || x.Stdout != fmt.Sprintf("n %d\n", i) ||
			string(x.Result) != fmt.Sprintf(`{"n":%d,"fresh":true,"mark":null}`, 2*i) {
			t.Fatalf("execution %d: %v %+v %+v", i, err, x, x.Error)
		}
	}
	if st := p.Stats(); st.Warm != 4 || st.Failed != 0 {
		t.Errorf("stats %+v: want 4 warm takes", st)
	}

	for _, c := range []struct{ name, src, file, result, errName, stack string }{
		{"a module", "export default await Promise.resolve(40 + 2);\n", "m.ts", "42", "", ""},
		{"JavaScript", "return typeof 1;\n", "x.js", `"number"`, "", ""},
		// The language decides, not the file's name: TypeScript's syntax
		// is JavaScript's error.
		{"ts as js", "const n: number = 1;\nreturn n;\n", "x.ts", "", "SyntaxError", "main.js:1:7"},
		{"an uncaught error", "function f(): never {\n  throw new RangeError(\"bad\");\n}\nf();\n", "job.ts", "", "RangeError", "job.ts:2:9"},
		{"no parse", "const x = (;\n", "-", "", "SyntaxError", "main.ts:1:12"},
		// The script form began to run: its error is the program's, and
		// the module form is never tried (it would run it twice).
		{"a syntax error at run time", "console.log(\"once\");\nnew Function(\"(\");\n", "-", "", "SyntaxError", ""},
	} {
		language := "deno"
		if c.name == "ts as js" {
			language = "js"
		}
		x, err := p.Do(context.Background(), Job{Language: language, Source: []byte(c.src), File: c.file})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.errName == "" {
			if x.Error != nil || string(x.Result) != c.result {
				t.Errorf("%s: %s, %+v", c.name, x.Result, x.Error)
			}
			continue
		}
		if x.Error == nil || x.Error.Name != c.errName || !strings.Contains(x.Error.Stack, c.stack) || x.ExitCode != 1 {
			t.Errorf("%s: %+v %+v", c.name, x, x.Error)
		}
		if strings.Count(x.Stdout, "once") > 1 {
			t.Errorf("%s: the program ran twice: %q", c.name, x.Stdout)
		}
	}
}

// A pooled Deno program works in the workspace bound late, after its
// worker waited: its files, its working directory; and Deno's own walls
// hold beside the jail's (no read outside the program's places, no FFI).
func TestPoolDenoWorkspace(t *testing.T) {
	p := denoPool(t, nil, PoolOptions{Size: 1, Workspaces: true})
	awaitReady(t, p, 1)
	dir := testenv.PublicDir(t)
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	src := `const out: string[] = [Deno.readTextFileSync("in.txt")];
Deno.writeTextFileSync("/workspace/out.txt", "from the jail");
for (const f of [() => Deno.readTextFileSync("/etc/passwd"), () => Deno.dlopen("/usr/lib/x86_64-linux-gnu/libc.so.6", {})]) {
  try { f(); out.push("allowed"); } catch (e) { out.push((e as Error).name); }
}
return out;
`
	x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "-", Workspace: dir})
	if err != nil || x.Error != nil || string(x.Result) != `["from the host","NotCapable","NotCapable"]` {
		t.Fatalf("%v %+v %+v", err, x, x.Error)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "from the jail" {
		t.Errorf("the workspace's file: %q, %v", b, err)
	}
}

// A pool of Deno refuses to start without a deno binary, naming the
// setting to fix.
func TestPoolDenoMissing(t *testing.T) {
	cfg := config.Default()
	cfg.Runtimes.Deno = filepath.Join(t.TempDir(), "deno")
	cfg.Runtimes.Engine = config.EngineDeno
	_, err := NewPool(cfg, "ts", PoolOptions{Size: 1})
	if err == nil || !strings.Contains(err.Error(), "runtimes.deno") || strings.Contains(err.Error(), cfg.Runtimes.Deno) {
		t.Errorf("a pool without deno: %v", err)
	}
}

// microtasksFirst queues a timer, then a microtask, and takes 20 ms
// before it awaits the timer: the timer is due by then.
const microtasksFirst = `const order: string[] = [];
const timer = new Promise((r) => setTimeout(() => r(order.push("timer")), 0));
queueMicrotask(() => order.push("microtask"));
const t = performance.now();
while (performance.now() - t < 20) { /* the timer falls due */ }
order.push("sync");
await timer;
`

// A Deno program ends as on the embedded engine, its report the last of
// it: its timers run first (what they print is there, and changing the
// returned value after the return changes nothing); its own unload
// listeners run, even one added by a timer; Deno.exitCode and Deno.exit
// give the exit code; an error that a timer throws, or a rejection no one
// handled, is the program's error. Microtasks come before a timer due.
func TestPoolDenoEnd(t *testing.T) {
	p := denoPool(t, nil, PoolOptions{Size: 1})
	for _, c := range []struct {
		name, src, result, stdout, errMessage string
		exit                                  int
	}{
		{"timers first", `const o = { n: 1 };
setTimeout(() => { o.n = 2; console.log("timer"); }, 50);
return o;
`, `{"n":1}`, "timer\n", "", 0},
		{"unload listeners", `addEventListener("unload", () => console.log("unload 1"));
setTimeout(() => addEventListener("unload", () => console.log("unload 2")), 20);
return 1;
`, "1", "unload 1\nunload 2\n", "", 0},
		{"Deno.exitCode", "Deno.exitCode = 3;\nreturn 1;\n", "1", "", "", 3},
		{"Deno.exit after the return", "setTimeout(() => Deno.exit(4), 20);\nreturn 1;\n", "1", "", "", 4},
		{"a timer's error", `setTimeout(() => { throw new RangeError("late"); }, 20);
return 1;
`, "", "", "late", 1},
		// Deno's import() of a module that awaits at its top level ran a
		// due timer before the microtasks that the module's first part
		// queued; the runner's fence puts them back in order, in either
		// form.
		{"microtasks before a timer", microtasksFirst + "return order;\n", `["sync","microtask","timer"]`, "", "", 0},
		{"microtasks before a timer, a module", microtasksFirst + "export default order;\n", `["sync","microtask","timer"]`, "", "", 0},
		{"a hashbang", "#!/usr/bin/env -S deno run\nexport default 1;\n", "1", "", "", 0},
		{"a function for a result", "return () => 1;\n", "null", "", "", 0},
		{"an unhandled rejection", "Promise.reject(new Error(\"nobody\"));\nreturn 1;\n", "", "", "nobody", 1},
	} {
		awaitReady(t, p, 1)
		x, err := p.Do(context.Background(), Job{Source: []byte(c.src), File: "main.ts"})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(x.Result) != c.result || x.Stdout != c.stdout || x.ExitCode != c.exit {
			t.Errorf("%s: result %s, stdout %q, exit %d: want %s, %q, %d (%+v)", c.name, x.Result, x.Stdout, x.ExitCode, c.result, c.stdout, c.exit, x.Error)
		}
		if (x.Error == nil) != (c.errMessage == "") || x.Error != nil && x.Error.Message != c.errMessage {
			t.Errorf("%s: error %+v, want %q", c.name, x.Error, c.errMessage)
		}
	}
}

// denoProcs are the deno processes of this process's jails that match
// (given their arguments, two or more), depth generations below this
// process: a jail's Deno worker is 2 (a child of the jail's init), a
// process it starts 3. (Other packages' tests run jails of their own.)
func denoProcs(depth int, match func(args []string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var found []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(b), "\x00")
		if err != nil || len(args) < 2 || path.Base(args[0]) != "deno" || !match(args) {
			continue
		}
		up := e.Name()
		for range depth {
			up = parent(up)
		}
		if up == strconv.Itoa(os.Getpid()) {
			pid, _ := strconv.Atoi(e.Name())
			found = append(found, pid)
		}
	}
	return found
}

// A Deno worker that dies while it waits (killed here) is dropped: the
// next program runs in a jail of its own, as if none had been ready. One
// that died just before the pool took its jail (its jail's init held
// stopped, so that it cannot say so yet) never took the job: the job runs
// in another jail, and the trail records the first's end.
func TestPoolDenoWorkerDies(t *testing.T) {
	var trail testenv.Buffer
	p := denoPool(t, nil, PoolOptions{Size: 1, Audit: audit.New(&trail)})
	awaitReady(t, p, 1)
	workers := denoProcs(2, func(args []string) bool { return slices.Contains(args, "--warm") })
	if len(workers) != 1 {
		t.Fatalf("%d Deno workers wait, want 1", len(workers))
	}
	if err := syscall.Kill(workers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Minute); p.Stats().Ready > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("a dead worker still counted ready after a minute: %+v", p.Stats())
		}
	}
	x, err := p.Do(context.Background(), Job{Source: []byte("return 1;\n"), File: "main.ts"})
	if err != nil || x.Error != nil || string(x.Result) != "1" || x.Jail != "cold" {
		t.Errorf("after a worker died: %v %+v", err, x)
	}

	awaitReady(t, p, 1)
	workers = denoProcs(2, func(args []string) bool { return slices.Contains(args, "--warm") })
	if len(workers) != 1 {
		t.Fatalf("%d Deno workers wait, want 1", len(workers))
	}
	init, _ := strconv.Atoi(parent(strconv.Itoa(workers[0])))
	if err := syscall.Kill(init, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(init, syscall.SIGCONT) }()
	if err := syscall.Kill(workers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	type done struct {
		x   *Result
		err error
	}
	ran := make(chan done, 1)
	go func() {
		x, err := p.Do(context.Background(), Job{Source: []byte("console.log(\"once\");\nreturn 2;\n"), File: "main.ts"})
		ran <- done{x, err}
	}()
	for end := time.Now().Add(time.Minute); p.Stats().InFlight == 0 || p.Stats().Ready > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the job did not take the jail in a minute: %+v", p.Stats())
		}
	}
	if err := syscall.Kill(init, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	r := <-ran
	if r.err != nil || r.x.Error != nil || string(r.x.Result) != "2" || r.x.Stdout != "once\n" {
		t.Errorf("a job whose worker had died: %v %+v", r.err, r.x)
	}
	if !strings.Contains(trail.String(), "ended before it took the program") {
		t.Errorf("the trail has no execution that ended untaken:\n%s", trail.String())
	}
}
