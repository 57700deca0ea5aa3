package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// Attacks on the warm pools that every execution goes through, its
// workspace bound in when it arrives: sessions that switch languages, a
// Close that races the calls, one pool for TypeScript and JavaScript, a
// busy pool.

// ownServer is newServer for a test that closes the server itself (and
// checks what Close leaves): its cleanup closes it only if the test did not.
func ownServer(t *testing.T, edit func(*config.Config), o Options) *Server {
	t.Helper()
	testenv.NeedRoot(t, "builds real jails")
	cfg, tools := testConfig(t, edit)
	t.Cleanup(tools.Close)
	o.Config, o.Tools, o.Version, o.ProgressEvery = cfg, tools, "test", time.Second
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if !closed {
			_ = s.Close()
		}
	})
	return s
}

// tightServer is an ownServer that runs max executions at once: one jail
// a pool, no rate limit, and a minute's wait for a place.
func tightServer(t *testing.T, max int) *Server {
	t.Helper()
	return ownServer(t, func(c *config.Config) {
		c.Serve.MaxConcurrent = max
		c.Serve.Pool = 1
		c.Serve.Rate = 0
		c.Serve.BusyWait = config.Duration(time.Minute)
	}, Options{})
}

// closeWithin closes s, failing the test if Close does not return within
// a minute.
func closeWithin(t *testing.T, s *Server) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close has not returned after a minute")
	}
}

// leftovers are what the server's jails may leave on the host: processes
// (this test process's children: the server runs no tool servers here),
// cgroups named for this process, and mounts under root.
func leftovers(root string) []string {
	var left []string
	me := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == me {
			left = append(left, "process "+e.Name())
		}
	}
	for depth := 0; depth <= 5; depth++ {
		m, _ := filepath.Glob("/sys/fs/cgroup" + strings.Repeat("/*", depth) + "/crucible-" + me + "-*")
		for _, c := range m {
			left = append(left, "cgroup "+c)
		}
	}
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fs := strings.Fields(sc.Text()); len(fs) > 4 && strings.HasPrefix(fs[4], root) {
				left = append(left, "mount "+fs[4])
			}
		}
		f.Close()
	}
	if _, err := os.Stat(root); err == nil {
		left = append(left, "directory "+root)
	}
	return left
}

// noLeftovers fails t with whatever the server left beyond the before
// things (processes and cgroups) found before it was made.
func noLeftovers(t *testing.T, s *Server, before int) {
	t.Helper()
	left := leftovers(s.spaces.Path())
	if len(left) > before {
		t.Errorf("left behind once Close returned: %q", left)
	}
}

// callAs calls execute on cs in language, bounded by a minute, and returns
// its result (nil on an error of the call itself).
func callAs(cs *mcp.ClientSession, language, code string) *mcp.CallToolResult {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"language": language, "code": code}})
	if err != nil {
		return nil
	}
	return res
}

// Sessions that switch between TypeScript and Python on every call, more
// of them than serve.max_concurrent, each call taking a jail of the pool of
// its language with the session's workspace, then Close: it returns, and
// nothing of any jail is left: no process, no cgroup, no workspace mount
// or directory. Every call was answered with the workspace's content so
// far, whichever pool ran it.
func TestAttackLanguageFlipsThenClose(t *testing.T) {
	if testing.Short() {
		t.Skip("builds many jails")
	}
	before := len(leftovers(filepath.Join(os.TempDir(), "no-such-root")))
	s := tightServer(t, 2)
	const sessions, rounds = 4, 5
	var wg sync.WaitGroup
	errs := make(chan string, sessions*rounds)
	for i := range sessions {
		cs := connect(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				var res *mcp.CallToolResult
				// Each round appends its number to the session's file and
				// returns the file: the workspace carries over languages.
				if (r+i)%2 == 0 {
					res = callAs(cs, "ts", fmt.Sprintf(`let s = ""; try { s = await fs.readTextFile("n") } catch {}
s += "%d"; await fs.writeTextFile("n", s); return s`, r))
				} else {
					res = callAs(cs, "py", fmt.Sprintf(`import crucible
try:
    s = open("n").read()
except FileNotFoundError:
    s = ""
s += "%d"
open("n", "w").write(s)
crucible.result = s
`, r))
				}
				want := ""
				for k := range r + 1 {
					want += strconv.Itoa(k)
				}
				if res == nil || res.IsError {
					errs <- fmt.Sprintf("session %d round %d: %v", i, r, res)
					continue
				}
				b, _ := json.Marshal(res.StructuredContent)
				var out executeOut
				if json.Unmarshal(b, &out) != nil || string(out.Result) != strconv.Quote(want) {
					errs <- fmt.Sprintf("session %d round %d: result %s, want %q", i, r, out.Result, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	closeWithin(t, s)
	noLeftovers(t, s, before)
}

// Close while sessions' executions run in the pools, in one language or
// switching, as their jails end and their replacements are built: Close
// returns, every call ends, nothing panics (under -race, nothing races),
// and once Close has returned nothing of any jail is left. Closed at
// several moments: before the executions end, as they end, and after.
func TestAttackCloseRacesCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds many jails")
	}
	for _, after := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second} {
		t.Run(after.String(), func(t *testing.T) {
			before := len(leftovers(filepath.Join(os.TempDir(), "no-such-root")))
			s := tightServer(t, 3)
			var wg sync.WaitGroup
			for i := range 4 {
				cs := connect(t, s)
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Each call sleeps ~1 s; bounded by count (a call after
					// Close is refused at once, as an error result).
					for r := range 6 {
						language := []string{"ts", "py", "js"}[(i+r)%3]
						code := `await new Promise(r => setTimeout(r, 1000)); return 1`
						if language == "py" {
							code = "import time\ntime.sleep(1)\n"
						}
						if callAs(cs, language, code) == nil {
							return
						}
					}
				}()
			}
			time.Sleep(after)
			closeWithin(t, s)
			noLeftovers(t, s, before)
			ended := make(chan struct{})
			go func() {
				wg.Wait()
				close(ended)
			}()
			select {
			case <-ended:
			case <-time.After(time.Minute):
				t.Fatal("calls still running a minute after Close")
			}
			// What a call still in flight at Close did after it, had it
			// built a jail or left a workspace, shows now.
			time.Sleep(2 * time.Second)
			noLeftovers(t, s, before)
		})
	}
}

// A session's JavaScript programs run in the TypeScript pool's jails: one
// sees the session's workspace (shared by design) and nothing else the
// TypeScript program before it left (its /tmp, its globals), runs as
// JavaScript, and is audited as JavaScript; then TypeScript again, in a
// jail of its own. Language names near ts or js never reach the pool:
// refused, or (deno) run elsewhere.
func TestAttackPoolTwoLanguages(t *testing.T) {
	var buf testenv.Buffer
	w := audit.New(&buf)
	s := ownServer(t, nil, Options{Audit: w})
	cs := connect(t, s)
	p := s.gens.current().views[""].poolFor("ts")
	if p == nil || s.gens.current().views[""].poolFor("js") != p {
		t.Fatal("no one pool for ts and js")
	}
	const mark = `await fs.writeTextFile("/tmp/mark", "L"); await fs.writeTextFile("shared", "S");
globalThis.mark = "L"; Object.prototype.polluted = "L"; return 1`
	const look = `const seen = [];
try { await fs.readTextFile("/tmp/mark"); seen.push("tmp") } catch {}
if (typeof globalThis.mark !== "undefined") seen.push("global");
if (({}).polluted !== undefined) seen.push("prototype");
const f = 1, T = 2, x = 3;
let generic;
try { generic = String(f<T>(x)) } catch (e) { generic = e.name }
return {seen, generic, shared: await fs.readTextFile("shared")};
`
	if _, out := execute(t, cs, map[string]any{"language": "ts", "code": mark}); out == nil || out.ExitCode != 0 {
		t.Fatalf("the TypeScript program: %+v", out)
	}
	for i, c := range []struct{ language, generic string }{{"js", "false"}, {"ts", "TypeError"}, {"js", "false"}} {
		_, out := execute(t, cs, map[string]any{"language": c.language, "code": look})
		var got struct {
			Seen    []string
			Generic string
			Shared  string
		}
		if out == nil || json.Unmarshal(out.Result, &got) != nil {
			t.Fatalf("step %d (%s): %+v", i, c.language, out)
		}
		if len(got.Seen) != 0 || got.Shared != "S" || got.Generic != c.generic {
			t.Errorf("step %d (%s): saw %q, workspace %q, f<T>(x) %q; want nothing, S and %q", i, c.language, got.Seen, got.Shared, got.Generic, c.generic)
		}
		if _, out := execute(t, cs, map[string]any{"language": c.language, "code": mark}); out == nil || out.ExitCode != 0 {
			t.Fatalf("step %d: marks again: %+v", i, out)
		}
	}
	served := p.Stats()
	if served.Warm+served.Cold != 7 {
		t.Errorf("the pool ran %d programs, want all 7: %+v", served.Warm+served.Cold, served)
	}
	for _, l := range []string{"TS", "ts ", "../js", "JS", "javascript"} {
		if res, _ := execute(t, cs, map[string]any{"language": l, "code": "return 1"}); !res.IsError {
			t.Errorf("language %q was run: %q", l, text(res))
		}
	}
	// deno is a language of execute's, but not of the jail's worker.
	_, _ = execute(t, cs, map[string]any{"language": "deno", "code": "console.log(1)"})
	if st := p.Stats(); st.Warm+st.Cold != served.Warm+served.Cold {
		t.Errorf("names near ts and js (or deno) used the TypeScript pool: %+v, before %+v", st, served)
	}
	closeWithin(t, s)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var langs []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var e struct{ Event, Language string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "execution" {
			langs = append(langs, e.Language)
		}
	}
	want := "ts js js ts ts js js"
	if got := strings.Join(langs, " "); !strings.HasPrefix(got, want) {
		t.Errorf("audited languages %q; want %q first (then deno's, if deno is installed)", got, want)
	}
}

// Attack: while a session's program runs in a jail of the pool, other
// sessions' calls, and the same session's in another language, take the
// pools' other jails and more: the program runs to its end, whatever the
// pool builds or destroys meanwhile.
func TestAttackBusyPoolSparesRunningProgram(t *testing.T) {
	s := tightServer(t, 2)
	a := connect(t, s)
	if _, out := execute(t, a, map[string]any{"code": "return 1"}); out == nil {
		t.Fatal("the first call made no workspace")
	}
	p := s.gens.current().views[""].poolFor("ts")
	deadline := time.Now().Add(30 * time.Second)
	long := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{
			"code": "await new Promise((r) => setTimeout(r, 3000)); return 'done'"}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		long <- res
	}()
	for p.Stats().InFlight == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the long program did not start in the pool")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if res, _ := execute(t, a, map[string]any{"language": "py", "code": "print(1)"}); res.IsError {
		t.Errorf("python in the busy session: %q", text(res))
	}
	if res, _ := execute(t, connect(t, s), map[string]any{"code": "return 2"}); res.IsError {
		t.Errorf("another session: %q", text(res))
	}
	res := <-long
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(b), `"result":"done"`) {
		t.Errorf("the busy session's program: %q %s; want it run to its end", text(res), b)
	}
}
