// labelled break/continue, closures (counters, loops with let vs var), switch fallthrough, comma, void
const r = {};

// labelled break out of nested loops
let found = null;
outer: for (let i = 0; i < 5; i++) {
  for (let j = 0; j < 5; j++) {
    if (i * j === 6) { found = [i, j]; break outer; }
  }
}
r.labelledBreak = found;

// labelled continue
const pairs = [];
rows: for (let i = 0; i < 3; i++) {
  for (let j = 0; j < 3; j++) {
    if (j > i) continue rows;
    pairs.push(`${i}${j}`);
  }
}
r.labelledContinue = pairs;

// labelled block (non-loop)
const blockLog = [];
check: { blockLog.push("start"); if (blockLog.length) break check; blockLog.push("unreached"); }
r.labelledBlock = blockLog;

// closures
function makeCounter(start = 0) {
  let n = start;
  return { inc: () => ++n, dec: () => --n, get value() { return n; } };
}
const c1 = makeCounter(), c2 = makeCounter(10);
c1.inc(); c1.inc(); c2.dec();
r.counters = [c1.value, c2.value];

const lets = [], vars = [];
for (let i = 0; i < 3; i++) lets.push(() => i);
for (var v = 0; v < 3; v++) vars.push(() => v);
r.letVsVar = [lets.map((f) => f()), vars.map((f) => f())];

const memo = ((fn) => { const cache = {}; let hits = 0; const m = (x) => (x in cache ? (hits++, cache[x]) : (cache[x] = fn(x))); m.hits = () => hits; return m; })((x) => x * x);
memo(3); memo(3); memo(4);
r.memoHits = memo.hits();

const compose = (...fns) => (x) => fns.reduceRight((acc, f) => f(acc), x);
r.compose = compose((x) => x + 1, (x) => x * 2)(5);
const curry = (f) => function curried(...a) { return a.length >= f.length ? f(...a) : (...b) => curried(...a, ...b); };
r.curry = curry((a, b, c) => a + b + c)(1)(2)(3);

// switch with fallthrough and default in the middle
function classify(x) {
  const out = [];
  switch (x) {
    case 1: out.push("one");
    case 2: out.push("one-or-two"); break;
    default: out.push("default");
    case 3: out.push("three");
  }
  return out;
}
r.switch = [classify(1), classify(2), classify(3), classify(9)];

// TDZ, hoisting, IIFE, comma and void
try { tdz; let tdz = 1; } catch (e) { r.tdz = e.name; }
r.hoisted = hoisted();
function hoisted() { return "function declarations are hoisted"; }
r.comma = (1, 2, 3);
r.void = void 0 === undefined;
r.doWhile = (() => { let i = 0; do { i++; } while (i < 0); return i; })();
r.forIn = (() => { const keys = []; for (const k in { a: 1, b: 2 }) keys.push(k); return keys; })();
r.typeofUndeclared = typeof notDeclaredAnywhere;

export default r;
