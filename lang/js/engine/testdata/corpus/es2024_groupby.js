// ES2024 (newer than ES2023): Object.groupBy and Map.groupBy
const inventory = [
  { name: "asparagus", type: "vegetables", quantity: 5 },
  { name: "bananas", type: "fruit", quantity: 0 },
  { name: "goat", type: "meat", quantity: 23 },
  { name: "cherries", type: "fruit", quantity: 5 },
];
const r = {};
const byType = Object.groupBy(inventory, ({ type }) => type);
r.objectGroupBy = Object.fromEntries(Object.entries(byType).map(([k, v]) => [k, v.map((i) => i.name)]));
r.nullPrototype = Object.getPrototypeOf(byType) === null;
r.withIndex = Object.groupBy([10, 11, 12, 13], (x, i) => (i % 2 ? "odd" : "even"));
r.fromIterable = Object.groupBy("mississippi", (c) => c);

const restock = { restock: true }, sufficient = { restock: false };
const m = Map.groupBy(inventory, ({ quantity }) => (quantity < 6 ? restock : sufficient));
r.mapGroupBy = [m.get(restock).map((i) => i.name), m.get(sufficient).map((i) => i.name), m.size];
r.mapKeysAreObjects = [...m.keys()].every((k) => typeof k === "object");
r.empty = Object.keys(Object.groupBy([], () => "x")).length;

export default r;
