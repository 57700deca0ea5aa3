// WeakMap, WeakSet, WeakRef, FinalizationRegistry basics (no GC-dependent results)
const r = {};
const wm = new WeakMap();
const k1 = {}, k2 = function () {};
wm.set(k1, "one").set(k2, "two");
r.weakMap = [wm.get(k1), wm.get(k2), wm.has(k1), wm.has({}), wm.delete(k1), wm.has(k1)];
try { wm.set("str", 1); } catch (e) { r.primitiveKey = e.name; }
r.weakMapNoSize = [wm.size, typeof wm.keys];

// private data pattern with WeakMap
const priv = new WeakMap();
class Person {
  constructor(name) { priv.set(this, { name }); }
  get name() { return priv.get(this).name; }
}
r.privateData = new Person("Grace").name;

// memoize by object identity
const cache = new WeakMap();
let computed = 0;
const area = (o) => { if (!cache.has(o)) { computed++; cache.set(o, o.w * o.h); } return cache.get(o); };
const rect = { w: 3, h: 4 };
r.memo = [area(rect), area(rect), area({ w: 1, h: 1 }), computed];

const ws = new WeakSet();
const obj = {};
ws.add(obj);
r.weakSet = [ws.has(obj), ws.has({}), ws.delete(obj), ws.has(obj)];
try { ws.add(1); } catch (e) { r.weakSetPrimitive = e.name; }

const target = { v: 42 };
const ref = new WeakRef(target);
r.weakRef = [ref.deref() === target, ref.deref().v, Object.prototype.toString.call(ref)];
try { new WeakRef(1); } catch (e) { r.weakRefPrimitive = e.name; }

const fr = new FinalizationRegistry(() => {});
const token = {};
fr.register({}, "held", token);
r.finalization = [typeof fr.register, fr.unregister(token), fr.unregister(token)];

export default r;
