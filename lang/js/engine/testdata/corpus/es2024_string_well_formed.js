// ES2024 (newer than ES2023): String.prototype.isWellFormed / toWellFormed
const r = {};
r.isWellFormed = ["abc", "😀", "\ud800", "a\udc00b", "\ud83d\ude00"].map((s) => s.isWellFormed());
r.toWellFormed = ["ab\ud800", "\udc00x", "ok"].map((s) => Array.from(s.toWellFormed(), (c) => c.codePointAt(0).toString(16)));
r.safeEncodeURI = (() => { const s = "a\ud800b"; try { encodeURIComponent(s); return "no throw"; } catch (e) { return [e.name, encodeURIComponent(s.toWellFormed())]; } })();
export default r;
