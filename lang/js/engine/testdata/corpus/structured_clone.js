// structuredClone: deep copy of Map/Set/Date/RegExp/typed arrays, cycles, errors for functions
const r = {};
const date = new Date(Date.UTC(2022, 4, 6));
const original = {
  num: 1, str: "s", nested: { arr: [1, { deep: true }] },
  map: new Map([["k", { v: 1 }]]), set: new Set([1, 2]),
  date, re: /ab+c/gi, bytes: new Uint8Array([1, 2, 3]), big: 10n, undef: undefined, nan: NaN,
};
original.self = original;
original.nested.back = original.nested;

const c = structuredClone(original);
r.notSame = [c !== original, c.nested !== original.nested, c.map !== original.map, c.date !== original.date];
r.cycles = [c.self === c, c.nested.back === c.nested];
r.map = [c.map instanceof Map, c.map.get("k").v, c.map.get("k") !== original.map.get("k")];
r.set = [c.set instanceof Set, [...c.set]];
r.date = [c.date instanceof Date, c.date.toISOString()];
r.regexp = [c.re instanceof RegExp, c.re.source, c.re.flags];
r.typed = [c.bytes instanceof Uint8Array, Array.from(c.bytes)];
r.primitives = [typeof c.big, String(c.big), "undef" in c, Number.isNaN(c.nan)];
original.nested.arr[1].deep = false;
r.independent = c.nested.arr[1].deep;

// shared references stay shared within the clone
const shared = { s: 1 };
const pair = structuredClone({ a: shared, b: shared });
r.sharedRefs = pair.a === pair.b;

// class instances lose their prototype; getters are evaluated; non-enumerable dropped
class Point { constructor() { this.x = 1; } get len() { return 5; } }
const p = structuredClone(new Point());
r.classInstance = [p instanceof Point, Object.getPrototypeOf(p) === Object.prototype, p.x, "len" in p];

// errors are cloneable
const err = structuredClone(new RangeError("out"));
r.error = [err instanceof RangeError, err.name, err.message];

try { structuredClone({ f() {} }); } catch (e) { r.functionThrows = e.name; }
try { structuredClone(Symbol("x")); } catch (e) { r.symbolThrows = e.name; }
r.primitive = [structuredClone("str"), structuredClone(null), structuredClone(3.5)];
r.arrayHoles = structuredClone([1, , 3]).length;

export default r;
