// regex: named groups, backreferences, lookbehind/lookahead, replace with named groups
const r = {};
const date = /(?<year>\d{4})-(?<month>\d{2})-(?<day>\d{2})/;
const m = "Due: 2024-03-15.".match(date);
r.groups = { ...m.groups };
r.index = m.index;
r.swapNamed = "2024-03-15".replace(date, "$<day>/$<month>/$<year>");
r.swapFn = "2024-03-15".replace(date, (...args) => { const g = args.at(-1); return `${g.month}.${g.day}`; });
r.destructure = (() => { const { groups: { year, day } } = date.exec("1999-12-31"); return [year, day]; })();
r.namedBackref = /(?<q>['"]).*?\k<q>/.exec(`say "hi 'there'" now`)[0];
r.numberedBackref = /(\w)\1/.exec("abccd")[0];
r.lookbehind = "price: $42, cost: $7, €9".match(/(?<=\$)\d+/g);
r.negLookbehind = "a1 b2 c3 $4".match(/(?<![$b])\d/g);
r.lookahead = "foobar foobaz".match(/foo(?=baz)/).index;
r.negLookahead = "q1 q2x q3".match(/q\d(?!x)/g);
r.nonCapturing = /(?:ab)+(c)/.exec("ababc").slice();
r.optionalGroup = (() => { const x = /a(?<opt>b)?c/.exec("ac"); return { hasKey: "opt" in x.groups, value: x.groups.opt === undefined }; })();
r.alternation = "cat dog bird".replace(/\b(cat|bird)\b/g, (w) => w.toUpperCase());
r.split = "a1b22c333d".split(/\d+/);
r.splitCapture = "a,b;c".split(/([,;])/);
r.test = [/^\p{Lu}/u.test("Ärger"), /^\p{Lu}/u.test("ärger")];
r.escapes = "a.b*c".replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
r.specialReplacement = "abc".replace("b", "[$`|$&|$']");
r.source = [/a\/b/gi.source, /x/gimsuy.flags];
r.lastIndexGlobal = (() => { const re = /o/g; const s = "foo"; re.test(s); const first = re.lastIndex; re.test(s); return [first, re.lastIndex]; })();

export default r;
