// TypeScript classes: parameter properties, access modifiers, readonly, abstract classes, implements, optional params, overloads
interface Describable { describe(): string }

abstract class Animal implements Describable {
  static count = 0;
  protected abstract sound(): string;
  constructor(public readonly name: string, protected legs: number = 4, private secret?: string) { Animal.count++; }
  speak(times?: number): string { return Array(times ?? 1).fill(this.sound()).join(" "); }
  describe(): string { return `${this.name} has ${this.legs} legs${this.secret ? " and a secret" : ""}`; }
  hasSecret(): boolean { return this.secret !== undefined; }
}

class Dog extends Animal {
  protected sound(): string { return "woof"; }
}

class Bird extends Animal {
  constructor(name: string, public canFly: boolean = true) { super(name, 2, "nest"); }
  protected sound(): string { return this.canFly ? "tweet" : "squawk"; }
  override describe(): string { return super.describe() + (this.canFly ? ", flies" : ", walks"); }
}

class Point {
  #tag = "private-js";
  private static origin?: Point;
  constructor(public x = 0, public y = 0) {}
  static get zero(): Point { return (Point.origin ??= new Point()); }
  add(p: Point): Point;
  add(dx: number, dy: number): Point;
  add(a: Point | number, b?: number): Point {
    return typeof a === "number" ? new Point(this.x + a, this.y + (b ?? 0)) : new Point(this.x + a.x, this.y + a.y);
  }
  get tag(): string { return this.#tag; }
}

const d = new Dog("Rex");
const b = new Bird("Polly");
const penguin = new Bird("Pingu", false);
const p = new Point(1, 2);

let abstractCallError: string | null = null;
try { (Animal as any).prototype.sound.call(d); } catch (e) { abstractCallError = (e as Error).name; }

export default {
  parameterProperties: { keys: Object.keys(d), name: d.name, birdKeys: Object.keys(b) },
  speak: [d.speak(), d.speak(3), b.speak(2), penguin.speak()],
  describe: [d.describe(), b.describe(), penguin.describe()],
  secrets: [d.hasSecret(), b.hasSecret()],
  count: Animal.count,
  instanceOf: [d instanceof Animal, b instanceof Bird, d instanceof Bird],
  abstractMethodMissingAtRuntime: abstractCallError,
  point: { add1: p.add(new Point(10, 20)), add2: p.add(5, 5), zeroSame: Point.zero === Point.zero, tag: p.tag, json: JSON.stringify(p) },
  privateIsOnlyTypeLevel: (d as any).secret === undefined && (b as any).secret === "nest",
};
