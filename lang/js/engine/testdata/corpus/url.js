// URL (common cases): component getters, default ports, relative resolution against a base, searchParams, errors
const r = {};
const u = new URL("https://user:secret@Example.COM:8080/a/b/../c/./d.html?x=1&y=two#frag");
r.parts = {
  href: u.href, protocol: u.protocol, username: u.username, password: u.password,
  host: u.host, hostname: u.hostname, port: u.port, pathname: u.pathname,
  search: u.search, hash: u.hash, origin: u.origin,
};
r.defaultPortDropped = new URL("https://example.com:443/").href;
r.httpDefaultPort = new URL("http://example.com:80/x").host;
r.relative = [
  new URL("../up", "https://h.com/a/b/c").href,
  new URL("/root?q", "https://h.com/a/b").href,
  new URL("sib", "https://h.com/a/b").href,
  new URL("//other.org/p", "https://h.com/").href,
  new URL("?only=query", "https://h.com/path#h").href,
  new URL("#only-hash", "https://h.com/path?q=1").href,
  new URL("https://abs.org/x", "https://ignored.com/").href,
  new URL("sub/", new URL("https://h.com/dir/")).href,
];
r.emptyPath = [new URL("https://h.com").pathname, new URL("https://h.com").href];
r.noSearchNoHash = (() => { const x = new URL("http://h.com/p"); return [x.search, x.hash, x.port]; })();
r.searchParams = (() => { const x = new URL("https://h.com/s?q=hello+world&n=1&n=2"); return [x.searchParams.get("q"), x.searchParams.getAll("n")]; })();
r.searchAppend = (() => { const x = new URL("https://h.com/s?a=1#top"); x.searchParams.append("b", "two words"); return [x.search, x.href]; })();
r.setSearchAndHash = (() => { const x = new URL("https://h.com/p"); x.search = "k=v"; x.hash = "h"; return x.href; })();
r.ipv4AndLocalhost = [new URL("http://127.0.0.1:3000/").host, new URL("http://localhost:8000/api").origin];
r.toStringAndJSON = [String(new URL("https://h.com/x")), JSON.stringify({ u: new URL("https://h.com/x") }), new URL("https://h.com/x").toJSON()];
r.alreadyEncoded = new URL("https://h.com/a%20b?q=%2F").href;

const errors = [];
for (const bad of ["not a url", "/relative/only", "", "https://"]) {
  try { new URL(bad); errors.push("ok"); } catch (e) { errors.push(e.name); }
}
r.invalid = errors;
try { new URL("x", "also not a base"); } catch (e) { r.invalidBase = e.name; }

export default r;
