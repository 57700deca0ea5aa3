// regex flags: s (dotAll), u (unicode), y (sticky), d (indices), i, m, g
const r = {};
r.dotAll = [/a.b/.test("a\nb"), /a.b/s.test("a\nb"), /a.b/s.dotAll];
r.multiline = "one\ntwo\nthree".match(/^\w+$/gm);
r.ignoreCase = "HeLLo".replace(/l/gi, "_");

// u flag: code points vs code units
const emoji = "😀";
r.unicodeLength = [emoji.length, [...emoji].length, /^.$/.test(emoji), /^.$/u.test(emoji)];
r.unicodeEscape = /\u{1F600}/u.test(emoji);
r.unicodeProps = "Hello Wörld 123 ñ".match(/\p{L}+/gu);
r.scriptProp = "abc αβγ".match(/\p{Script=Greek}+/u)[0];

// y flag: match only at lastIndex
const sticky = /\d+/y;
sticky.lastIndex = 3;
const s1 = sticky.exec("ab 123 45");
r.sticky = [s1 && s1[0], sticky.lastIndex];
sticky.lastIndex = 2;
r.stickyMiss = [sticky.exec("ab 123"), sticky.lastIndex];

// tokenizer with sticky regex
function tokenize(src) {
  const re = /\s*(?:(?<num>\d+)|(?<op>[-+*/()]))/y;
  const out = [];
  let m;
  while (re.lastIndex < src.length && (m = re.exec(src))) out.push(m.groups.num ?? m.groups.op);
  return out;
}
r.tokens = tokenize("12 + (3*45) - 6");

// d flag: match indices
const md = /(?<word>b+)(c)?/d.exec("aabbbcd");
r.indices = { whole: md.indices[0], word: md.indices.groups.word, c: md.indices[2], hasIndices: /x/d.hasIndices };
const mdMissing = /(a)|(b)/d.exec("b");
r.indicesMissing = mdMissing.indices[1] === undefined;
r.flagsOrder = new RegExp("x", "yusmigd").flags;
r.constructedFrom = new RegExp(/ab/g, "i").flags;

try { new RegExp("a", "gg"); } catch (e) { r.dupFlag = e.name; }
try { new RegExp("(", ""); } catch (e) { r.badPattern = e.name; }

export default r;
