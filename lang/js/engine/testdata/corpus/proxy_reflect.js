// Proxy traps (get/set/has/deleteProperty/ownKeys/apply/construct), revocable proxies, Reflect API
const r = {};
const log = [];
const target = { a: 1, _secret: "s" };
const p = new Proxy(target, {
  get(t, k, recv) { log.push(`get ${String(k)}`); return k in t ? Reflect.get(t, k, recv) : `default:${String(k)}`; },
  set(t, k, v) { if (typeof v !== "number") throw new TypeError("numbers only"); log.push(`set ${k}`); return Reflect.set(t, k, v); },
  has(t, k) { return !k.startsWith("_") && k in t; },
  deleteProperty(t, k) { log.push(`delete ${k}`); return Reflect.deleteProperty(t, k); },
  ownKeys(t) { return Reflect.ownKeys(t).filter((k) => !k.startsWith("_")); },
});
r.get = [p.a, p.zzz];
p.b = 2;
try { p.c = "x"; } catch (e) { r.setValidation = e.message; }
r.has = ["a" in p, "_secret" in p];
r.ownKeys = Object.keys(p);
delete p.b;
r.targetAfter = target;
r.log = log;

// apply and construct traps
const fn = new Proxy(function (a, b) { return a + b; }, { apply: (t, thisArg, args) => t(...args) * 10 });
r.apply = [fn(1, 2), fn.call(null, 3, 4), Reflect.apply(fn, null, [5, 6])];
const Cls = new Proxy(class { constructor(x) { this.x = x; } }, { construct(t, args) { return { wrapped: new t(...args).x }; } });
r.construct = new Cls(7);

// validation / negative array indices
const negative = (arr) => new Proxy(arr, { get: (t, k, recv) => (typeof k === "string" && /^-\d+$/.test(k) ? t[t.length + Number(k)] : Reflect.get(t, k, recv)) });
const na = negative([1, 2, 3]);
r.negativeIndex = [na[-1], na[0], na.length, Array.isArray(na)];

// revocable
const { proxy, revoke } = Proxy.revocable({ v: 1 }, {});
r.beforeRevoke = proxy.v;
revoke();
try { proxy.v; } catch (e) { r.afterRevoke = e.name; }

// invariants are enforced
const frozen = Object.freeze({ k: 1 });
try { new Proxy(frozen, { get: () => 2 }).k; } catch (e) { r.invariant = e.name; }

// Reflect
const obj = {};
r.reflect = {
  define: Reflect.defineProperty(obj, "x", { value: 1 }),
  defineAgainFails: Reflect.defineProperty(obj, "x", { value: 2 }),
  has: Reflect.has({ y: 1 }, "y"),
  ownKeys: Reflect.ownKeys({ b: 1, [Symbol.iterator]: 0, 1: 2 }).map(String),
  construct: Reflect.construct(Date, [0]).toISOString(),
  newTarget: Reflect.construct(function () { return new.target === Array; }, [], Array) instanceof Array,
  getProto: Reflect.getPrototypeOf([]) === Array.prototype,
  preventExt: Reflect.preventExtensions(obj) && !Reflect.isExtensible(obj),
  getWithReceiver: Reflect.get({ get v() { return this.n; } }, "v", { n: "recv" }),
};

// observable object built with a proxy
function observable(o, changes) {
  return new Proxy(o, { set(t, k, v) { changes.push([k, t[k], v]); t[k] = v; return true; } });
}
const changes = [];
const state = observable({ count: 0 }, changes);
state.count++; state.count += 5; state.label = "x";
r.observable = changes;

export default r;
