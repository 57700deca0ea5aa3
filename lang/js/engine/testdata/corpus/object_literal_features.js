// object literals: getters/setters, shorthand, computed keys, methods, super in object methods, __proto__
const r = {};
const temp = {
  _c: 25,
  get f() { return this._c * 9 / 5 + 32; },
  set f(v) { this._c = ((v - 32) * 5) / 9; },
  get c() { return this._c; },
};
r.getter = temp.f;
temp.f = 212;
r.setter = temp.c;
r.descriptors = Object.entries(Object.getOwnPropertyDescriptors(temp)).map(([k, d]) => `${k}:${"get" in d ? "accessor" : "data"}`);

const name = "n", value = 5;
const i = 2;
const obj = {
  name, value,
  [`key${i}`]: "computed",
  [i * 2]: "numeric",
  method() { return this.name; },
  "quoted key": 1,
  async am() { return 1; },
  *gen() { yield 1; },
};
r.shorthand = [obj.name, obj.value, obj.key2, obj[4], obj.method(), obj["quoted key"]];
r.methodTypes = [obj.am.constructor.name, obj.gen.constructor.name, typeof obj.method.prototype];

// super in object literal methods
const base = { hello() { return "base hello"; } };
const derived = { __proto__: base, hello() { return "derived+" + super.hello(); } };
r.superInLiteral = derived.hello();
r.protoLiteral = [Object.getPrototypeOf(derived) === base, Object.hasOwn(derived, "__proto__")];
r.computedProto = Object.keys({ ["__proto__"]: 1 });

// getter-only property cannot be assigned in strict mode
const ro = { get x() { return 1; } };
try { ro.x = 2; } catch (e) { r.getterOnly = e.name; }

// lazy getter that replaces itself
let computations = 0;
const lazy = {
  get expensive() { computations++; Object.defineProperty(this, "expensive", { value: "cached" }); return "computed"; },
};
r.lazy = [lazy.expensive, lazy.expensive, lazy.expensive, computations];

// later duplicate keys win; accessor then data
const dup = { a: 1, get a() { return 2; } };
r.duplicate = [dup.a, { x: 1, x: 2 }.x];

// method names
const symKey = Symbol("s");
const so = { [symKey]() {}, arrow: () => {} };
r.names = [obj.method.name, Object.getOwnPropertyDescriptor(temp, "f").get.name, so[symKey].name, so.arrow.name];
r.arrowThis = (() => { const o = { v: 1, reg() { return [1].map(() => this.v); } }; return o.reg(); })();

export default r;
