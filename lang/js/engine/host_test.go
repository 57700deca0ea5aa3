package engine

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The program finds no host object, however it looks: no Go function of the
// prelude, no Node or Deno or QuickJS std/os object, nothing from reaching
// the global object through constructors or stack-trace hooks.
func TestAttackNoHostObjects(t *testing.T) {
	result(t, `
const g = this?.constructor?.constructor?.("return globalThis")() ?? globalThis;
const names = [];
for (let o = g; o; o = Object.getPrototypeOf(o)) names.push(...Object.getOwnPropertyNames(o), ...Object.getOwnPropertySymbols(o).map(String));
const found = names.filter(n => /crucible|^__(?!(proto|defineGetter|defineSetter|lookupGetter|lookupSetter)__$)|^(process|require|Deno|Bun|std|os|module|exports|print|scriptArgs|load|gc)$/.test(n));
let viaFunction = null;
try { viaFunction = typeof Function("return process")(); } catch (e) { viaFunction = e.name; }
Error.prepareStackTrace = (_, frames) => frames.map(f => f.getThis?.());
let frames = typeof new Error().stack;
let imported;
try { await import("os"); imported = "loaded"; } catch (e) { imported = e.name; }
const consoleKeys = Object.keys(console).filter(k => typeof console[k] !== "function");
return { found, viaFunction, frames, imported, consoleKeys, fsFrozen: Object.isFrozen(fs) };
`, false, `{"found":[],"viaFunction":"ReferenceError","frames":"string","imported":"TypeError","consoleKeys":[],"fsFrozen":true}`)
}

// The orders a program can count on, however slow the machine: the
// synchronous code, then microtasks, then timers; timers of equal delay in
// the order they were set; a cleared timer never; an interval until it is
// cleared. Which of a 0 ms timeout and a 1 ms interval set a moment earlier
// fires first depends on how long that moment was (as in Node and browsers:
// a delay counts from when the timer is set), so the test does not ask, and
// it waits for events, never for a time.
func TestTimersOrder(t *testing.T) {
	result(t, `
const order = [];
const t10 = new Promise(r => setTimeout(() => { order.push("t10"); r(); }, 10));
const thrice = new Promise(r => {
  const i = setInterval(() => {
    order.push("i");
    if (order.filter(x => x === "i").length === 3) { clearInterval(i); setTimeout(r, 2); }
  }, 1);
});
setTimeout(() => order.push("t0"), 0);
const c = setTimeout(() => order.push("cleared"), 0);
const t0b = new Promise(r => setTimeout(() => { order.push("t0b"); r(); }, 0));
clearTimeout(c);
queueMicrotask(() => order.push("micro"));
Promise.resolve().then(() => order.push("then"));
order.push("sync");
await Promise.all([t10, thrice, t0b]);
return [order.slice(0, 3), order.filter(x => x.startsWith("t0")), order.filter(x => x === "i").length, order.includes("cleared")];
`, false, `[["sync","micro","then"],["t0","t0b"],3,false]`)
}

// A timer that sets another with no delay lets the tasks waiting now go
// first: a program that re-arms one forever still sees its fetch finish.
// (Were the new timer fired in the same turn, the chain would run to its
// bound with the fetch's answer never taken.)
func TestTimersYieldToTasks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "answer")
	}))
	defer srv.Close()
	out, _ := run(t, fmt.Sprintf(`
let got = null, turns = 0;
fetch(%q).then(r => r.text()).then(b => { got = b; });
await new Promise(done => {
  const again = () => { turns++; if (got !== null || turns === 1000000) done(); else setTimeout(again, 0); };
  setTimeout(again, 0);
});
return [got, turns < 1000000];
`, srv.URL), false, Options{HTTP: srv.Client()})
	if out.Error != nil || string(out.Result) != `["answer",true]` {
		t.Errorf("%s %+v", out.Result, out.Error)
	}
}

func TestConsole(t *testing.T) {
	out, stdout := run(t, `console.log("a", 1, "b");
console.error("to stderr");
console.info({ x: [1, "s"] });
return null;`, false, Options{})
	if out.Error != nil {
		t.Fatal(out.Error)
	}
	for _, want := range []string{"a 1 b\n", "to stderr\n", "x:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if string(out.Result) != "null" {
		t.Errorf("result %s", out.Result)
	}
}

func TestEnvAndCrypto(t *testing.T) {
	out, _ := run(t, `
"use strict";
let wrote;
try { env.HOME = "x"; wrote = "yes"; } catch (e) { wrote = e.name; }
const u = crypto.randomUUID();
const a = crypto.getRandomValues(new Uint8Array(64));
let big;
try { crypto.getRandomValues(new Uint8Array(70000)); } catch (e) { big = e.name; }
return [env.HOME, env.NONE ?? null, wrote, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(u), a.some(x => x !== 0), big];
`, false, Options{Env: map[string]string{"HOME": "/workspace"}})
	if out.Error != nil || string(out.Result) != `["/workspace",null,"TypeError",true,true,"QuotaExceededError"]` {
		t.Errorf("%s %+v", out.Result, out.Error)
	}
}

// fs reaches the directories it was given and nothing else: not by "..",
// not by a symbolic link the program makes, not by an absolute path.
func TestAttackFSEscape(t *testing.T) {
	ws, tmp, outside := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	o := Options{Dirs: map[string]string{"/workspace": ws, "/tmp": tmp}}
	out, _ := run(t, (`
const tryIt = (f) => { try { return f(); } catch (e) { return e.name + ": " + e.message; } };
fs.writeTextFile("a.txt", "hello ");
fs.writeTextFile("/workspace/a.txt", "world", { append: true });
fs.mkdir("/tmp/d/e", { recursive: true });
fs.writeFile("/tmp/d/e/b.bin", new Uint8Array([0, 255, 128]));
return {
  text: fs.readTextFile("a.txt"),
  bytes: Array.from(fs.readFile("/tmp/d/e/b.bin")),
  dir: fs.readDir("/tmp/d/e").map(e => e.name + ":" + e.size),
  exists: [fs.exists("a.txt"), fs.exists("nope")],
  dotdot: tryIt(() => fs.readTextFile("../../../../etc/passwd")),
  link: tryIt(() => fs.readTextFile("link")),
  etc: tryIt(() => fs.readTextFile("/etc/passwd")),
};`), false, o)
	if out.Error != nil {
		t.Fatal(out.Error)
	}
	res := string(out.Result)
	for _, want := range []string{`"text":"hello world"`, `"bytes":[0,255,128]`, `"dir":["b.bin:3"]`, `"exists":[true,false]`} {
		if !strings.Contains(res, want) {
			t.Errorf("result lacks %s:\n%s", want, res)
		}
	}
	if strings.Contains(res, "host secret") || strings.Contains(res, "root:") || strings.Contains(res, outside) || strings.Contains(res, ws) {
		t.Errorf("escaped, or a host path shows:\n%s", res)
	}
	if strings.Count(res, `"TypeError: `) != 3 {
		t.Errorf("want three refusals:\n%s", res)
	}
}

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/echo?from=redirect", http.StatusFound)
			return
		case "/bytes":
			_, _ = w.Write([]byte{0, 1, 254, 255})
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		fmt.Fprintf(w, `{"path":%q,"query":%q,"body":%q,"ct":%q,"h":%q}`, r.URL.Path, r.URL.RawQuery, body, r.Header.Get("Content-Type"), r.Header.Get("X-Test"))
	}))
	defer srv.Close()
	o := Options{HTTP: srv.Client()}
	out, _ := run(t, fmt.Sprintf(`
const base = %q;
const r1 = await fetch(base + "/echo?q=1", { method: "POST", body: JSON.stringify({ a: 1 }), headers: { "content-type": "application/json", "X-Test": "yes" } });
const j = await r1.json();
const r2 = await fetch(new URL("/redirect", base));
const r3 = await fetch(base + "/bytes");
const b = await r3.bytes();
let used; try { await r3.text(); } catch (e) { used = e.name; }
let bad; try { await fetch("ftp://x/"); } catch (e) { bad = e.name; }
let refused; try { await fetch("http://127.0.0.1:1/"); } catch (e) { refused = e.name; }
const ac = new AbortController(); ac.abort();
let aborted; try { await fetch(base, { signal: ac.signal }); } catch (e) { aborted = e.name; }
return { status: r1.status, ok: r1.ok, method: r1.headers.get("x-method"), j, redirected: [r2.redirected, (await r2.json()).query],
  bytes: Array.from(b), used, bad, refused, aborted, post: (await (await fetch(base, { method: "PUT", body: new Uint8Array([104, 105]) })).json()).body };
`, srv.URL), false, o)
	if out.Error != nil {
		t.Fatal(out.Error)
	}
	want := `{"status":200,"ok":true,"method":"POST","j":{"path":"/echo","query":"q=1","body":"{\"a\":1}","ct":"application/json","h":"yes"},"redirected":[true,"from=redirect"],"bytes":[0,1,254,255],"used":"TypeError","bad":"TypeError","refused":"TypeError","aborted":"AbortError","post":"hi"}`
	if !sameJSON(out.Result, []byte(want)) {
		t.Errorf("got  %s\nwant %s", out.Result, want)
	}

	out, _ = run(t, `await fetch("http://example.com/")`, false, Options{})
	if out.Error == nil || out.Error.Name != "TypeError" || !strings.Contains(out.Error.Message, "not available") {
		t.Errorf("no client: %+v", out.Error)
	}
}
