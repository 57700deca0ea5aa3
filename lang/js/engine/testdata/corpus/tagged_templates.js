// tagged templates and String.raw: strings vs raw, expressions, caching of strings array, invalid escapes
const r = {};
function tag(strings, ...values) {
  return { strings: [...strings], raw: [...strings.raw], values };
}
r.basic = tag`a${1}b${"two"}c`;
r.empty = tag``;
r.edges = tag`${0}${1}`;
r.escapes = tag`line\nbreak\t\u0041`;
r.stringRaw = [String.raw`C:\new\table${1 + 1}\x`, String.raw({ raw: ["x", "y", "z"] }, 1, 2, 3), String.raw`\u{1F600}`.length];

// invalid escapes are allowed in tagged templates: cooked is undefined
function cooked(strings) { return [strings[0] === undefined, strings.raw[0]]; }
r.invalidEscape = cooked`\unicode`;

// the strings array is frozen and cached per call site
const seen = [];
function capture(strings) { seen.push(strings); return strings; }
for (let i = 0; i < 2; i++) capture`same site ${i}`;
capture`same site ${0}`;
r.cachedPerSite = [seen[0] === seen[1], seen[0] === seen[2], Object.isFrozen(seen[0]), Array.isArray(seen[0].raw)];

// practical tags
function html(strings, ...vals) {
  const esc = (v) => String(v).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  return strings.reduce((out, s, i) => out + s + (i < vals.length ? esc(vals[i]) : ""), "");
}
r.html = html`<p title="${'a"b'}">${"<script>&"}</p>`;

function dedent(strings, ...vals) {
  const full = String.raw({ raw: strings }, ...vals);
  const lines = full.replace(/^\n/, "").split("\n");
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.match(/^ */)[0].length));
  return lines.map((l) => l.slice(indent)).join("\n").trimEnd();
}
r.dedent = dedent`
    first
      second ${42}
    third
`;

// tags can be member expressions and return non-strings
const obj = { prefix: ">", t(strings, ...v) { return this.prefix + strings.join(v.join("")); } };
r.memberTag = obj.t`a${"-"}b`;
const currying = (a) => (strings) => a + strings[0];
r.chainedTag = currying("x")`y`;
r.sqlLike = ((s, ...v) => ({ text: s.reduce((a, p, i) => a + "$" + i + p), values: v }))`SELECT * FROM t WHERE a = ${1} AND b = ${"x"}`;

export default r;
