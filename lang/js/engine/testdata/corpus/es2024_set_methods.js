// ES2025 (newer than ES2023): Set.prototype union/intersection/difference/symmetricDifference/isSubsetOf/isSupersetOf/isDisjointFrom
const a = new Set([1, 2, 3, 4]);
const b = new Set([3, 4, 5]);
export default {
  union: [...a.union(b)],
  intersection: [...a.intersection(b)],
  difference: [...a.difference(b)],
  symmetricDifference: [...a.symmetricDifference(b)],
  subset: [new Set([1, 2]).isSubsetOf(a), b.isSubsetOf(a)],
  superset: [a.isSupersetOf(new Set([1])), a.isSupersetOf(b)],
  disjoint: [a.isDisjointFrom(new Set([9])), a.isDisjointFrom(b)],
  setLikeMap: [...a.intersection(new Map([[2, "x"], [7, "y"]]))],
  unchanged: [...a],
};
