// optional chaining, nullish coalescing and logical assignment operators
const r = {};
const data = { user: { profile: { name: "Ada", tags: ["x", "y"] }, greet() { return "hi " + this.profile.name; } }, zero: 0, empty: "", nil: null };

r.deep = data.user?.profile?.name;
r.missing = data.admin?.profile?.name ?? "no admin";
r.index = data.user?.profile?.tags?.[1];
r.missingIndex = data.user?.aliases?.[0] ?? "none";
r.call = data.user.greet?.();
r.missingCall = data.user.wave?.() ?? "no wave";
r.shortCircuit = (() => { let n = 0; const o = null; o?.[n++]; return n; })();
r.nullishVsOr = {
  zeroNullish: data.zero ?? 5, zeroOr: data.zero || 5,
  emptyNullish: data.empty ?? "d", emptyOr: data.empty || "d",
  nullNullish: data.nil ?? "d", undef: data.nope ?? "d",
};

const cfg = { a: null, b: 0, c: 1, d: "", e: "set" };
cfg.a ??= "filled";
cfg.b ??= 99;   // 0 is not nullish: unchanged
cfg.b ||= 42;   // 0 is falsy: replaced
cfg.c &&= cfg.c + 10;
cfg.d &&= "never";
cfg.e ||= "never";
cfg.f ??= [];
cfg.f.push(1);
r.logicalAssign = cfg;

// logical assignment short-circuits: setter not invoked
const calls = [];
const o = { get v() { calls.push("get"); return 1; }, set v(x) { calls.push("set " + x); } };
o.v ??= 2; o.v ||= 3; o.v &&= 4;
r.setterCalls = calls;

// optional chaining with delete and on functions returning undefined
const maybe = { inner: { k: 1 } };
r.deleteOptional = [delete maybe?.inner?.k, delete maybe.nothing?.k, JSON.stringify(maybe)];
r.optionalOnPrimitive = ["abc"?.length, (5)?.toFixed?.(1)];
r.undefinedResult = data.user?.nope?.deeper === undefined;

// mixing ?? with || requires parentheses
r.mixed = (null ?? false) || "fallback";

export default r;
