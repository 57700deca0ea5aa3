// Symbol.iterator protocol, iterator return() on break, well-known symbols (toPrimitive, hasInstance, species...)
const r = {};
class Range {
  constructor(from, to, step = 1) { Object.assign(this, { from, to, step }); }
  *[Symbol.iterator]() { for (let v = this.from; v < this.to; v += this.step) yield v; }
}
r.classIterable = [...new Range(0, 10, 3)];

const log = [];
const manual = {
  [Symbol.iterator]() {
    let i = 0;
    return {
      next() { log.push("next" + i); return i < 5 ? { value: i++, done: false } : { value: undefined, done: true }; },
      return(v) { log.push("return"); return { value: v, done: true }; },
      [Symbol.iterator]() { return this; },
    };
  },
};
for (const v of manual) if (v === 1) break;
r.returnOnBreak = log.splice(0);
const [d1] = manual;
r.returnOnDestructure = [d1, log.splice(0)];
r.noReturnWhenExhausted = [[...manual].length, log.includes("return")];

// iterators on built-ins
const it = [1, 2][Symbol.iterator]();
r.arrayIterator = [it.next(), it.next(), it.next()];
r.stringIteratorCodePoints = [..."a😀"].length;

// Symbol.toPrimitive
const money = { [Symbol.toPrimitive](hint) { return hint === "number" ? 42 : hint === "string" ? "$42" : "default"; } };
r.toPrimitive = [+money, `${money}`, money + "", money * 2];

// Symbol.hasInstance
class Even { static [Symbol.hasInstance](n) { return n % 2 === 0; } }
r.hasInstance = [2 instanceof Even, 3 instanceof Even];

// Symbol.species
class MyArray extends Array { static get [Symbol.species]() { return Array; } }
const ma = MyArray.of(1, 2, 3);
r.species = [ma instanceof MyArray, ma.map((x) => x) instanceof MyArray];

// Symbol.isConcatSpreadable and Symbol.toStringTag
const spreadable = { length: 2, 0: "x", 1: "y", [Symbol.isConcatSpreadable]: true };
r.concatSpreadable = [].concat(spreadable, ["z"]);
r.toStringTag = String(new (class Thing { get [Symbol.toStringTag]() { return "Thing!"; } })());

// Symbol registry
r.symbolFor = [Symbol.for("app") === Symbol.for("app"), Symbol("app") === Symbol("app"), Symbol.keyFor(Symbol.for("app")), Symbol.keyFor(Symbol("x"))];

// entries()/keys()/values() iterators on objects via Object.entries
const obj = { a: 1, b: 2 };
r.objectIteration = Object.entries(obj).map(([k, v]) => k + v);
try { for (const x of obj) {} } catch (e) { r.plainObjectNotIterable = e.name; }

export default r;
