// The prelude: the globals a program gets beyond the Web APIs of web.js,
// over the Go functions the host registered as __crucible_*. It takes those
// off the global object first, so that the program never sees them, and
// returns the dispatcher through which Go calls back into JavaScript.
(function (g, web, envJSON) {
  "use strict";
  const H = {};
  for (const k of Object.getOwnPropertyNames(g)) {
    if (k.startsWith("__crucible_")) {
      H[k.slice(11)] = g[k];
      delete g[k];
    }
  }
  const inspect = web.inspect;
  const define = (obj, name, value) =>
    Object.defineProperty(obj, name, { value, writable: true, configurable: true, enumerable: false });

  // Bytes cross to and from Go as strings of code units 0-255.
  const toLatin1 = (u8) => {
    let s = "";
    for (let i = 0; i < u8.length; i += 8192) s += String.fromCharCode.apply(null, u8.subarray(i, i + 8192));
    return s;
  };
  const fromLatin1 = (s) => {
    const u8 = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) u8[i] = s.charCodeAt(i);
    return u8;
  };
  const bytesOf = (v) => {
    if (v instanceof ArrayBuffer) return new Uint8Array(v);
    if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    return null;
  };

  // An error raised after an await inside a host API (a body that is not
  // JSON, a fetch that failed) has no frame of the program's: it takes
  // those of the call, captured before the await (site, a new Error).
  const atCall = (e, site) => {
    if (e instanceof Error) define(e, "stack", site.stack);
    return e;
  };

  // Engine gaps: BigInt.asUintN is wrong from 32 bits when the top bit is
  // set (QuickJS returns the signed value); Array.fromAsync is missing.
  define(BigInt, "asUintN", function asUintN(bits, x) {
    bits = Number(bits);
    if (!Number.isInteger(bits) || bits < 0 || bits > 2 ** 53 - 1) throw new RangeError("invalid number of bits");
    if (typeof x !== "bigint") x = BigInt(x);
    const m = 1n << BigInt(bits);
    const r = x % m;
    return r < 0n ? r + m : r;
  });
  define(Array, "fromAsync", async function fromAsync(items, mapFn, thisArg) {
    if (mapFn !== undefined && typeof mapFn !== "function") throw new TypeError("mapFn must be a function");
    const out = [];
    let i = 0;
    if (items?.[Symbol.asyncIterator] || items?.[Symbol.iterator]) {
      for await (const v of items) out.push(mapFn ? await mapFn.call(thisArg, v, i++) : v);
    } else {
      const o = Object(items);
      for (let k = 0; k < o.length; k++) out.push(mapFn ? await mapFn.call(thisArg, await o[k], i++) : await o[k]);
    }
    return out;
  });

  // console
  // Stacks shown in the source's own lines, without the prelude's frames.
  const format = (args) => args.map((a) => (typeof a === "string" ? a : inspect(a, H.stack))).join(" ") + "\n";
  const counts = new Map();
  const times = new Map();
  const out = (...a) => H.write(1, format(a));
  const err = (...a) => H.write(2, format(a));
  define(g, "console", {
    log: out, info: out, debug: out, dir: (v) => out(v),
    warn: err, error: err,
    trace: (...a) => {
      const stack = H.stack(new Error().stack ?? "");
      H.write(2, format(["Trace:", ...a]) + (stack && stack + "\n"));
    },
    assert: (ok, ...a) => { if (!ok) err("Assertion failed" + (a.length ? ":" : ""), ...a); },
    count: (l = "default") => { const n = (counts.get(l) || 0) + 1; counts.set(l, n); out(`${l}: ${n}`); },
    countReset: (l = "default") => counts.delete(l),
    time: (l = "default") => times.set(l, H.now()),
    timeEnd: (l = "default") => { if (times.has(l)) { out(`${l}: ${(H.now() - times.get(l)).toFixed(3)}ms`); times.delete(l); } },
    timeLog: (l = "default", ...a) => { if (times.has(l)) out(`${l}: ${(H.now() - times.get(l)).toFixed(3)}ms`, ...a); },
    table: (v) => out(v),
  });

  // Timers: the callbacks stay here, Go keeps the clock.
  const timers = new Map();
  let timerSeq = 0;
  const addTimer = (cb, ms, args, repeat) => {
    if (typeof cb !== "function") throw new TypeError("the callback must be a function");
    const id = ++timerSeq;
    ms = Math.max(0, Number(ms) || 0);
    timers.set(id, { cb, ms, args, repeat });
    H.timer(id, ms);
    return id;
  };
  const clearTimer = (id) => {
    if (timers.delete(id)) H.cancel(id);
  };
  define(g, "setTimeout", (cb, ms, ...args) => addTimer(cb, ms, args, false));
  define(g, "setInterval", (cb, ms, ...args) => addTimer(cb, ms, args, true));
  define(g, "clearTimeout", clearTimer);
  define(g, "clearInterval", clearTimer);
  define(g, "queueMicrotask", (cb) => {
    if (typeof cb !== "function") throw new TypeError("the callback must be a function");
    Promise.resolve().then(() => cb());
  });
  define(g, "performance", { now: () => H.now(), timeOrigin: Date.now() - H.now() });

  // crypto
  define(g, "crypto", {
    randomUUID: () => H.uuid(),
    getRandomValues: (a) => {
      if (!(ArrayBuffer.isView(a)) || a instanceof Float32Array || a instanceof Float64Array || a instanceof DataView)
        throw new TypeError("getRandomValues takes an integer typed array");
      if (a.byteLength > 65536) throw new g.DOMException("at most 65536 bytes at once", "QuotaExceededError");
      bytesOf(a).set(fromLatin1(H.random(a.byteLength)));
      return a;
    },
  });

  // env: the sandbox's environment, read-only.
  define(g, "env", Object.freeze(Object.assign(Object.create(null), JSON.parse(envJSON) || {})));

  // fs: files under /workspace and /tmp only; relative paths from /workspace.
  const path = (p) => {
    if (p instanceof URL) p = p.pathname;
    if (typeof p !== "string") throw new TypeError("a path must be a string");
    return p;
  };
  define(g, "fs", Object.freeze({
    readTextFile: (p) => H.fs("read", path(p), false),
    readFile: (p) => fromLatin1(H.fs("read", path(p), true)),
    writeTextFile: (p, s, o = {}) => { H.fs("write", path(p), String(s), false, !!o.append); },
    writeFile: (p, d, o = {}) => {
      const b = bytesOf(d);
      if (b) H.fs("write", path(p), toLatin1(b), true, !!o.append);
      else H.fs("write", path(p), String(d), false, !!o.append);
    },
    readDir: (p = ".") => JSON.parse(H.fs("readDir", path(p))),
    stat: (p) => { const s = JSON.parse(H.fs("stat", path(p))); s.mtime = new Date(s.mtime); return s; },
    exists: (p) => H.fs("exists", path(p)),
    mkdir: (p, o = {}) => { H.fs("mkdir", path(p), !!o.recursive); },
    remove: (p, o = {}) => { H.fs("remove", path(p), !!o.recursive); },
  }));

  // URL: Go parses and runs the setters (url.go, after the WHATWG URL
  // Standard); the object keeps the attributes Go returns. A setter sends
  // the href, which always parses back to the same URL, and the new value.
  const { URLSearchParams } = g;
  const usv = (v) => `${v}`.toWellFormed();
  const urlCall = (...args) => {
    const p = JSON.parse(H.url(...args));
    if (p.error !== undefined) throw new TypeError(p.error);
    return p;
  };
  class URL {
    #p;
    #params = null;
    constructor(input, base = undefined) {
      this.#p = base === undefined ? urlCall(usv(input)) : urlCall(usv(input), usv(base));
    }
    static canParse(input, base) {
      try { new URL(input, base); return true; } catch { return false; }
    }
    static parse(input, base) {
      try { return new URL(input, base); } catch { return null; }
    }
    #set(name, v) { this.#p = urlCall(this.#p.href, null, name, usv(v)); }
    // The searchParams object stays the same; its list follows the query.
    #queryChanged() { if (this.#params !== null) web.updateSearchParams(this.#params, this.#p.search); }
    get href() { return this.#p.href; }
    set href(v) { this.#p = urlCall(usv(v)); this.#queryChanged(); }
    get origin() { return this.#p.origin; }
    get protocol() { return this.#p.protocol; }
    set protocol(v) { this.#set("protocol", v); }
    get username() { return this.#p.username; }
    set username(v) { this.#set("username", v); }
    get password() { return this.#p.password; }
    set password(v) { this.#set("password", v); }
    get host() { return this.#p.host; }
    set host(v) { this.#set("host", v); }
    get hostname() { return this.#p.hostname; }
    set hostname(v) { this.#set("hostname", v); }
    get port() { return this.#p.port; }
    set port(v) { this.#set("port", v); }
    get pathname() { return this.#p.pathname; }
    set pathname(v) { this.#set("pathname", v); }
    get search() { return this.#p.search; }
    set search(v) { this.#set("search", v); this.#queryChanged(); }
    get hash() { return this.#p.hash; }
    set hash(v) { this.#set("hash", v); }
    get searchParams() {
      if (this.#params === null) {
        const params = new URLSearchParams(this.#p.search, () => this.#set("search", params.toString()));
        this.#params = params;
      }
      return this.#params;
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
  }
  define(g, "URL", URL);

  // fetch, Request, Response: Go makes the request, through the jail's network.
  const kBody = Symbol("body");
  const bodyInit = (body, headers) => {
    if (body === undefined || body === null) return null;
    if (typeof body === "string") {
      if (!headers.has("content-type")) headers.set("content-type", "text/plain;charset=UTF-8");
      return { text: body };
    }
    if (body instanceof URLSearchParams) {
      if (!headers.has("content-type")) headers.set("content-type", "application/x-www-form-urlencoded;charset=UTF-8");
      return { text: body.toString() };
    }
    const b = bytesOf(body);
    if (b) return { bytes: b.slice() };
    return bodyInit(String(body), headers);
  };
  class Body {
    [kBody] = null;
    #used = false;
    get bodyUsed() { return this.#used; }
    get body() { return null; } // no streams: read it with text(), json(), bytes() or arrayBuffer()
    #take() {
      if (this.#used) throw new TypeError("the body has been read already");
      this.#used = true;
      return this[kBody];
    }
    async text() {
      const b = this.#take();
      if (!b) return "";
      if (b.id !== undefined) return H.body(b.id, false);
      if (b.text !== undefined) return b.text;
      return new TextDecoder().decode(b.bytes);
    }
    async bytes() {
      const b = this.#take();
      if (!b) return new Uint8Array(0);
      if (b.id !== undefined) return fromLatin1(H.body(b.id, true));
      if (b.text !== undefined) return new TextEncoder().encode(b.text);
      return b.bytes.slice();
    }
    async arrayBuffer() { return (await this.bytes()).buffer; }
    async json() {
      const site = new Error();
      const text = await this.text();
      try {
        return JSON.parse(text);
      } catch (e) {
        throw atCall(e, site);
      }
    }
  }
  const methods = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]);
  class Request extends Body {
    #url; #method; #headers; #redirect; #signal;
    constructor(input, init = {}) {
      super();
      const from = input instanceof Request ? input : null;
      this.#url = new URL(from ? from.url : input).href;
      let m = String(init.method ?? from?.method ?? "GET");
      if (methods.has(m.toUpperCase())) m = m.toUpperCase();
      if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(m)) throw new TypeError(`invalid method ${JSON.stringify(m)}`);
      this.#method = m;
      this.#headers = new Headers(init.headers ?? from?.headers);
      this.#redirect = init.redirect ?? from?.redirect ?? "follow";
      this.#signal = init.signal ?? from?.signal ?? null;
      const body = init.body !== undefined ? bodyInit(init.body, this.#headers) : from ? from[kBody] : null;
      if (body && (m === "GET" || m === "HEAD")) throw new TypeError("a GET or HEAD request has no body");
      this[kBody] = body;
    }
    get url() { return this.#url; }
    get method() { return this.#method; }
    get headers() { return this.#headers; }
    get redirect() { return this.#redirect; }
    get signal() { return this.#signal; }
    clone() { return new Request(this); }
  }
  class Response extends Body {
    #status; #statusText; #headers; #url = ""; #redirected = false; #type = "default";
    constructor(body = null, init = {}) {
      super();
      this.#status = init.status ?? 200;
      if (!Number.isInteger(this.#status) || this.#status < 200 || this.#status > 599)
        throw new RangeError(`invalid status ${this.#status}`);
      this.#statusText = String(init.statusText ?? "");
      this.#headers = new Headers(init.headers);
      this[kBody] = bodyInit(body, this.#headers);
    }
    static json(data, init = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
      return new Response(JSON.stringify(data), { ...init, headers });
    }
    static error() {
      const r = new Response(null, { status: 200 });
      r.#status = 0;
      r.#type = "error";
      return r;
    }
    static redirect(url, status = 302) {
      return new Response(null, { status, headers: { location: new URL(url).href } });
    }
    static fromHost(p, id) {
      const r = new Response(null, { statusText: p.statusText, headers: p.headers });
      r.#status = p.status;
      r.#url = p.url;
      r.#redirected = p.redirected;
      r.#type = "basic";
      r[kBody] = { id };
      return r;
    }
    get status() { return this.#status; }
    get ok() { return this.#status >= 200 && this.#status < 300; }
    get statusText() { return this.#statusText; }
    get headers() { return this.#headers; }
    get url() { return this.#url; }
    get redirected() { return this.#redirected; }
    get type() { return this.#type; }
    clone() {
      if (this.bodyUsed) throw new TypeError("the body has been read already");
      let b = this[kBody];
      if (b && b.id !== undefined) b = this[kBody] = { bytes: fromLatin1(H.body(b.id, true)) };
      const r = new Response(null, { status: this.#status || 200, statusText: this.#statusText, headers: this.#headers });
      r.#status = this.#status;
      r.#url = this.#url;
      r.#redirected = this.#redirected;
      r.#type = this.#type;
      r[kBody] = b;
      return r;
    }
  }
  const fromHost = Response.fromHost;
  delete Response.fromHost;
  define(g, "Request", Request);
  define(g, "Response", Response);
  for (const c of [URL, Body, Request, Response]) web.ownClass(c);

  const pending = new Map(); // fetch id -> { resolve, reject, site }
  define(g, "fetch", (input, init) => {
    const site = new Error();
    try {
      const req = new Request(input, init);
      const signal = req.signal;
      if (signal?.aborted) return Promise.reject(signal.reason);
      const b = req[kBody];
      const wire = { method: req.method, url: req.url, headers: [...req.headers], redirect: req.redirect, body: null, binary: false };
      if (b && b.text !== undefined) wire.body = b.text;
      else if (b && b.bytes) { wire.body = toLatin1(b.bytes); wire.binary = true; }
      const id = H.fetch(JSON.stringify(wire));
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject, site });
        signal?.addEventListener("abort", () => {
          if (pending.delete(id)) { H.fetchAbort(id); reject(signal.reason); }
        });
      });
    } catch (e) {
      return Promise.reject(e instanceof TypeError ? e : new TypeError(String(e?.message ?? e)));
    }
  });

  // tools: the execution's tool calls, which Go carries to its tools channel.
  // tools.<server>.<name>(args) calls a tool by the name its declaration
  // gives it (Go maps it back); call, list, resource and apis are the rest.
  const toolCalls = new Map(); // tool request id -> { resolve, reject, site }
  const toolRequest = (req, byJSName) => {
    const site = new Error();
    try {
      const id = H.tool(JSON.stringify(req), byJSName);
      return new Promise((resolve, reject) => toolCalls.set(id, { resolve, reject, site }));
    } catch (e) {
      return Promise.reject(atCall(new Error(String(e?.message ?? e)), site));
    }
  };
  const toolArgs = (args) => (args === undefined || args === null ? {} : args);
  const toolFns = {
    call: (server, tool, args) => toolRequest({ method: "call", server: String(server), tool: String(tool), args: toolArgs(args) }, false),
    list: () => toolRequest({ method: "list" }, false),
    resource: (server, uri) => toolRequest({ method: "resource", server: String(server), uri: String(uri) }, false),
    apis: (query) => toolRequest(query === undefined || query === null ? { method: "apis" } : { method: "apis", query: String(query) }, false),
  };
  // Not tools: what await, JSON and console look for on any object.
  const notTool = (name) => typeof name !== "string" || name === "then" || name === "toJSON" || name === "constructor";
  const serverOf = (server) =>
    new Proxy({}, {
      get: (_, name) => (notTool(name) ? undefined : (args) => toolRequest({ method: "call", server, tool: name, args: toolArgs(args) }, true)),
    });
  define(g, "tools", new Proxy(Object.freeze({ ...toolFns }), {
    get: (t, name) => (Object.hasOwn(t, name) ? t[name] : notTool(name) ? undefined : serverOf(name)),
  }));

  const toJSON = (v) => {
    if (v === undefined) return undefined;
    try {
      return JSON.stringify(v);
    } catch (e) {
      throw new TypeError(`the result cannot be turned into JSON: ${e?.message ?? e}`);
    }
  };
  const fail = (e) => {
    if (e instanceof Error) H.settle(false, String(e.name), String(e.message), String(e.stack ?? ""));
    else H.settle(false, "Error", "uncaught " + inspect(e), "");
  };

  // Go calls this: ("run", module), ("timer", id), ("fetch" or "tool", id, ok,
  // payload).
  return function dispatch(kind, id, ok, payload) {
    switch (kind) {
      case "run":
        import(id).then((ns) => ns.default).then((v) => H.settle(true, toJSON(v))).catch(fail);
        break;
      case "timer": {
        const t = timers.get(id);
        if (!t) return;
        if (t.repeat) H.timer(id, t.ms);
        else timers.delete(id);
        t.cb(...t.args);
        break;
      }
      case "fetch": {
        const p = pending.get(id);
        if (!p) return;
        pending.delete(id);
        if (ok) p.resolve(fromHost(JSON.parse(payload), id));
        else p.reject(atCall(new TypeError(payload), p.site));
        break;
      }
      case "tool": {
        const p = toolCalls.get(id);
        if (!p) return;
        toolCalls.delete(id);
        if (ok) {
          p.resolve(JSON.parse(payload));
          return;
        }
        const { kind, message } = JSON.parse(payload);
        const e = atCall(new Error(message), p.site);
        define(e, "kind", kind); // "tool", "limit" or "error"
        p.reject(e);
        break;
      }
    }
  };
})
