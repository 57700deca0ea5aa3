// atob/btoa: ASCII round trip, binary strings, padding, invalid input, UTF-8 via TextEncoder, base64url
const r = {};
r.btoa = [btoa(""), btoa("f"), btoa("fo"), btoa("foo"), btoa("foobar"), btoa("Hello, World!")];
r.atob = [atob("Zm9vYmFy"), atob("SGVsbG8sIFdvcmxkIQ=="), atob("Zg"), atob(" Zm9v\n")];
r.binary = btoa(String.fromCharCode(0, 1, 254, 255));
r.binaryBack = Array.from(atob("AAH+/w=="), (c) => c.charCodeAt(0));
r.latin1 = [btoa("é"), atob("6Q==") === "é"];
try { btoa("€"); r.nonLatin1 = "no throw"; } catch (e) { r.nonLatin1 = e.name; }
try { atob("abc*"); r.invalidChar = "no throw"; } catch (e) { r.invalidChar = e.name; }
try { atob("a"); r.badLength = "no throw"; } catch (e) { r.badLength = e.name; }

// UTF-8 safe base64 through TextEncoder/TextDecoder
const toB64 = (s) => btoa(Array.from(new TextEncoder().encode(s), (b) => String.fromCharCode(b)).join(""));
const fromB64 = (b) => new TextDecoder().decode(Uint8Array.from(atob(b), (c) => c.charCodeAt(0)));
r.utf8 = [toB64("héllo 😀"), fromB64(toB64("héllo 😀")), fromB64("5pel5pys6Kqe")];

// base64url
const toUrl = (b) => b.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const fromUrl = (u) => u.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (u.length % 4)) % 4);
const raw = String.fromCharCode(251, 255, 191);
r.base64url = [btoa(raw), toUrl(btoa(raw)), atob(fromUrl(toUrl(btoa(raw)))) === raw];
r.coercion = [btoa(123), btoa(null), btoa(undefined)];
r.jwtPayload = JSON.parse(atob(fromUrl("eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0")));

export default r;
