// TypeScript generics: functions, constraints, classes, default type params, keyof, mapped/conditional types (erased)
function identity<T>(x: T): T { return x; }
function first<T>(xs: readonly T[]): T | undefined { return xs[0]; }
function pluck<T, K extends keyof T>(items: T[], key: K): T[K][] { return items.map((i) => i[key]); }
function merge<A extends object, B extends object>(a: A, b: B): A & B { return { ...a, ...b }; }

class Stack<T = number> {
  private items: T[] = [];
  push(...xs: T[]): this { this.items.push(...xs); return this; }
  pop(): T | undefined { return this.items.pop(); }
  peek(): T | undefined { return this.items.at(-1); }
  get size(): number { return this.items.length; }
  map<U>(f: (x: T) => U): Stack<U> { const s = new Stack<U>(); s.push(...this.items.map(f)); return s; }
  toArray(): T[] { return [...this.items]; }
}

type Result<T, E = string> = { ok: true; value: T } | { ok: false; error: E };
function safeDivide(a: number, b: number): Result<number> {
  return b === 0 ? { ok: false, error: "division by zero" } : { ok: true, value: a / b };
}
function unwrapOr<T>(r: Result<T>, fallback: T): T { return r.ok ? r.value : fallback; }

type Readonlyish<T> = { readonly [K in keyof T]: T[K] };
type ElementOf<T> = T extends (infer U)[] ? U : never;
const frozen: Readonlyish<{ a: number }> = { a: 1 };
const elem: ElementOf<string[]> = "element";

interface Person { name: string; age: number }
const people: Person[] = [{ name: "Ann", age: 31 }, { name: "Bob", age: 25 }];

function groupBy<T, K extends PropertyKey>(xs: T[], f: (x: T) => K): Record<K, T[]> {
  return xs.reduce((acc, x) => { (acc[f(x)] ||= []).push(x); return acc; }, {} as Record<K, T[]>);
}

async function retry<T>(fn: () => Promise<T>, times: number): Promise<T> {
  let lastErr: unknown;
  for (let i = 0; i < times; i++) { try { return await fn(); } catch (e) { lastErr = e; } }
  throw lastErr;
}
let attempts = 0;
const retried = await retry<string>(async () => { if (++attempts < 3) throw new Error("flaky"); return `ok after ${attempts}`; }, 5);

const s = new Stack<string>().push("a", "b", "c");
export default {
  identity: [identity<number>(5), identity("s")],
  first: [first([9, 8]), first<string>([]) ?? "empty"],
  pluck: pluck(people, "name"),
  merge: merge({ a: 1 }, { b: "two" }),
  stack: { peek: s.peek(), size: s.size, mapped: s.map((x) => x.charCodeAt(0)).toArray(), pop: s.pop(), after: s.toArray() },
  defaultParam: new Stack().push(1, 2).size,
  results: [unwrapOr(safeDivide(10, 4), -1), unwrapOr(safeDivide(1, 0), -1), safeDivide(1, 0)],
  erasedTypes: [frozen.a, elem],
  groupBy: groupBy(people, (p) => (p.age > 30 ? "older" : "younger")),
  retried,
};
