// destructuring: nested, defaults, rest, swapping, computed keys, params, iterables
const r = {};
const cfg = { server: { host: "localhost", ports: [80, 443] }, debug: undefined, retries: null };
const { server: { host, ports: [http, https = 8443, extra = "none"] }, debug = false, retries = 3, missing: { deep } = { deep: "dflt" } } = cfg;
r.nested = { host, http, https, extra, debug, retries, deep };

const [first, , third = "T", ...rest] = [1, 2, undefined, 4, 5];
r.arrays = { first, third, rest };

const { a, ...others } = { a: 1, b: 2, c: 3 };
r.objectRest = { a, others };

let x = 1, y = 2;
[x, y] = [y, x];
r.swap = [x, y];
const arr = [1, 2, 3];
[arr[0], arr[2]] = [arr[2], arr[0]];
r.swapInArray = arr;

const key = "dyn";
const { [key]: renamed, ["lit" + "eral"]: lit } = { dyn: "D", literal: "L" };
r.computed = [renamed, lit];

function params({ name, age = 30, tags: [firstTag] = [] } = {}, ...more) {
  return `${name}/${age}/${firstTag}/${more.length}`;
}
r.params = [params({ name: "n", tags: ["t1", "t2"] }, 1, 2), params(), params({ name: "m", age: 5 })];

// iterables: strings, Maps, Sets, generators
const [c1, c2] = "héllo";
r.string = [c1, c2];
const [[k1, v1], [k2]] = new Map([["one", 1], ["two", 2]]);
r.map = [k1, v1, k2];
const [s1, ...sRest] = new Set([3, 3, 4, 5]);
r.set = [s1, sRest];
function* gen() { yield 10; yield 20; yield 30; }
const [g1, g2] = gen();
r.generator = [g1, g2];

// defaults evaluated lazily and can refer to earlier bindings
let calls = 0;
const [p = ++calls, q = p * 10] = [7];
r.lazyDefaults = [p, q, calls];

// assignment to object properties via destructuring
const target = {};
({ a: target.alpha, b: target["beta"] = "B" } = { a: "A" });
r.assignTargets = target;

// loop destructuring
r.loop = [];
for (const [i, { v }] of [{ v: "a" }, { v: "b" }].entries()) r.loop.push(i + v);
for (const { id, ...restObj } of [{ id: 1, z: 0 }]) r.loop.push(restObj);

try { const { z } = null; } catch (e) { r.nullError = e.name; }
try { const [z] = {}; } catch (e) { r.notIterable = e.name; }

export default r;
