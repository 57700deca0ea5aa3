// Object: entries/fromEntries, hasOwn, assign, freeze/seal, defineProperty, property order, descriptors
const r = {};
const src = { b: 2, a: 1, 10: "ten", 2: "two", [Symbol("s")]: "sym" };
r.keyOrder = Object.keys(src); // integer keys ascending first, then insertion order
r.entries = Object.entries({ x: 1, y: [2] });
r.values = Object.values({ p: "q", r: "s" });
r.fromEntries = Object.fromEntries([["a", 1], ["b", 2]]);
r.fromEntriesMap = Object.fromEntries(new Map([["m", true]]));
r.transform = Object.fromEntries(Object.entries({ a: 1, b: 2, c: 3 }).filter(([, v]) => v % 2).map(([k, v]) => [k.toUpperCase(), v * 10]));

const child = Object.create({ inherited: 1 });
child.own = 2;
r.hasOwn = [Object.hasOwn(child, "own"), Object.hasOwn(child, "inherited"), "inherited" in child];
const noProto = Object.create(null);
noProto.k = 1;
r.nullProto = [Object.hasOwn(noProto, "k"), typeof noProto.hasOwnProperty, Object.getPrototypeOf(noProto)];

r.assign = Object.assign({ a: 1 }, null, { b: 2 }, { a: 3 });
const frozen = Object.freeze({ x: 1, inner: { y: 2 } });
try { frozen.x = 100; } catch (e) { r.frozenWriteStrict = e.name; } // modules are strict
frozen.inner.y = 3; // freeze is shallow
r.frozen = [Object.isFrozen(frozen), frozen.x, frozen.inner.y, Object.isFrozen(frozen.inner)];
const sealed = Object.seal({ s: 1 });
sealed.s = 2;
try { sealed.t = 1; } catch (e) { r.sealedAdd = e.name; }
try { delete sealed.s; } catch (e) { r.sealedDelete = e.name; }
r.sealed = [Object.isSealed(sealed), sealed.s];
const ne = Object.preventExtensions({ p: 1 });
r.extensible = [Object.isExtensible(ne), Object.isExtensible({})];

const o = {};
Object.defineProperty(o, "ro", { value: 1, enumerable: true });
Object.defineProperty(o, "hidden", { value: 2 });
Object.defineProperties(o, { comp: { get() { return this.ro + this.hidden; }, enumerable: true } });
r.defineProperty = { keys: Object.keys(o), names: Object.getOwnPropertyNames(o), comp: o.comp, json: JSON.stringify(o) };
r.descriptor = Object.getOwnPropertyDescriptor(o, "ro");
r.accessorDescriptor = Object.keys(Object.getOwnPropertyDescriptor(o, "comp"));
try { o.ro = 5; } catch (e) { r.readOnlyWrite = e.name; }
try { Object.defineProperty(o, "ro", { value: 9 }); } catch (e) { r.redefineNonConfigurable = e.name; }

const sym = Symbol("tag");
const withSym = { [sym]: 1, plain: 2 };
r.symbols = [Object.getOwnPropertySymbols(withSym).length, Reflect.ownKeys(withSym).length, Object.keys(withSym)];
r.is = [Object.is(NaN, NaN), Object.is(0, -0), NaN === NaN, 0 === -0];
r.getPrototypeOf = [Object.getPrototypeOf([]) === Array.prototype, Object.getPrototypeOf(Object.prototype)];
const proto = { greet() { return "hi " + this.n; } };
const inst = Object.setPrototypeOf({ n: "x" }, proto);
r.setPrototypeOf = inst.greet();
r.toStringTags = [{}, [], null, undefined, 1, "s", true, () => 1, /x/, new Date(0), new Error("e"), Symbol(), 1n].map((v) => Object.prototype.toString.call(v));
r.customTag = String({ [Symbol.toStringTag]: "Custom" });
r.entriesOfString = Object.entries("ab");

export default r;
