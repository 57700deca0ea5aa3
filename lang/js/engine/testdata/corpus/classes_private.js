// classes: private fields/methods/accessors, #x in obj, static private members
class Counter {
  #count = 0;
  static #instances = 0;
  static #registry = [];
  constructor(name) { this.name = name; Counter.#instances++; Counter.#registry.push(name); }
  #bump(n) { this.#count += n; return this; }
  inc() { return this.#bump(1); }
  add(n) { return this.#bump(n); }
  get #doubled() { return this.#count * 2; }
  get value() { return this.#count; }
  get doubled() { return this.#doubled; }
  static isCounter(o) { return #count in o; }
  static get instances() { return Counter.#instances; }
  static #secret() { return "static-private"; }
  static reveal() { return Counter.#secret() + ":" + Counter.#registry.join(","); }
  equals(other) { return #count in other && other.#count === this.#count; }
}

const a = new Counter("a").inc().inc().add(5);
const b = new Counter("b").add(7);
const r = {};
r.value = a.value;
r.doubled = a.doubled;
r.isCounter = [Counter.isCounter(a), Counter.isCounter({ count: 1 }), Counter.isCounter(Object.create(Counter.prototype))];
r.instances = Counter.instances;
r.reveal = Counter.reveal();
r.equals = [a.equals(b), a.equals(new Counter("c"))];
r.ownKeys = Object.keys(a);
r.hiddenFromJSON = JSON.stringify(a);

// accessing a private field on the wrong object is a TypeError
try { Counter.prototype.inc.call({}); } catch (e) { r.wrongReceiver = e.name; }

// private setter
class Temp {
  #c = 0;
  set #f(v) { this.#c = (v - 32) * 5 / 9; }
  setF(v) { this.#f = v; return this.#c; }
}
r.privateSetter = new Temp().setF(212);

// same private name in different classes is distinct
class A { #x = "A"; static read(o) { return o.#x; } }
class B { #x = "B"; }
try { A.read(new B()); } catch (e) { r.brandCheck = e instanceof TypeError; }

export default r;
