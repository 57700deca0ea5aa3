package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/randomid"
	"github.com/cruciblehq/crucible/internal/testenv"
	"github.com/cruciblehq/crucible/violation"
)

// A TypeScript program on a warm jail of each engine goes for the host: a
// file of the host's, by its path and by a path that climbs out of the
// workspace, a variable of the host's environment, init's environment;
// on Deno also through Deno's own APIs, a subprocess, a namespace of its
// own and FFI. It gets none of the host's values: each is refused or
// absent, the subprocess runs inside the jail, and the refused unshare is
// a recorded violation.
func TestAttackEnginesHost(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails with cgroup limits")
	canary := randomid.New("canary-", 8)
	t.Setenv("CRUCIBLE_TEST_CANARY", canary)
	host := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(host, []byte(canary), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `const host = ` + literal(host) + `;
const out: Record<string, string> = {};
const attempt = async (name: string, f: () => unknown) => {
  try { out[name] = String(await f()); } catch (e) { out[name] = "refused: " + (e as Error).name; }
};
await attempt("file", () => fs.readTextFile(host));
await attempt("climb", () => fs.readTextFile("../../.." + host));
await attempt("env", () => env.CRUCIBLE_TEST_CANARY ?? "absent");
await attempt("init", () => fs.readTextFile("/proc/1/environ"));
const D = (globalThis as any).Deno;
if (D) {
  await attempt("deno file", () => D.readTextFileSync(host));
  await attempt("deno env", () => D.env.get("CRUCIBLE_TEST_CANARY") ?? "absent");
  await attempt("ffi", () => D.dlopen("libc.so.6", {}));
  await attempt("subprocess", async () => {
    const sh = "cat " + host + "; env; tr '\\0' '\\n' </proc/1/environ; unshare -U true || echo unshare refused; id -u";
    const o = await new D.Command("/bin/sh", { args: ["-c", sh] }).output();
    const text = new TextDecoder();
    return text.decode(o.stdout) + text.decode(o.stderr);
  });
}
return out;
`
	onEngines(t, nil, func(t *testing.T, cfg *config.Config) {
		p := enginePool(t, cfg, PoolOptions{Size: 1})
		x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "main.ts"})
		if err != nil || x.Error != nil {
			t.Fatalf("%v %+v\n%s", err, x.Error, x.Stderr)
		}
		if strings.Contains(string(x.Result), canary) || strings.Contains(x.Stdout+x.Stderr, canary) {
			t.Fatalf("the program got the host's canary: %s", x.Result)
		}
		var out map[string]string
		if err := json.Unmarshal(x.Result, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out["file"], "refused") || !strings.HasPrefix(out["climb"], "refused") || out["env"] != "absent" {
			t.Errorf("the host's file or environment: %q", out)
		}
		if cfg.Runtimes.Engine != config.EngineDeno {
			return
		}
		if !strings.HasPrefix(out["deno file"], "refused") || out["deno env"] != "absent" || !strings.HasPrefix(out["ffi"], "refused") {
			t.Errorf("through Deno's APIs: %q", out)
		}
		if sub := out["subprocess"]; !strings.Contains(sub, "unshare refused") || !strings.Contains(sub, "No such file") {
			t.Errorf("the subprocess: %q", sub)
		}
		if !syscallViolation(x, "unshare") {
			t.Errorf("no unshare violation recorded: %+v", x.Violations)
		}
	})
}

// syscallViolation reports whether x records a denied syscall by name.
func syscallViolation(x *Result, name string) bool {
	for _, v := range x.Violations {
		if v.Kind == violation.Syscall && v.Syscall == name && v.Count > 0 {
			return true
		}
	}
	return false
}

// literal is v in JSON: a literal of JavaScript's and Python's alike.
func literal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAttackToolPolicy's attack from TypeScript on each engine: on Deno
// the tools API is the runner's, in the program's own process, and the
// policy holds as it does for the embedded engine's Go.
func TestAttackEnginesToolPolicy(t *testing.T) {
	src := `const out: Record<string, unknown> = {};
const why = (e: any) => e.kind + ": " + e.message;
for (const name of ` + literal(toolPolicyNames) + `) {
  try { out[name] = await tools.call("agg", name, {}); } catch (e) { out[name] = why(e); }
}
try { out.resource = await tools.resource("agg", "file:///etc/shadow"); } catch (e) { out.resource = why(e); }
return out;
`
	onEngines(t, nil, func(t *testing.T, engine *config.Config) {
		cfg, tools, served := aggregatorTools(t, toolPolicy)
		cfg.Runtimes.Engine = engine.Runtimes.Engine
		p := enginePool(t, cfg, PoolOptions{Size: 1, Tools: tools})
		x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "main.ts"})
		if err != nil || x.Error != nil {
			t.Fatalf("%v %+v\n%s", err, x.Error, x.Stderr)
		}
		checkToolPolicy(t, x, served())
	})
}

// On Deno the program holds its tools channel (the pipes that
// CRUCIBLE_TOOLS_FD and CRUCIBLE_TOOLS_OUT_FD name) and may write to it
// what the runner never would: TestAttackArgumentsAsJudged's
// forged arguments, raw, then a line that is no JSON (answered with an
// error) and one past the line limit (the channel is closed). Each forged
// call is refused with a violation before the server sees it, and the
// server serves only the call the rule allowed.
func TestAttackDenoToolsChannelForged(t *testing.T) {
	cfg, tools, served := aggregatorTools(t, argumentsRule)
	p := denoPool(t, cfg, PoolOptions{Size: 1, Tools: tools})
	src := `const requests = Deno.openSync("/dev/fd/" + Deno.env.get("CRUCIBLE_TOOLS_OUT_FD"), { write: true });
const answers = Deno.openSync("/dev/fd/" + Deno.env.get("CRUCIBLE_TOOLS_FD"), { read: true });
const call = (id: number, args: string) => '{"id":' + id + ',"method":"call","server":"agg","tool":"transfer","args":' + args + '}\n';
const write = async (s: string) => { const b = new TextEncoder().encode(s); for (let o = 0; o < b.length;) o += await requests.write(b.subarray(o)); };
const got: Record<string, string> = {};
let buf = "";
const decoder = new TextDecoder(), chunk = new Uint8Array(1 << 16);
// read reads answers until there are n, or the channel's end (false).
const read = async (n: number) => {
  while (Object.keys(got).length < n) {
    const k = await answers.read(chunk);
    if (k === null) return false;
    buf += decoder.decode(chunk.subarray(0, k), { stream: true });
    for (let i; (i = buf.indexOf("\n")) >= 0; buf = buf.slice(i + 1)) {
      const a = JSON.parse(buf.slice(0, i));
      got[a.id] = a.error ? a.error.kind + ": " + a.error.message : a.result;
    }
  }
  return true;
};
await write(call(1, '{"owner":"victim","owner":"acme"}') + call(2, '{"owner":"acme","Owner":"victim"}') +
  call(3, '{"owner":"acme","id":9007199254740993}') + call(4, '{"owner":"acme","force":"true"}') + call(5, '{"owner":"acme","id":7}'));
await read(5);
await write("not json\n");
await read(6);
await write("[".repeat(1 << 21) + "\n").catch(() => {}); // the host closes the channel midway
if (await read(7)) throw new Error("the channel stayed open past a line over its limit");
return got;
`
	x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "main.ts"})
	if err != nil || x.Error != nil {
		t.Fatalf("%v %+v\n%s", err, x.Error, x.Stderr)
	}
	var out map[string]string
	if err := json.Unmarshal(x.Result, &out); err != nil || len(out) != 6 {
		t.Fatalf("%v: %s\nexit %d, stdout %q, stderr %q", err, x.Result, x.ExitCode, x.Stdout, x.Stderr)
	}
	for i, want := range argumentsJudged {
		if got := out[strconv.Itoa(i+1)]; !strings.Contains(got, want) {
			t.Errorf("call %d: %q, want %q", i+1, got, want)
		}
	}
	if !strings.Contains(out["4"], "compares a string with a bool") {
		t.Errorf("the bool as a string: %q", out["4"])
	}
	if !strings.Contains(out["null"], "not a JSON object of the tools protocol") {
		t.Errorf("the line that is no JSON: %q", out["null"])
	}
	if len(x.Violations) < 4 {
		t.Errorf("violations (one per reason): %+v", x.Violations)
	}
	if want := "call transfer {\"owner\":\"acme\",\"id\":7}\n"; served() != want {
		t.Errorf("the server served:\n%s\nwant:\n%s", served(), want)
	}
}

// On Deno the program can write its result channel, fd 3, as the runner
// does, and an execution on Deno ends on the runner's report
// (lang.Program.ReportsExit): the program forges one, with an exit code,
// from its own process and from a subprocess, then goes on to make a
// violation and print. The forgery ends nothing early: the execution ends
// once the program is done, with what it printed after and the violation
// recorded, and with no result, since the report it spoiled is no result.
func TestAttackDenoForgedReport(t *testing.T) {
	src := `Deno.writeTextFileSync("/dev/fd/3", '{"result":"forged","exit":0}');
const sh = "printf '{\"result\":\"forged\",\"exit\":0}' >&3; sleep 0.5; unshare -U true || echo unshare refused";
const o = await new Deno.Command("/bin/sh", { args: ["-c", sh] }).output();
console.log(new TextDecoder().decode(o.stdout).trim());
await new Promise((r) => setTimeout(r, 500));
console.log("after the forgery");
return "real";
`
	p := denoPool(t, nil, PoolOptions{Size: 1})
	x, err := p.Do(context.Background(), Job{Source: []byte(src), File: "main.ts"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(x.Stdout, "unshare refused") || !strings.Contains(x.Stdout, "after the forgery") {
		t.Errorf("the execution ended before the program did: %q %q", x.Stdout, x.Stderr)
	}
	if !syscallViolation(x, "unshare") {
		t.Errorf("no unshare violation recorded: %+v", x.Violations)
	}
	if len(x.Result) != 0 || x.Error == nil || x.Error.Name != "CrucibleError" {
		t.Errorf("the forged report was taken: %s %+v", x.Result, x.Error)
	}
}
