// Map and Set: insertion order, key equality (SameValueZero), iteration, chaining
const r = {};
const m = new Map();
const objKey = { id: 1 };
m.set("a", 1).set(objKey, "obj").set(NaN, "nan").set(0, "zero");
r.size = m.size;
r.get = [m.get("a"), m.get(objKey), m.get({ id: 1 }), m.get(NaN), m.get(-0)];
r.has = [m.has("a"), m.has("b")];
m.set("a", 100);
r.updateKeepsOrder = [...m.keys()].map((k) => (typeof k === "object" ? "obj" : String(k)));
r.delete = [m.delete("a"), m.delete("a"), m.size];
const m2 = new Map(Object.entries({ x: 1, y: 2, z: 3 }));
r.forEach = [];
m2.forEach((v, k, map) => r.forEach.push(`${k}=${v}/${map === m2}`));
r.entries = [...m2.entries()];
r.fromMapToObject = Object.fromEntries(m2);
r.mapValuesDoubled = new Map([...m2].map(([k, v]) => [k, v * 2])).get("z");
m2.clear();
r.cleared = m2.size;

const s = new Set([1, 2, 2, "2", NaN, NaN, 0, -0]);
r.setSize = s.size;
r.setValues = [...s].map(String);
s.add(3).add(1);
r.setHas = [s.has(3), s.has("3"), s.has(NaN)];
const a = new Set([1, 2, 3, 4]), b = new Set([3, 4, 5]);
r.manualUnion = [...new Set([...a, ...b])];
r.manualIntersection = [...a].filter((x) => b.has(x));
r.manualDifference = [...a].filter((x) => !b.has(x));
r.setEntries = [...new Set(["q"]).entries()];

// mutation during iteration: added items are visited, deleted are not
const it = new Set([1, 2, 3]);
const seen = [];
for (const v of it) { seen.push(v); if (v === 1) { it.delete(2); it.add(4); } }
r.mutateDuringIteration = seen;

r.tags = [Object.prototype.toString.call(new Map()), String(new Set()), new Map()[Symbol.toStringTag]];
r.jsonOfMap = JSON.stringify(new Map([["a", 1]]));
r.iteratorTag = Object.prototype.toString.call(new Map().entries());

export default r;
