// String: padStart/End, at, replaceAll, normalize, codePointAt, fromCodePoint, trim, repeat, slicing, iteration
const r = {};
r.pad = ["5".padStart(3, "0"), "abc".padEnd(6, "12"), "abc".padStart(2), "x".padStart(4)];
r.at = ["hello".at(0), "hello".at(-1), "hello".at(9)];
r.replaceAll = "a.b.c".replaceAll(".", "/");
const composed = "\u00e9", decomposed = "e\u0301";
r.normalize = [composed === decomposed, composed.normalize("NFD") === decomposed, decomposed.normalize("NFC") === composed, decomposed.length, decomposed.normalize().length, "\ufb01".normalize("NFKC")];
const s = "a😀b";
r.codePoints = [s.length, s.codePointAt(1), s.codePointAt(2), s.charCodeAt(1), [...s].length, String.fromCodePoint(0x1f600) === "😀", String.fromCharCode(72, 105)];
r.codePointHex = [..."ñ€😀"].map((c) => "U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0"));
r.trim = ["  x  ".trim(), "  x  ".trimStart(), "  x  ".trimEnd(), "\t\n\u00a0y\ufeff".trim()];
r.repeat = ["ab".repeat(3), "x".repeat(0)];
try { "x".repeat(-1); } catch (e) { r.repeatNegative = e.name; }
r.search = ["hello".startsWith("he"), "hello".endsWith("lo", 5), "hello".includes("ll", 3), "hello".indexOf("l"), "hello".lastIndexOf("l")];
r.slicing = ["hello".slice(-3), "hello".substring(3, 1), "hello".slice(3, 1), "hello".substr?.(1, 3)];
r.split = ["a,b,,c".split(","), "abc".split(""), "a b c".split(" ", 2), "".split(",")];
r.caseConversion = ["Straße".toUpperCase(), "İ".toLowerCase().length, "ΣΑΣ".toLowerCase()];
r.compare = ["a" < "b", "B" < "a", "10" < "9", "abc" < "abd"];
r.concat = "a".concat(1, null, [2, 3]);
r.templates = `sum=${1 + 2} nested=${`inner ${"x".toUpperCase()}`} obj=${{}} arr=${[1, 2]}`;
r.multiline = `line1
line2`.split("\n").length;
r.escape = ["\x41\u0042\u{43}", "tab\there".length];
r.numberFormatting = [(1234.5678).toFixed(2), (0.000123).toExponential(2), (123.456).toPrecision(4), (255).toString(16), (0.1 + 0.2).toString(), (1e21).toString(), (-0).toString(), String(2 ** 53 + 1)];
r.parse = [parseInt("0x1F"), parseInt("12px"), parseFloat("3.14abc"), Number("  12  "), Number(""), Number("1_000"), Number("0b101"), parseInt("z", 36)];
r.iterateSurrogates = Array.from("𝒳y", (c) => c.length);
r.wellKnown = [String(Symbol("d")), Symbol("d").description, Symbol().description];

export default r;
