// ES2023 change-array-by-copy: toSorted, toReversed, toSpliced, with (originals untouched); also on TypedArrays
const r = {};
const orig = [3, 1, 2];
r.toSorted = orig.toSorted();
r.toSortedCmp = orig.toSorted((a, b) => b - a);
r.toReversed = orig.toReversed();
r.toSpliced = [orig.toSpliced(1, 1), orig.toSpliced(0, 0, "x", "y"), orig.toSpliced(-1, 1, "z"), orig.toSpliced(1)];
r.with = [orig.with(0, 9), orig.with(-1, 8)];
r.original = orig;
try { orig.with(5, 0); } catch (e) { r.withOutOfRange = e.name; }
r.sparseBecomesUndefined = [1, , 3].toReversed().map((v) => v === undefined);
r.stringsDefaultSort = ["b", "B", "a", "10", "9"].toSorted();

const ta = new Int16Array([5, -2, 9]);
r.typedToSorted = Array.from(ta.toSorted());
r.typedToReversed = Array.from(ta.toReversed());
r.typedWith = Array.from(ta.with(1, 100));
r.typedOriginal = Array.from(ta);
r.typedSameType = ta.toSorted() instanceof Int16Array;

// works generically on array-likes
const arrayLike = { length: 3, 0: "c", 1: "a", 2: "b" };
r.arrayLikeToSorted = Array.prototype.toSorted.call(arrayLike);
r.returnsArray = Array.isArray(Array.prototype.toReversed.call(arrayLike));

// subclass: copy methods return plain Array
class MyArr extends Array {}
const mine = MyArr.from([2, 1]);
r.subclass = [mine.toSorted() instanceof MyArr, mine.toSorted().constructor === Array, mine.map((x) => x) instanceof MyArr];

r.findLast = [1, 2, 3, 4].findLast((x) => x % 2 === 1);
r.findLastIndex = [1, 2, 3, 4].findLastIndex((x) => x > 10);
r.typedFindLast = new Uint8Array([1, 200, 3]).findLast((x) => x > 100);

export default r;
