// The runner of `crucible run --lang deno`: runs the program in the file
// its first argument names (or, with --warm, the job its stdin brings once
// it is ready) and reports its result or its uncaught error on fd 3 as one
// JSON object. It runs inside the program's own process: it is a
// convenience, not a boundary.
const encoder = new TextEncoder();
// The runner's own JSON, taken before the program can replace the global's.
const { parse, stringify } = JSON;

// report writes text on the result channel, opened once: a warm worker's
// ready mark, then the outcome.
let results = null;
function report(text) {
  try {
    results ??= Deno.openSync("/dev/fd/3", { write: true });
    const bytes = encoder.encode(text);
    for (let off = 0; off < bytes.length;) off += results.writeSync(bytes.subarray(off));
  } catch {
    // no result channel (or the program closed it)
  }
}

function describe(e) {
  if (e instanceof Error) {
    return { name: e.name, message: e.message, stack: String(e.stack ?? "") };
  }
  return { name: "Error", message: String(e), stack: "" };
}

// tools: the execution's tool calls over its tools channel, the same API
// as the embedded engine's. The channel is two pipes (see the README's
// "The tools channel"): answers on the fd CRUCIBLE_TOOLS_FD names,
// requests on CRUCIBLE_TOOLS_OUT_FD's. Deno opens a pipe by its fd as a
// file; a socket only through its Node layer, whose start costs every
// execution more CPU than the rest of Deno's. The answers are read only
// while a request waits for one: an idle channel keeps no one waiting.
let channel = null; // { answers, requests, pending: Map id -> {resolve, reject}, seq, names, end }
function openChannel() {
  const inFd = Number(Deno.env.get("CRUCIBLE_TOOLS_FD")), outFd = Number(Deno.env.get("CRUCIBLE_TOOLS_OUT_FD"));
  if (!inFd || !outFd) throw new Error("no tools are configured: the configuration of this execution has no servers");
  const c = {
    answers: Deno.openSync(`/dev/fd/${inFd}`, { read: true }),
    requests: Deno.openSync(`/dev/fd/${outFd}`, { write: true }),
    pending: new Map(), seq: 0, names: null, end: null, reading: false, buf: "", writing: Promise.resolve(),
  };
  return c;
}
function fail(c, why) {
  c.end ??= why;
  for (const p of c.pending.values()) p.reject(new Error(c.end));
  c.pending.clear();
}
// readAnswers reads answer lines while any request waits for one.
async function readAnswers(c) {
  c.reading = true;
  const decoder = new TextDecoder(), chunk = new Uint8Array(64 << 10);
  try {
    while (c.pending.size > 0) {
      const n = await c.answers.read(chunk);
      if (n === null) return fail(c, "the tools channel was closed");
      c.buf += decoder.decode(chunk.subarray(0, n), { stream: true });
      for (let i; (i = c.buf.indexOf("\n")) >= 0;) {
        const a = parse(c.buf.slice(0, i));
        c.buf = c.buf.slice(i + 1);
        const p = c.pending.get(a.id);
        if (!p) continue;
        c.pending.delete(a.id);
        if (a.error) p.reject(Object.assign(new Error(a.error.message), { kind: a.error.kind }));
        else p.resolve(a.result);
      }
    }
  } catch (e) {
    fail(c, "the tools channel failed: " + e.message);
  } finally {
    c.reading = false;
  }
}
// send writes a request's line whole, after those before it.
function send(c, line) {
  const bytes = encoder.encode(line);
  c.writing = c.writing.then(async () => {
    for (let off = 0; off < bytes.length;) off += await c.requests.write(bytes.subarray(off));
  });
  return c.writing;
}
async function request(req) {
  const c = (channel ??= openChannel());
  if (c.end) throw new Error(c.end);
  const id = ++c.seq;
  const answer = new Promise((resolve, reject) => c.pending.set(id, { resolve, reject }));
  send(c, stringify({ id, ...req }) + "\n").catch((e) => fail(c, "the tools channel failed: " + e.message));
  if (!c.reading) readAnswers(c);
  return answer;
}
async function toolName(server, name) {
  const c = (channel ??= openChannel());
  c.names ??= request({ method: "list" }).then((list) => {
    const m = {};
    for (const t of list) (m[t.server] ??= {})[t.js_name ?? t.name] = t.name;
    return m;
  });
  return (await c.names)[server]?.[name] ?? name;
}
const toolArgs = (args) => (args === undefined || args === null ? {} : args);
const toolFns = Object.freeze({
  call: (server, tool, args) => request({ method: "call", server: String(server), tool: String(tool), args: toolArgs(args) }),
  list: () => request({ method: "list" }),
  resource: (server, uri) => request({ method: "resource", server: String(server), uri: String(uri) }),
  // No channel: neither tools nor APIs.
  apis: async (query) =>
    !Number(Deno.env.get("CRUCIBLE_TOOLS_FD")) ? [] : request(query === undefined || query === null ? { method: "apis" } : { method: "apis", query: String(query) }),
});
// Not tools: what await, JSON and console look for on any object.
const notTool = (name) => typeof name !== "string" || name === "then" || name === "toJSON" || name === "constructor";
const serverOf = (server) =>
  new Proxy({}, {
    get: (_, name) =>
      notTool(name) ? undefined : async (args) =>
        request({ method: "call", server, tool: await toolName(server, name), args: toolArgs(args) }),
  });
Object.defineProperty(globalThis, "tools", {
  value: new Proxy(toolFns, { get: (t, name) => (Object.hasOwn(t, name) ? t[name] : notTool(name) ? undefined : serverOf(name)) }),
  writable: true,
  configurable: true,
});

// env and fs: the embedded engine's two globals of its own, on Deno's
// APIs, so that a program written for one engine runs on the other. Deno's
// own flags, then the jail, bound what fs reaches; env is the sandbox's
// environment, frozen.
const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: true, configurable: true });
define("env", Object.freeze(Object.assign(Object.create(null), Deno.env.toObject())));
const fileInfo = (s, name) => ({
  ...(name === undefined ? {} : { name }),
  size: s.size, isFile: s.isFile, isDirectory: s.isDirectory, isSymlink: s.isSymlink,
  mtime: s.mtime,
});
const writeOptions = (o) => ({ append: !!o?.append });
define("fs", Object.freeze({
  readTextFile: (p) => Deno.readTextFileSync(p),
  readFile: (p) => Deno.readFileSync(p),
  writeTextFile: (p, s, o) => Deno.writeTextFileSync(p, String(s), writeOptions(o)),
  writeFile: (p, d, o) =>
    ArrayBuffer.isView(d) || d instanceof ArrayBuffer
      ? Deno.writeFileSync(p, ArrayBuffer.isView(d) ? new Uint8Array(d.buffer, d.byteOffset, d.byteLength) : new Uint8Array(d), writeOptions(o))
      : Deno.writeTextFileSync(p, String(d), writeOptions(o)),
  readDir: (p = ".") =>
    Array.from(Deno.readDirSync(p), (e) => fileInfo(Deno.lstatSync(`${p}/${e.name}`), e.name))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  stat: (p) => fileInfo(Deno.lstatSync(p)),
  exists: (p) => {
    try {
      Deno.lstatSync(p);
      return true;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return false;
      throw e;
    }
  },
  mkdir: (p, o) => Deno.mkdirSync(p, { recursive: !!o?.recursive }),
  remove: (p, o) => Deno.removeSync(p, { recursive: !!o?.recursive }),
}));

// The program's two forms, as the embedded engine has them: a program
// without import or export is the body of an async function (a top-level
// return is its result), else a module (its default export is). The script
// form is tried first; should it not parse, the module form runs. The
// wrapper keeps the program's lines where they are. A script form that
// began to run and failed is reported as it failed: it is never run twice.
//
// Both forms begin with a fence, an await before any of the program.
// Deno evaluates a module that an import() brings, and that awaits at its
// top level (both forms do), in a turn of its event loop that goes on to
// the timers due before it runs the microtasks that the module's first
// part queued: a 0 ms timer set there, due once that part took a
// millisecond, ran ahead of them (the corpus's timers_order.js, now and
// then, on a loaded machine). After the fence, the program runs as a
// microtask, and its own microtasks follow it at once.
const fence = "await 0;";
const ran = Symbol.for("crucible.ran");
const scriptPrefix = fence + `export default await (async () => {globalThis[Symbol.for("crucible.ran")] = true;`;
const scriptSuffix = "\n})();\n";
const work = "/tmp/.crucible"; // the forms' files, on the jail's /tmp

// forms makes the forms' folders.
function forms() {
  for (const form of ["script", "module"]) Deno.mkdirSync(`${work}/${form}`, { recursive: true });
}

async function load(source, name) {
  const script = `${work}/script/${name}`, module = `${work}/module/${name}`;
  Deno.writeTextFileSync(script, scriptPrefix + source + scriptSuffix);
  try {
    return await import("file://" + script);
  } catch (e) {
    if (globalThis[ran]) throw e; // it ran, and failed: its error is the program's
  }
  try {
    // A hashbang line stays a comment, of its length, after the fence.
    Deno.writeTextFileSync(module, fence + source.replace(/^#!/, "//"));
    return await import("file://" + module);
  } catch (e) {
    throw syntaxError(e, module);
  }
}

// syntaxError is the error of a module that does not parse as the
// embedded engine reports one: a SyntaxError whose stack is where the
// mistake is. Deno's parser says it in a TypeError whose message begins
// "SyntaxError: ", then the line, then where; V8's, in a SyntaxError whose
// message ends with where.
function syntaxError(e, module) {
  const lines = String(e?.message ?? "").split("\n");
  let message, at;
  if (e instanceof TypeError && lines[0].startsWith("SyntaxError: ")) {
    message = lines[0].slice("SyntaxError: ".length);
    at = lines.filter((l) => /^\s+at /.test(l)).map((l) => l.trim().slice(3));
  } else if (e instanceof SyntaxError && lines.length === 1) {
    const m = / at (file:\/\/\S+:\d+:\d+)$/.exec(lines[0]);
    if (!m) return e;
    message = lines[0].slice(0, m.index);
    at = [m[1]];
  } else {
    return e;
  }
  // On the module's first line, a column is the program's past the fence.
  const first = `file://${module}:1:`;
  at = at.map((l) => (l.startsWith(first) ? first + Math.max(1, Number(l.slice(first.length)) - fence.length) : l));
  const err = new SyntaxError(message);
  err.stack = `SyntaxError: ${message}` + at.map((l) => "\n    at " + l).join("");
  return err;
}

// check type-checks the program before it runs, against declarations
// (the tools' and the runner's globals), with Deno's own checker inside
// the jail: the warm one if this worker readied it, else `deno check` in
// a process of its own, in the script form, else (should that not parse)
// in the module form. It throws a TypeCheckError that lists the
// diagnostics, each at the program's own line, if the program does not
// pass, or if the check could not finish: either way the program does not
// run. A program that parses in neither form is left to load, which
// reports its SyntaxError and runs nothing.
async function check(source, name, declarations) {
  if (checker) {
    const diags = await warmCheck(source, name, declarations).catch(() => null);
    if (diags) {
      if (diags.length) throw checkFailed(diags, "");
      return;
    }
    await checker.close(); // its memory is the cold checker's now
    checker = null;
  }
  Deno.mkdirSync(`${checkDir}/module`, { recursive: true });
  Deno.writeTextFileSync(`${checkDir}/crucible.d.ts`, declarations);
  const config = { compilerOptions: { ...compilerOptions, types: ["./crucible.d.ts"] }, lock: false };
  Deno.writeTextFileSync(`${checkDir}/deno.json`, stringify(config));
  const decoder = new TextDecoder();
  for (const form of checkForms(source, name)) {
    Deno.writeTextFileSync(form.file, form.text);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--quiet", "--no-lock", "--config", `${checkDir}/deno.json`, form.file],
      stdin: "null", stdout: "piped", stderr: "piped",
    }).output();
    if (out.success) return;
    const text = decoder.decode(out.stdout) + decoder.decode(out.stderr);
    if (/^error: SyntaxError: /m.test(text)) continue; // not this form
    const diags = coldDiagnostics(text, form, name);
    if (diags.length > 0 && diags.every((d) => d.other)) return; // none of them the program's
    throw checkFailed(diags.filter((d) => !d.other), out.signal ? `killed by ${out.signal}` : `exit ${out.code}`);
  }
}
const checkDir = `${work}/check`;
const checkPrefix = "export default await (async () => {";

// checkForms are the program's two forms as the checkers read them: the
// script form, then the module form; shift is how far the program's
// first line moved right, up where the check's folder is from the form's.
function checkForms(source, name) {
  return [
    { file: `${checkDir}/${name}`, text: checkPrefix + source + scriptSuffix, shift: checkPrefix.length, up: "." },
    { file: `${checkDir}/module/${name}`, text: source, shift: 0, up: ".." },
  ];
}
const compilerOptions = { checkJs: true, noImplicitAny: false, useUnknownInCatchVariables: false };
const maxDiagnostics = 20;

// coldDiagnostics are the diagnostics that `deno check` printed of a form:
// {code: "TSnnnn", message, at: "name:line:column"}, at the program's own
// lines; other is set on one in another file (a skill's), which is not
// the program's mistake, as the warm checker, which asks only of the
// program, never sees it.
function coldDiagnostics(text, form, name) {
  const diags = [];
  let current = null;
  for (const line of text.split("\n")) {
    const head = /^(TS\d+) \[ERROR\]: (.*)$/.exec(line);
    if (head) {
      current = { code: head[1], message: head[2], at: "" };
      diags.push(current);
      continue;
    }
    const at = /^\s+at (file:\/\/\S+):(\d+):(\d+)$/.exec(line);
    if (current && !current.at && at) {
      let [, file, row, col] = at;
      if (file === "file://" + form.file) {
        file = name;
        if (row === "1") col = String(Math.max(1, Number(col) - form.shift));
      } else {
        file = file.slice(file.lastIndexOf("/") + 1);
        current.other = true;
      }
      current.at = `${file}:${row}:${col}`;
    }
  }
  return diags;
}

// checkFailed is the TypeCheckError of a check that failed: its
// diagnostics, "name:line:column TSnnnn message"; with none, the check
// could not finish (why says how it ended).
function checkFailed(diags, why) {
  let message;
  if (diags.length === 0) {
    message = `the type check could not finish (${why}), so the program did not run`;
  } else {
    const lines = diags.slice(0, maxDiagnostics).map((d) => `${d.at} ${d.code} ${d.message}`);
    if (diags.length > maxDiagnostics) lines.push(`... and ${diags.length - maxDiagnostics} more`);
    const n = diags.length === 1 ? "1 error" : `${diags.length} errors`;
    message = `the program does not type-check (${n}), so it did not run:\n` + lines.join("\n");
  }
  const err = new Error(message);
  err.name = "TypeCheckError";
  err.stack = `TypeCheckError: ${message}` + diags.slice(0, maxDiagnostics).map((d) => "\n    at " + d.at).join("");
  return err;
}

// The warm checker, a worker's under serve.typecheck: Deno's language
// server, started in the jail while the worker waits and readied with a
// check of its own, so that a job's check costs what its program adds,
// not the libraries' types (about a second, every time, for `deno
// check`). It is killed before the program runs.
let checker = null;

// warmChecker starts the warm checker; should it fail, or not be ready
// within warmLimit ms, checks are cold.
async function warmChecker() {
  Deno.mkdirSync(`${checkDir}/module`, { recursive: true });
  Deno.writeTextFileSync(`${checkDir}/deno.json`, stringify({ compilerOptions, lock: false }));
  const server = languageServer();
  const ready = (async () => {
    await server.request("initialize", {
      processId: null, rootUri: "file://" + checkDir,
      capabilities: { textDocument: { diagnostic: {} }, workspace: { configuration: true } },
      initializationOptions: { ...serverSettings, config: `${checkDir}/deno.json` },
    });
    server.notify("initialized", {});
    await server.diagnostics(`file://${checkDir}/warm.ts`, "export default (1 as number);\n");
  })();
  ready.catch(() => {}); // should the limit come first
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("late")), warmLimit)));
  try {
    await Promise.race([ready, late]);
    checker = server;
  } catch {
    server.kill();
  } finally {
    clearTimeout(timer);
  }
}
const serverSettings = { enable: true, lint: false };
const warmLimit = 30_000;

// warmCheck checks the program with the warm checker in the form that
// load will run: its diagnostics, or null if it cannot tell (an import it
// has not fetched, which `deno check` fetches). The declarations are a
// document of their own, which the program's form references on a line
// before the program's.
async function warmCheck(source, name, declarations) {
  const declared = `${checkDir}/crucible.d.ts`;
  checker.open("file://" + declared, declarations);
  const script = await parsesAsScript(source, name);
  const form = checkForms(source, name)[script ? 0 : 1];
  // Relative, or tsc cannot resolve it; a hashbang, no longer first, a comment.
  const reference = `/// <reference path="${form.up}/crucible.d.ts" />\n`;
  const items = await checker.diagnostics("file://" + form.file, reference + form.text.replace(/^#!/, "//"));
  // Not the checker's to judge: a module that it has not fetched, or a
  // program whose module form may not parse either (TS1xxx: the parser's
  // and the grammar's), which `deno check` tells apart.
  if (items.some((d) => d.source !== "deno-ts" || (!script && d.code >= 1000 && d.code < 2000))) return null;
  return items.filter((d) => d.severity === 1).map((d) => {
    const row = Math.max(1, d.range.start.line); // the reference's line is 0
    let col = d.range.start.character + 1;
    if (row === 1) col = Math.max(1, col - form.shift);
    return { code: `TS${d.code}`, message: String(d.message).split("\n")[0], at: `${name}:${row}:${col}` };
  });
}

// parsesAsScript says whether the program parses in the script form, which
// load tries first: Deno's own parser reads it, in a file that throws
// before any of it runs (the fence's place, its length).
async function parsesAsScript(source, name) {
  const probe = `${work}/probe/${name}`;
  Deno.mkdirSync(`${work}/probe`, { recursive: true });
  Deno.writeTextFileSync(probe, "throw 0;" + scriptPrefix.slice(fence.length) + source + scriptSuffix);
  try {
    await import("file://" + probe);
  } catch (e) {
    return e === 0;
  }
  return false;
}

// readMessages calls receive with each message that stream brings, in
// the language server protocol's framing (a Content-Length header, a
// blank line, that many bytes of JSON), until the stream ends.
async function readMessages(stream, receive) {
  const decoder = new TextDecoder();
  let buf = new Uint8Array(0);
  for await (const chunk of stream) {
    const more = new Uint8Array(buf.length + chunk.length);
    more.set(buf);
    more.set(chunk, buf.length);
    buf = more;
    for (;;) {
      const head = decoder.decode(buf.subarray(0, Math.min(buf.length, 256)));
      const end = head.indexOf("\r\n\r\n");
      if (end < 0 && buf.length >= 256) throw new Error("a header too long");
      if (end < 0) break;
      const length = Number(/Content-Length: *(\d+)/i.exec(head.slice(0, end))?.[1]);
      if (!(length >= 0)) throw new Error("a message with no length");
      const start = encoder.encode(head.slice(0, end + 4)).length;
      if (buf.length < start + length) break;
      receive(parse(decoder.decode(buf.subarray(start, start + length))));
      buf = buf.slice(start + length);
    }
  }
}

// languageServer starts `deno lsp` and speaks its protocol (JSON-RPC over
// its stdin and stdout, each message after a Content-Length header): the
// requests that a check needs, and answers to the server's own.
function languageServer() {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["lsp"], stdin: "piped", stdout: "piped", stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  const kill = () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // it has ended
    }
  };
  const pending = new Map();
  let seq = 0, gone = null;
  const send = (msg) => {
    const body = encoder.encode(stringify({ jsonrpc: "2.0", ...msg }));
    writer.write(encoder.encode(`Content-Length: ${body.length}\r\n\r\n`)).catch(() => {});
    writer.write(body).catch(() => {});
  };
  const receive = (msg) => {
    if (msg.method === undefined) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) p?.reject(new Error(String(msg.error.message)));
      else p?.resolve(msg.result);
    } else if (msg.id !== undefined) {
      const items = msg.params?.items;
      const result = msg.method === "workspace/configuration" && Array.isArray(items) ? items.map(() => serverSettings) : null;
      send({ id: msg.id, result });
    }
  };
  const reading = (async () => {
    try {
      await readMessages(child.stdout, receive);
    } catch {
      // the server spoke out of turn: it is done
    }
    gone = new Error("the type checker ended");
    for (const p of pending.values()) p.reject(gone);
    pending.clear();
    kill();
  })();
  const server = {
    request(method, params) {
      if (gone) return Promise.reject(gone);
      const id = ++seq;
      send({ id, method, params });
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    },
    notify(method, params) {
      if (!gone) send({ method, params });
    },
    open(uri, text) {
      const languageId = /\.[cm]?js$/.test(uri) ? "javascript" : /\.jsx$/.test(uri) ? "javascriptreact" : /\.tsx$/.test(uri) ? "typescriptreact" : "typescript";
      server.notify("textDocument/didOpen", { textDocument: { uri, languageId, version: 1, text } });
    },
    // diagnostics opens a document and pulls its diagnostics.
    async diagnostics(uri, text) {
      server.open(uri, text);
      const report = await server.request("textDocument/diagnostic", { textDocument: { uri } });
      return Array.isArray(report?.items) ? report.items : [];
    },
    // kill ends the server at once; close waits until it has.
    kill,
    async close() {
      kill();
      await child.status;
      await reading;
    },
  };
  return server;
}

// readStdin reads all of stdin, the job, at once: nothing else of the
// runner's has to run meanwhile.
function readStdin() {
  const chunks = [], chunk = new Uint8Array(64 << 10);
  for (let n; (n = Deno.stdin.readSync(chunk)) !== null;) chunks.push(chunk.slice(0, n));
  const all = new Uint8Array(chunks.reduce((size, c) => size + c.length, 0));
  chunks.reduce((off, c) => (all.set(c, off), off + c.length), 0);
  return new TextDecoder().decode(all);
}

// job reads a warm worker's job from stdin, once ready: {source, name}.
function job() {
  report("\n"); // ready: the pool may hand this jail work now (lang.ReadyMark)
  const text = readStdin();
  report("\n"); // taken: nothing of the program has run (lang.TakenMark)
  const input = parse(text);
  if (typeof input?.source !== "string" || typeof input?.name !== "string") throw new Error("no name and program");
  if (input.check !== undefined && typeof input.check !== "string") throw new Error("declarations that are no string");
  // The workspace may have been bound over our working directory while
  // we waited (lang.Warm): enter it.
  Deno.chdir(Deno.cwd());
  return input;
}

// warm readies what every program uses before the job comes: the module
// loader and the TypeScript transpiler; and, with the checker, that.
async function warm(withChecker) {
  forms();
  Deno.writeTextFileSync(`${work}/warm.ts`, "export default (1 as number);\n");
  await import("file://" + `${work}/warm.ts`);
  if (withChecker) await warmChecker();
}

// The end of an execution: the report, then Deno.exit at once. Deno's own
// way out (once its event loop is empty) tears its runtime down first,
// which costs a warm execution more than the program did; nothing of the
// program is left to run by then. The report carries the exit code, so
// the execution may end on it (lang.Program.ReportsExit). fields are the
// report's members but its exit, as JSON text; the first end is the one.
let ended = false;
function end(fields, code) {
  if (ended) return;
  ended = true;
  checker?.kill(); // an execution ends once all of it is exiting
  report(`{${fields},"exit":${code}}`);
  Deno.exit(code);
}
function failed(e) {
  const err = describe(e);
  console.error(err.stack || `${err.name}: ${err.message}`);
  end(`"error":${stringify(err)}`, 1);
}
// An error nothing caught ends the program with it, as on the embedded
// engine: thrown by a timer's callback, or a rejection nobody handled
// (which Deno, unlike the embedded engine, counts as uncaught).
globalThis.addEventListener("error", (e) => {
  e.preventDefault();
  failed(e.error);
});
globalThis.addEventListener("unhandledrejection", (e) => {
  e.preventDefault();
  failed(e.reason);
});

// settle reports the program's result once its event loop is empty, as
// the embedded engine does: its timers and the work they started come
// first, and so do its own unload listeners, which run before the
// runner's (put last again as the loop empties, in case the program added
// one since).
function settle(text) {
  const done = () => end(`"result":${text}`, Deno.exitCode);
  globalThis.addEventListener("unload", done);
  globalThis.addEventListener("beforeunload", () => {
    globalThis.removeEventListener("unload", done);
    globalThis.addEventListener("unload", done);
  });
}

try {
  let source, name, declarations;
  if (Deno.args[0] === "--warm") {
    await warm(Deno.args[1] === "--checker");
    ({ source, name, check: declarations } = job());
  } else {
    forms();
    source = Deno.readTextFileSync(Deno.args[0]);
    name = Deno.args[1];
    if (Deno.args[2] === "--check") declarations = Deno.readTextFileSync(Deno.args[3]);
  }
  if (declarations !== undefined) await check(source, name, declarations);
  await checker?.close(); // before any of the program runs
  checker = null;
  const mod = await load(source, name);
  const value = await mod.default;
  // Encoded now, with the runner's own JSON: what the program does after
  // it returns cannot change its result.
  let text;
  try {
    text = stringify(value === undefined ? null : value) ?? "null"; // a function's, a symbol's
  } catch (e) {
    throw new TypeError("the result cannot be encoded as JSON: " + (e?.message ?? e));
  }
  settle(text);
} catch (e) {
  failed(e);
}
