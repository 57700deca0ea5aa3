// The runner of `crucible run --lang deno`: imports the module named by its
// argument and reports its default export (awaited) or its uncaught error on
// fd 3 as one JSON object. It runs inside the program's own process: it is a
// convenience, not a boundary.
const encoder = new TextEncoder();

function report(text) {
  try {
    const out = Deno.openSync("/dev/fd/3", { write: true });
    out.writeSync(encoder.encode(text));
    out.close();
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

// tools: the execution's tool calls over its tools channel, the fd that
// CRUCIBLE_TOOLS_FD names (see the README's "The tools channel"), the same
// API as the embedded engine's. Deno has no way to take a socket by its fd
// but node:net's.
let channel = null; // { socket, pending: Map id -> {resolve, reject}, seq, names }
async function openChannel() {
  const fd = Number(Deno.env.get("CRUCIBLE_TOOLS_FD"));
  if (!fd) throw new Error("no tools are configured: the configuration of this execution has no servers");
  const { default: net } = await import("node:net");
  const socket = new net.Socket({ fd, readable: true, writable: true });
  const c = { socket, pending: new Map(), seq: 0, names: null, end: null };
  let buf = "";
  socket.setEncoding("utf8");
  socket.on("data", (d) => {
    buf += d;
    for (let i; (i = buf.indexOf("\n")) >= 0;) {
      const a = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      const p = c.pending.get(a.id);
      if (!p) continue;
      c.pending.delete(a.id);
      if (c.pending.size === 0) socket.unref(); // an idle channel keeps no one waiting
      if (a.error) p.reject(Object.assign(new Error(a.error.message), { kind: a.error.kind }));
      else p.resolve(a.result);
    }
  });
  const fail = (why) => {
    c.end = why;
    for (const p of c.pending.values()) p.reject(new Error(why));
    c.pending.clear();
  };
  socket.on("error", (e) => fail("the tools channel failed: " + e.message));
  socket.on("close", () => fail("the tools channel was closed"));
  socket.unref();
  return c;
}
async function request(req) {
  channel ??= openChannel();
  const c = await channel;
  if (c.end) throw new Error(c.end);
  const id = ++c.seq;
  return new Promise((resolve, reject) => {
    c.pending.set(id, { resolve, reject });
    c.socket.ref();
    c.socket.write(JSON.stringify({ id, ...req }) + "\n");
  });
}
async function toolName(server, name) {
  const c = await (channel ??= openChannel());
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

try {
  const mod = await import(new URL(Deno.args[0], "file:///").href);
  const value = await mod.default;
  let text;
  try {
    text = JSON.stringify({ result: value === undefined ? null : value });
  } catch (e) {
    throw new TypeError("the default export cannot be encoded as JSON: " + (e?.message ?? e));
  }
  report(text);
} catch (e) {
  const err = describe(e);
  console.error(err.stack || `${err.name}: ${err.message}`);
  report(JSON.stringify({ error: err }));
  Deno.exit(1);
}
