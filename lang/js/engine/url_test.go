package engine

import "testing"

// The URL class through the engine: the parser is whatwgurl's (tested
// there against the web-platform-tests data); this checks the JS side.
func TestURLClass(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"password keeps its percent-encoding",
			`const u = new URL("https://User:Pa%20ss@host/"); return [u.username, u.password, u.href]`,
			`["User","Pa%20ss","https://User:Pa%20ss@host/"]`},
		{"setters follow the Standard",
			`const u = new URL("http://example.net/p?q#h");
u.host = "example.com:8080"; const a = u.href;
u.hostname = "x.org:1"; const b = u.href;
u.port = "99z"; u.pathname = "/a b/../c?"; u.search = "x=1 2"; u.hash = "f g";
u.username = "me@"; u.password = "s:t"; u.protocol = "https"; const c = u.href;
u.protocol = "sc"; u.port = ""; const d = u.href;
return [a, b, c, d, u.origin]`,
			`["http://example.com:8080/p?q#h","http://example.com:8080/p?q#h",` +
				`"https://me%40:s%3At@example.com:99/c%3F?x=1%202#f%20g","https://me%40:s%3At@example.com/c%3F?x=1%202#f%20g","https://example.com"]`},
		{"searchParams is one object that follows the URL",
			`const u = new URL("https://h/?a=1"); const p = u.searchParams;
u.search = "?b=2"; const b = p.get("b");
u.href = "https://h/?c=3#f"; const c = p.get("c");
p.append("d", "4 5");
return [p === u.searchParams, b, c, u.href]`,
			`[true,"2","3","https://h/?c=3&d=4+5#f"]`},
		{"a lone surrogate is U+FFFD",
			`return new URL("http://h/\uD800?\uDC00").href`,
			`"http://h/%EF%BF%BD?%EF%BF%BD"`},
		{"a URL object as input and base",
			`const b = new URL("https://h/dir/x"); return [new URL("y", b).href, new URL(b).href, URL.canParse("y", b)]`,
			`["https://h/dir/y","https://h/dir/x",true]`},
		{"errors say why",
			`const m = []; for (const [i, b] of [["https://münchen.de/"], ["x"], ["x", "nope"], ["http://h:99999/"]])
  try { new URL(i, b); m.push("ok") } catch (e) { m.push(e.name + ": " + e.message) }
const u = new URL("https://h/"); try { u.href = "x" } catch (e) { m.push(e.name) }
return [m, u.href]`,
			`[["TypeError: Invalid URL \"https://münchen.de/\": the domain \"münchen.de\" is not ASCII, and IDNA is not supported: write it in its xn-- (punycode) form",` +
				`"TypeError: Invalid URL \"x\": a relative URL needs a base URL",` +
				`"TypeError: Invalid base URL \"nope\": a relative URL needs a base URL",` +
				`"TypeError: Invalid URL \"http://h:99999/\": the port is more than 65535","TypeError"],"https://h/"]`},
	} {
		t.Run(tc.name, func(t *testing.T) { result(t, tc.src, false, tc.want) })
	}
}
