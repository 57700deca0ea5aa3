// custom Symbol.asyncIterator objects and classes
const r = {};

const range = {
  from: 1, to: 4,
  [Symbol.asyncIterator]() {
    let cur = this.from; const last = this.to;
    return {
      next: () => Promise.resolve(cur <= last ? { value: cur++, done: false } : { value: undefined, done: true }),
    };
  },
};
r.range = [];
for await (const x of range) r.range.push(x);

class Queue {
  #items;
  constructor(items) { this.#items = items; }
  async *[Symbol.asyncIterator]() {
    for (const it of this.#items) { await null; yield it.toUpperCase(); }
  }
}
r.queue = [];
for await (const s of new Queue(["a", "b", "c"])) r.queue.push(s);

// return() is called on break
const calls = [];
const tracked = {
  [Symbol.asyncIterator]() {
    let i = 0;
    return {
      async next() { calls.push("next"); return { value: i++, done: false }; },
      async return() { calls.push("return"); return { done: true }; },
    };
  },
};
for await (const v of tracked) { if (v >= 1) break; }
r.calls = calls;

// collect helper consuming any async iterable
async function collect(it) { const out = []; for await (const v of it) out.push(v); return out; }
async function* mapAsync(it, f) { for await (const v of it) yield f(v); }
r.mapped = await collect(mapAsync(range, (x) => x * x));

r.hasAsyncIterator = typeof Symbol.asyncIterator === "symbol";
r.asyncGenProtoTag = Object.prototype.toString.call((async function* () {})());

export default r;
