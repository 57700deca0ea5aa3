// try/catch/finally: ordering, return/throw overriding in finally, finally in loops and generators, rethrow
const r = {};
const log = [];
function f1() {
  try { log.push("try"); return "from try"; }
  finally { log.push("finally"); }
}
r.returnThenFinally = [f1(), log.splice(0)];

function f2() { try { return "try"; } finally { return "finally wins"; } }
r.finallyOverridesReturn = f2();

function f3() { try { throw new Error("lost"); } finally { return "swallowed"; } }
r.finallyReturnSwallowsThrow = f3();

function f4() { try { throw new Error("first"); } finally { throw new Error("second"); } }
try { f4(); } catch (e) { r.throwInFinallyReplaces = e.message; }

function f5() {
  try { throw new Error("original"); }
  catch (e) { throw new Error("from catch: " + e.message); }
  finally { log.push("finally after catch throw"); }
}
try { f5(); } catch (e) { r.catchRethrow = [e.message, log.splice(0)]; }

function f6() { let x = 1; try { return x; } finally { x = 2; } }
r.returnValueCapturedBeforeFinally = f6();

// finally runs on break/continue
for (let i = 0; i < 3; i++) {
  try { if (i === 0) continue; if (i === 2) break; log.push("body" + i); }
  finally { log.push("fin" + i); }
}
r.loopControl = log.splice(0);

// nested try with error propagating outward
function nested() {
  try {
    try { throw new TypeError("inner"); }
    finally { log.push("inner finally"); }
  } catch (e) { log.push("outer catch " + e.name); return "handled"; }
  finally { log.push("outer finally"); }
}
r.nested = [nested(), log.splice(0)];

// async finally
async function af() {
  try { await Promise.reject(new Error("async fail")); }
  catch (e) { log.push("async catch " + e.message); }
  finally { await null; log.push("async finally"); }
  return "async done";
}
r.asyncFinally = [await af(), log.splice(0)];

// Promise.prototype.finally does not change value, but a throw does
r.promiseFinally = [
  await Promise.resolve("kept").finally(() => "ignored"),
  await Promise.resolve("x").finally(() => { throw new Error("finally threw"); }).catch((e) => e.message),
  await Promise.reject(new Error("rej")).finally(() => {}).catch((e) => "still " + e.message),
];

// generator finally runs on return()
function* g() { try { yield 1; yield 2; } finally { log.push("gen finally"); } }
const it = g(); it.next();
r.generatorReturn = [it.return("early"), log.splice(0)];

export default r;
