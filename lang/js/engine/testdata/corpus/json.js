// JSON: parse with reviver, stringify with replacer (fn and array), indentation, toJSON, edge values
const r = {};
const text = '{"name":"x","created":"2021-05-06T07:08:09.000Z","n":[1,2,{"deep":3}],"skip":"me"}';
r.reviver = JSON.parse(text, function (k, v) {
  if (k === "skip") return undefined;
  if (k === "created") return new Date(v).getUTCFullYear();
  if (typeof v === "number") return v * 100;
  return v;
});
const order = [];
JSON.parse('{"a":{"b":1},"c":[2]}', (k, v) => (order.push(k === "" ? "<root>" : k), v));
r.reviverOrder = order;

const obj = { b: 2, a: 1, nested: { c: [1, { d: "e" }] }, u: undefined, f() {}, s: Symbol("x") };
r.compact = JSON.stringify(obj);
r.indent2 = JSON.stringify({ a: [1, 2], b: {} }, null, 2);
r.indentTab = JSON.stringify({ a: 1 }, null, "\t");
r.indentClamp = JSON.stringify([1], null, 20).split("\n")[1].length;
r.replacerArray = JSON.stringify(obj, ["a", "nested", "c"]);
r.replacerFn = JSON.stringify({ a: 1, b: "two", c: [3] }, (k, v) => (typeof v === "number" ? v + 1 : v));
r.emptyArrayAndObj = JSON.stringify({ a: [], b: {} }, null, 2);

class Money {
  constructor(cents) { this.cents = cents; }
  toJSON(key) { return `${key}:$${(this.cents / 100).toFixed(2)}`; }
}
r.toJSON = JSON.stringify({ price: new Money(1999), list: [new Money(5)] });
r.dateToJSON = JSON.stringify({ d: new Date(Date.UTC(2000, 0, 1)) });

r.edgeValues = JSON.stringify([NaN, Infinity, -0, null, undefined, () => 1, new Boolean(false), new String("s")]);
r.topLevel = [JSON.stringify(undefined), JSON.stringify(null), JSON.stringify("q\"\n\u2028"), JSON.stringify("\ud800")];
r.unicode = JSON.parse('"\\u00e9\\ud83d\\ude00"');
r.numbers = JSON.parse("[1e3, -0.5, 1E-2, 0]");

const errs = [];
for (const bad of ["{a:1}", "[1,]", "'x'", "", "01", '{"a":1}x']) {
  try { JSON.parse(bad); errs.push("ok"); } catch (e) { errs.push(e.name); }
}
r.parseErrors = errs;

const cyclic = { name: "c" };
cyclic.self = cyclic;
try { JSON.stringify(cyclic); } catch (e) { r.cyclic = e.name; }
r.roundTrip = JSON.parse(JSON.stringify({ a: [1, "2", true, null, { b: 1.5 }] }));
r.duplicateKeys = JSON.parse('{"a":1,"a":2}');
r.protoKey = Object.keys(JSON.parse('{"__proto__":1}'));

export default r;
