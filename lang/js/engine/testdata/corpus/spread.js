// spread and rest: arrays, objects, calls, iterables, getters, shallow copies
const r = {};
const a = [1, 2], b = [3, 4];
r.concat = [...a, 0, ...b];
r.call = Math.max(...a, ...b, -1);
r.stringSpread = [..."héllo👋"];
r.setDedup = [...new Set([3, 1, 3, 2, 1])];
r.mapEntries = [...new Map([["k", 1]])];
r.mapKeys = [...new Map([["k1", 1], ["k2", 2]]).keys()];
r.holes = [...[1, , 3]].map((v) => v === undefined);

const base = { x: 1, y: 2, nested: { z: 3 } };
const copy = { ...base, y: 20, w: 4 };
copy.nested.z = 30;
r.objectMerge = copy;
r.shallowShared = base.nested.z;
r.overrideOrder = { ...{ a: 1, b: 2 }, ...{ b: 3, c: 4 }, a: 5 };
r.spreadPrimitives = { ...null, ...undefined, ...[9, 8], ...42, ...true };

// object spread invokes getters, copies own enumerable only
const src = Object.create({ inherited: true });
Object.defineProperty(src, "hidden", { value: 1, enumerable: false });
src.shown = 2;
let getterCalls = 0;
Object.defineProperty(src, "g", { get() { getterCalls++; return "got"; }, enumerable: true });
const spreadSrc = { ...src };
r.ownEnumerable = Object.keys(spreadSrc);
r.getterCalledOnce = getterCalls;
r.getterBecameData = Object.getOwnPropertyDescriptor(spreadSrc, "g").value;

const sym = Symbol("s");
r.symbolsCopied = { ...{ [sym]: 1 } }[sym];

function sum(...nums) { return nums.reduce((t, n) => t + n, 0); }
r.rest = [sum(), sum(1), sum(...[1, 2, 3], 4)];
function argLen(x, ...rest) { return [arguments.length, rest.length, sum.length, argLen.length]; }
r.lengths = argLen(1, 2, 3);
r.newWithSpread = new Date(...[Date.UTC(2020, 0, 2)]).toISOString();
r.arrayFromArrayLike = [...Array.from({ length: 3 }, (_, i) => i * 2)];
try { [...{ a: 1 }]; } catch (e) { r.nonIterable = e.name; }

export default r;
