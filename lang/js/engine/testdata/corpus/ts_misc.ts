// TypeScript misc: optional/default params, function overloads, tuples, readonly arrays, unknown narrowing, generics with async, accessors, definite assignment
function greet(name: string, greeting?: string, punct: string = "!"): string {
  return `${greeting ?? "Hello"}, ${name}${punct}`;
}

function format(x: number): string;
function format(x: string): string;
function format(x: Date): string;
function format(x: number | string | Date): string {
  if (typeof x === "number") return x.toFixed(1);
  if (typeof x === "string") return JSON.stringify(x);
  return x.toISOString().slice(0, 10);
}

type Pair<A, B> = [first: A, second: B];
const swap = <A, B>([a, b]: Pair<A, B>): Pair<B, A> => [b, a];
const optionalTuple: [number, string?] = [1];
const rest: [string, ...number[]] = ["sum", 1, 2, 3];

function sumAll(...ns: readonly number[]): number { return ns.reduce((a, b) => a + b, 0); }

function narrow(x: unknown): string {
  if (typeof x === "number") return `number ${x + 1}`;
  if (Array.isArray(x)) return `array of ${x.length}`;
  if (x instanceof Error) return `error ${x.message}`;
  if (x && typeof x === "object" && "id" in x) return `object with id ${(x as { id: unknown }).id}`;
  return `other ${String(x)}`;
}

class Temperature {
  private _celsius!: number;
  constructor(c: number) { this.celsius = c; }
  get celsius(): number { return this._celsius; }
  set celsius(v: number) { if (v < -273.15) throw new RangeError("below absolute zero"); this._celsius = v; }
  get fahrenheit(): number { return this._celsius * 9 / 5 + 32; }
}
const t = new Temperature(100);
let rangeError = "";
try { t.celsius = -300; } catch (e: unknown) { rangeError = e instanceof RangeError ? e.message : "?"; }

async function fetchAll<T extends { id: number }>(ids: number[], load: (id: number) => Promise<T>): Promise<Map<number, T>> {
  const entries = await Promise.all(ids.map(async (id) => [id, await load(id)] as const));
  return new Map(entries);
}
const loaded = await fetchAll([3, 1], async (id) => ({ id, label: `item${id}` }));

const key = "dynamic" as const;
const obj: { [key]: number; readonly fixed: string } = { [key]: 1, fixed: "f" };
let maybe: string | undefined = undefined;
const len: number = (maybe as string | undefined)?.length ?? -1;

export default {
  greet: [greet("Ann"), greet("Bob", "Hi"), greet("Cy", undefined, "?")],
  overloads: [format(3.14159), format("s"), format(new Date(Date.UTC(2020, 1, 3)))],
  tuples: [swap<number, string>([1, "one"]), optionalTuple.length, rest.slice(1)],
  sumAll: sumAll(1, 2, 3),
  narrow: [narrow(1), narrow([1, 2]), narrow(new Error("e")), narrow({ id: 7 }), narrow(null)],
  temperature: [t.celsius, t.fahrenheit, rangeError],
  loaded: [...loaded.entries()],
  obj,
  len,
};
