// sync generators: next args, return/throw, yield* delegation, infinite sequences
const r = {};

function* fib() { let [a, b] = [0, 1]; for (;;) { yield a; [a, b] = [b, a + b]; } }
r.fib = [];
for (const n of fib()) { if (n > 50) break; r.fib.push(n); }

function* echo() { const x = yield "first"; const y = yield x * 2; return x + y; }
const e = echo();
r.nextArgs = [e.next("ignored"), e.next(5), e.next(7), e.next()];

function* guarded() {
  try { yield 1; yield 2; } catch (err) { yield "caught " + err; } finally { yield "finally"; }
}
const g1 = guarded();
r.throwIn = [g1.next().value, g1.throw("oops").value, g1.next().value, g1.next().done];

const g2 = guarded();
g2.next();
r.returnEarly = [g2.return("R"), g2.next(), g2.next()];

function* inner() { yield "a"; yield "b"; return "inner-done"; }
function* outer() { const res = yield* inner(); yield res; yield* [1, 2]; yield* "xy"; }
r.delegation = [...outer()];

// throw delegated into inner generator
function* innerCatch() { try { yield 1; } catch (e) { yield "inner caught " + e; } }
function* outerD() { yield* innerCatch(); yield "outer continues"; }
const d = outerD();
r.delegatedThrow = [d.next().value, d.throw("X").value, d.next().value];

// uncaught throw closes the generator
const g3 = (function* () { yield 1; yield 2; })();
g3.next();
try { g3.throw(new Error("kill")); } catch (err) { r.uncaught = err.message; }
r.afterUncaught = g3.next();

r.spreadTake = [...(function* () { for (let i = 0; i < 5; i++) yield i * i; })()];
r.isIterator = typeof fib()[Symbol.iterator] === "function" && fib()[Symbol.iterator]().next().value === 0;
r.tag = Object.prototype.toString.call(fib());

export default r;
