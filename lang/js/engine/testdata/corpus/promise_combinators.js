// Promise.all, allSettled, any, race, AggregateError, resolve/reject
const delay = (ms, v, fail = false) =>
  new Promise((res, rej) => setTimeout(() => (fail ? rej(new Error(v)) : res(v)), ms));
// The one that loses a race never settles: which of two timers fires first
// is a matter of time on a slow machine.
const never = new Promise(() => {});

const r = {};
r.all = await Promise.all([delay(20, "a"), delay(5, "b"), "c", Promise.resolve("d")]);

try { await Promise.all([delay(5, "ok"), delay(1, "boom", true)]); }
catch (e) { r.allRejects = e.message; }

r.allSettled = (await Promise.allSettled([delay(3, 1), delay(1, "no", true), 3])).map((s) =>
  s.status === "fulfilled" ? { s: s.status, v: s.value } : { s: s.status, r: s.reason.message });

r.any = await Promise.any([delay(1, "x", true), never, delay(3, "fast")]);

try { await Promise.any([delay(1, "e1", true), Promise.reject(new Error("e2"))]); }
catch (e) {
  r.anyError = {
    isAggregate: e instanceof AggregateError,
    name: e.name,
    errors: e.errors.map((x) => x.message),
  };
}

try { await Promise.any([]); } catch (e) { r.anyEmpty = e.constructor.name + ":" + e.errors.length; }

r.race = await Promise.race([never, delay(2, "quick")]);
r.raceReject = await Promise.race([never, delay(2, "err", true)]).catch((e) => "rejected:" + e.message);

r.allEmpty = await Promise.all([]);

const agg = new AggregateError([new TypeError("t"), 1], "many", { cause: "c" });
r.aggregateCtor = { msg: agg.message, len: agg.errors.length, cause: agg.cause, isErr: agg instanceof Error };

// then chaining & finally passthrough
r.chain = await Promise.resolve(1)
  .then((x) => x + 1)
  .finally(() => 100)
  .then((x) => x * 10);

export default r;
