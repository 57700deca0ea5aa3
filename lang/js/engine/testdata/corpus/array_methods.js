// Array: at, flat, flatMap, find/findLast(Index), includes, Array.from/of, copyWithin, fill, reduce, sort stability
const r = {};
const a = [10, 20, 30, 40];
r.at = [a.at(0), a.at(-1), a.at(-5), a.at(1.7)];
r.flat = [[1, [2, [3, [4]]]].flat(), [1, [2, [3, [4]]]].flat(2), [1, [2, [3, [4]]]].flat(Infinity), [1, , 3].flat()];
r.flatMap = ["a b", "c"].flatMap((s) => s.split(" "));
r.flatMapOneLevel = [1, 2].flatMap((x) => [[x, x * 2]]);
r.find = [a.find((x) => x > 15), a.findIndex((x) => x > 15), a.findLast((x) => x < 35), a.findLastIndex((x) => x < 35), a.findLast((x) => x > 100), a.findLastIndex((x) => x > 100)];
r.includes = [[NaN].includes(NaN), [NaN].indexOf(NaN), [1, 2, 3].includes(2, 2)];
r.fromIterable = [Array.from(new Set("banana")), Array.from(new Map([[1, "a"]])), Array.from({ length: 3 }, (_, i) => i ** 2), Array.from("👍🏽")];
r.fromGenerator = Array.from((function* () { yield 1; yield 2; })(), (x) => x * 10);
r.of = [Array.of(7), Array(3).length, Array.of(1, 2, 3)];
r.copyWithin = [[1, 2, 3, 4, 5].copyWithin(0, 3), [1, 2, 3, 4, 5].copyWithin(1, 0, 2), [1, 2, 3, 4, 5].copyWithin(-2, 0)];
r.fill = [new Array(4).fill(0), [1, 2, 3, 4].fill(9, 1, -1)];
r.reduce = [[1, 2, 3, 4].reduce((s, x) => s + x), [["a", 1], ["b", 2]].reduceRight((acc, [k]) => acc + k, "")];
try { [].reduce((s, x) => s + x); } catch (e) { r.reduceEmpty = e.name; }

const people = [{ n: "a", age: 30 }, { n: "b", age: 25 }, { n: "c", age: 30 }, { n: "d", age: 25 }];
r.stableSort = [...people].sort((x, y) => x.age - y.age).map((p) => p.n).join("");
r.defaultSortIsString = [10, 9, 1, 100].sort();
r.numericSort = [10, 9, 1, 100].sort((x, y) => x - y);
r.undefinedLast = [3, undefined, 1].sort();
r.someEvery = [[1, 2].some((x) => x > 1), [1, 2].every((x) => x > 1), [].every(() => false)];
r.splice = (() => { const x = [1, 2, 3, 4, 5]; const removed = x.splice(1, 2, "a", "b", "c"); return { x, removed }; })();
r.slice = [[1, 2, 3, 4].slice(-2), [1, 2, 3].slice(1, -1)];
r.join = [[1, null, undefined, 2].join("-"), [[1, 2], [3]].join(";"), String([1, [2, 3]])];
r.keysOfSparse = [...[, "x"].keys()];
r.entries = [...["a", "b"].entries()];
r.lastIndexOf = [1, 2, 1, 2].lastIndexOf(2);
r.isArray = [Array.isArray([]), Array.isArray(new Uint8Array(1)), Array.isArray({ length: 0 })];
r.lengthTruncate = (() => { const x = [1, 2, 3, 4]; x.length = 2; return x; })();
r.arrayLikeCall = Array.prototype.map.call({ length: 2, 0: "x", 1: "y" }, (s) => s.toUpperCase());

export default r;
