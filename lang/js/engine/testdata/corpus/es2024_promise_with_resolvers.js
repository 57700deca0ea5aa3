// ES2024 (newer than ES2023): Promise.withResolvers
const r = {};
const { promise, resolve, reject } = Promise.withResolvers();
setTimeout(() => resolve("resolved later"), 1);
r.resolved = await promise;
r.types = [typeof resolve, typeof reject, promise instanceof Promise];

const second = Promise.withResolvers();
second.reject(new Error("nope"));
r.rejected = await second.promise.catch((e) => e.message);

// a tiny deferred-based queue
function channel() {
  const waiters = [], items = [];
  return {
    put(v) { waiters.length ? waiters.shift().resolve(v) : items.push(v); },
    take() { if (items.length) return Promise.resolve(items.shift()); const d = Promise.withResolvers(); waiters.push(d); return d.promise; },
  };
}
const ch = channel();
const taken = [ch.take(), ch.take()];
ch.put("a"); ch.put("b"); ch.put("c");
r.channel = [...(await Promise.all(taken)), await ch.take()];

export default r;
