// String.prototype.matchAll, replaceAll, replace with functions, search
const r = {};
const text = "x=1, y=22, z=333";
r.matchAll = [...text.matchAll(/(?<k>\w)=(?<v>\d+)/g)].map((m) => [m.index, m.groups.k, Number(m.groups.v)]);
try { text.matchAll(/x/); } catch (e) { r.matchAllNonGlobal = e.name; }
r.matchAllString = [..."a.b.c".matchAll(".")].map((m) => m.index);

r.replaceAllString = "a-b-c-d".replaceAll("-", "+");
r.replaceAllRegex = "aaa bbb".replaceAll(/a/g, "x");
try { "abc".replaceAll(/b/, "x"); } catch (e) { r.replaceAllNonGlobal = e.name; }
r.replaceAllSpecial = "$1.00 and $2.00".replaceAll("$", "USD ");
r.replaceAllDollarPattern = "a.b".replaceAll(".", "$&$&");
r.replaceAllFn = "1 2 3".replaceAll(/\d/g, (d, offset) => `${d * 10}@${offset}`);
r.replaceFirstOnly = "a-b-c".replace("-", "+");
r.replaceEmpty = "abc".replaceAll("", "|");
r.search = ["hello world".search(/o/), "hello".search(/z/)];
r.camelToKebab = "someLongVariableName".replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
r.kebabToCamel = "some-long-variable-name".replace(/-(\w)/g, (_, c) => c.toUpperCase());
r.matchGlobal = "The Quick Brown Fox".match(/[A-Z]/g);
r.matchNone = "abc".match(/\d/g);
r.wordCount = Object.entries(
  [..."the cat and the hat and the bat".matchAll(/\w+/g)].reduce((acc, [w]) => ((acc[w] = (acc[w] ?? 0) + 1), acc), {})
).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));

export default r;
