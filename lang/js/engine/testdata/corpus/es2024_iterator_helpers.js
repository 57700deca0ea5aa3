// ES2025 (newer than ES2023): Iterator helpers (map/filter/take/drop/flatMap/reduce/toArray/some/every/find) and Iterator.from
function* naturals() { let n = 1; for (;;) yield n++; }
const r = {};
r.chain = naturals().filter((n) => n % 2).map((n) => n * n).take(4).toArray();
r.drop = naturals().drop(5).take(2).toArray();
r.flatMap = [1, 2].values().flatMap((x) => [x, x * 10]).toArray();
r.reduce = naturals().take(5).reduce((a, b) => a + b, 0);
r.predicates = [naturals().take(3).some((x) => x === 2), naturals().take(3).every((x) => x < 3), naturals().find((x) => x > 41)];
r.forEach = (() => { const out = []; new Set(["a", "b"]).values().forEach((v) => out.push(v)); return out; })();
r.iteratorFrom = Iterator.from({ next() { return { done: this.i > 2, value: this.i++ }; }, i: 0 }).toArray();
r.lazy = (() => { const seen = []; const it = naturals().map((x) => (seen.push(x), x)); it.next(); it.next(); return seen; })();
export default r;
