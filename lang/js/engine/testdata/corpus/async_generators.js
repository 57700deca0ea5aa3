// async generators and for-await-of
const tick = (v) => new Promise((r) => setTimeout(() => r(v), 1));

async function* countdown(n) {
  while (n > 0) { yield await tick(n); n--; }
  return "done";
}

const r = {};
r.values = [];
for await (const v of countdown(3)) r.values.push(v);

// manual next() shows the return value
const g = countdown(1);
r.manual = [await g.next(), await g.next(), await g.next()];

// for-await over a sync iterable of promises
r.syncOfPromises = [];
for await (const v of [tick("a"), "b", Promise.resolve("c")]) r.syncOfPromises.push(v);

// early break calls return() and runs finally
const log = [];
async function* withCleanup() {
  try { yield 1; yield 2; yield 3; } finally { log.push("cleanup"); }
}
for await (const v of withCleanup()) { log.push(v); if (v === 2) break; }
r.earlyBreak = log;

// yield* delegation between async generators
async function* inner() { yield "i1"; yield "i2"; return "innerRet"; }
async function* outer() { const ret = yield* inner(); yield ret; }
r.delegate = [];
for await (const v of outer()) r.delegate.push(v);

// errors thrown inside the generator surface in the loop
async function* thrower() { yield 1; throw new Error("gen failed"); }
r.error = [];
try { for await (const v of thrower()) r.error.push(v); } catch (e) { r.error.push(e.message); }

// return() on a suspended async generator
const g2 = countdown(5);
await g2.next();
r.returned = await g2.return("stop");
r.afterReturn = await g2.next();

export default r;
