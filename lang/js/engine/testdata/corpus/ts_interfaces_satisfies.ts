// TypeScript interfaces, type aliases, satisfies, as const, discriminated unions, type guards, index signatures
interface Shape { kind: string; area(): number }
interface Circle extends Shape { kind: "circle"; r: number }
interface Square extends Shape { kind: "square"; side: number }
type AnyShape = Circle | Square;

const circle: Circle = { kind: "circle", r: 2, area() { return Math.round(Math.PI * this.r ** 2 * 100) / 100; } };
const square = { kind: "square", side: 3, area() { return this.side ** 2; } } satisfies Square;

function describe(s: AnyShape): string {
  switch (s.kind) {
    case "circle": return `circle r=${s.r}`;
    case "square": return `square side=${s.side}`;
  }
}

type Routes = Record<string, { path: string; auth?: boolean }>;
const routes = {
  home: { path: "/" },
  admin: { path: "/admin", auth: true },
} satisfies Routes;

const DIRECTIONS = ["n", "e", "s", "w"] as const;
type Dir = (typeof DIRECTIONS)[number];
const turnRight = (d: Dir): Dir => DIRECTIONS[(DIRECTIONS.indexOf(d) + 1) % 4];

interface Dictionary { [key: string]: number | undefined }
const counts: Dictionary = {};
for (const w of "a b a c a b".split(" ")) counts[w] = (counts[w] ?? 0) + 1;

function isString(x: unknown): x is string { return typeof x === "string"; }
function assertPositive(n: number): asserts n is number { if (n <= 0) throw new RangeError(`not positive: ${n}`); }
const mixed: unknown[] = [1, "two", null, "four", { five: 5 }];
let assertion = "ok";
try { assertPositive(-1); } catch (e) { assertion = (e as Error).message; }

interface Callable { (x: number): number; label: string }
const double = Object.assign((x: number) => x * 2, { label: "double" }) as Callable;

type Optional<T> = { [K in keyof T]?: T[K] };
const partial: Optional<{ a: number; b: string }> = { b: "only b" };

const value = <number>(<unknown>"7".length);
const nonNull = (document0() as string | null)!;
function document0(): string | null { return "not null"; }

declare const neverEmitted: number;
declare function alsoErased(): void;

export default {
  areas: [circle.area(), square.area()],
  describe: [describe(circle), describe(square)],
  routes: [routes.admin.auth, routes.home.path, Object.keys(routes)],
  asConst: [turnRight("n"), turnRight("w"), DIRECTIONS.length],
  counts,
  typeGuard: mixed.filter(isString),
  assertion,
  callable: [double(21), double.label],
  partial,
  angleBracketCast: value,
  nonNull,
};
