// URL less-common cases: percent-encoding of spaces/non-ASCII, setters (pathname/port/protocol), non-special and file schemes, canParse
const r = {};
r.encoding = [new URL("https://h.com/a b/ü?q=a b&r=é#f g").href, new URL("https://h.com/%7Efoo").pathname];
r.userinfoEncoding = new URL("https://us er:pa ss@h.com/").href;

const m = new URL("http://h.com/start");
m.pathname = "/new path";
m.search = "?a=1";
m.hash = "section";
m.port = "8081";
m.protocol = "https";
r.mutated = m.href;
m.searchParams.append("b", "2 3");
r.searchParamsLinked = [m.search, m.href];
m.search = "";
r.clearedSearch = [m.href, m.searchParams.toString()];
m.port = "443";
r.portSetToDefault = [m.port, m.host];
m.hostname = "Other.ORG";
r.hostnameSetter = m.href;

r.nonSpecial = (() => { const x = new URL("mailto:someone@example.com?subject=hi"); return [x.protocol, x.pathname, x.search, x.host, x.origin]; })();
r.fileUrl = (() => { const x = new URL("file:///tmp/a%20b.txt"); return [x.protocol, x.host, x.pathname, x.href]; })();
r.dataUrl = new URL("data:text/plain,hello").pathname;
r.trailingDotsAndCase = new URL("HTTPS://H.COM/A/./B/../C").href;
r.backslashes = new URL("https://h.com\\a\\b").pathname;
r.tabsAndNewlinesStripped = new URL("https://h.c\tom/a\nb").href;
r.canParse = [URL.canParse("https://x.org"), URL.canParse("nope"), URL.canParse("rel", "https://x.org/")];

const errors = [];
for (const bad of ["http://", "https://h.com:99999/", "http://exa mple.com/"]) {
  try { new URL(bad); errors.push("ok"); } catch (e) { errors.push(e.name); }
}
r.invalid = errors;

export default r;
