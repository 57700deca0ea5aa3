// classes: inheritance, super calls/properties, static blocks, getters/setters, class fields, new.target
const r = {};
const events = [];

class Shape {
  static count = 0;
  static registry;
  static { Shape.registry = new Map(); events.push("Shape static block"); }
  kind = "shape";
  constructor(name) { this.name = name; Shape.count++; events.push("new " + new.target.name); }
  area() { return 0; }
  describe() { return `${this.name} (${this.kind}) area=${this.area().toFixed(2)}`; }
  static create(...args) { return new this(...args); }
  toString() { return `Shape<${this.name}>`; }
}

class Rect extends Shape {
  kind = "rect";
  #w; #h;
  constructor(w, h) { super("rect"); this.#w = w; this.#h = h; }
  area() { return this.#w * this.#h; }
  get width() { return this.#w; }
  set width(v) { if (v <= 0) throw new RangeError("width must be positive"); this.#w = v; }
}

class Square extends Rect {
  static { events.push("Square static block, parent count=" + Shape.count); }
  constructor(s) { super(s, s); this.name = "square"; }
  describe() { return "[sq] " + super.describe(); }
  static create(s) { return super.create(s * 2); }
}

const sq = new Square(3);
r.describe = sq.describe();
r.area = sq.area();
sq.width = 5;
r.afterSet = [sq.width, sq.area()];
try { sq.width = -1; } catch (e) { r.setterError = e.name + ": " + e.message; }
r.staticInherited = Square.create(2).area();
r.instanceof = [sq instanceof Square, sq instanceof Rect, sq instanceof Shape, sq instanceof Object];
r.protoChain = [Object.getPrototypeOf(Square) === Rect, Object.getPrototypeOf(Square.prototype) === Rect.prototype];
r.count = Shape.count;
r.template = `${sq}`;
r.registry = Shape.registry instanceof Map;
r.kind = sq.kind;

// extending a built-in
class Stack extends Array {
  peek() { return this.at(-1); }
}
const s = Stack.from([1, 2, 3]);
r.builtinExtend = { peek: s.peek(), mapped: s.map((x) => x * 2) instanceof Stack, len: s.length, isArray: Array.isArray(s) };

// calling a class without new
try { Shape("x"); } catch (e) { r.callWithoutNew = e.name; }

// class expression and computed method names
const key = "dyn";
const C = class Named { [key + "Method"]() { return Named.name; } static [Symbol.for("s")] = 1; };
r.classExpr = [new C().dynMethod(), C[Symbol.for("s")]];

// accessing this before super
class Bad extends Shape { constructor() { try { this.x = 1; } catch (e) { events.push("before super: " + e.name); } super("bad"); } }
new Bad();
r.events = events;

export default r;
