// URLSearchParams: parsing from string/object/entries, get/getAll/has, append/set/delete, sort, encoding rules
const r = {};
const p = new URLSearchParams("?a=1&b=2&a=3&c=hello+world&d=%F0%9F%98%80&e=&f");
r.get = [p.get("a"), p.get("c"), p.get("d"), p.get("e"), p.get("f"), p.get("missing")];
r.getAll = [p.getAll("a"), p.getAll("zzz")];
r.has = [p.has("a"), p.has("nope")];
r.size = [...p].length;
r.entries = [...p.entries()].slice(0, 3);
r.keys = [...p.keys()];

p.append("a", "4");
p.set("b", "new");
p.delete("c");
r.afterMutation = p.toString();
p.sort();
r.sorted = p.toString();

r.fromObject = new URLSearchParams({ q: "a b", lang: "en", amp: "x&y=z" }).toString();
r.fromEntries = new URLSearchParams([["k", "v1"], ["k", "v2"]]).toString();
r.fromMap = new URLSearchParams(new Map([["m", "1"]])).toString();
r.encodingRules = new URLSearchParams({ s: "a+b c/d?e=f&g#h~*-._!'()é" }).toString();
r.plusDecodesToSpace = new URLSearchParams("x=1+2%2B3").get("x");
r.toObject = Object.fromEntries(new URLSearchParams("x=1&y=2&x=3"));
r.forEach = (() => { const out = []; new URLSearchParams("p=1&q=2").forEach((v, k) => out.push(k + v)); return out; })();
r.emptyString = [new URLSearchParams("").toString(), new URLSearchParams("?").toString(), [...new URLSearchParams("&&a=1&&")].length];
r.stringCoercion = String(new URLSearchParams({ n: 1, b: true, u: undefined }));
r.deleteAll = (() => { const x = new URLSearchParams("a=1&b=2&a=3"); x.delete("a"); return x.toString(); })();

// building a query string for a URL
const url = new URL("https://api.example.com/search");
url.search = new URLSearchParams({ q: "js engines", page: "2" });
r.buildUrl = url.href;
r.parsedFromUrl = Object.fromEntries(new URL("https://x.com/?a=1&b=%20").searchParams);

export default r;
