// ES2025 (newer than ES2023): Promise.try, RegExp.escape, duplicate named groups, regexp modifiers, Math.f16round/Float16Array
const r = {};
r.promiseTry = [await Promise.try(() => 1), await Promise.try(() => { throw new Error("sync throw"); }).catch((e) => e.message)];
r.regexpEscape = RegExp.escape("a.b*c");
r.duplicateNamedGroups = ["2024-05", "05/2024"].map((s) => s.match(/(?<y>\d{4})-(?<m>\d{2})|(?<m>\d{2})\/(?<y>\d{4})/).groups.y);
r.modifiers = [/(?i:a)b/.test("Ab"), /(?i:a)b/.test("AB")];
r.float16 = [Math.f16round(1.337), Array.from(new Float16Array([0.1, 65504, 70000]))];
export default r;
