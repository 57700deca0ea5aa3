// BigInt.asUintN with widths >= 32 (split out of bigint.js: modernc.org/quickjs v0.27.0 returns negative values here)
const r = {};
r.asUintN64 = [BigInt.asUintN(64, -1n), BigInt.asUintN(64, -2n), BigInt.asUintN(64, 2n ** 64n - 1n), BigInt.asUintN(64, 2n ** 64n + 5n)].map(String);
r.otherWidths = [BigInt.asUintN(32, -1n), BigInt.asUintN(63, -1n), BigInt.asUintN(65, -1n), BigInt.asUintN(128, -1n)].map(String);
r.smallWidths = [BigInt.asUintN(8, -1n), BigInt.asUintN(16, -1n), BigInt.asUintN(0, 123n)].map(String);
// common use: wrap a 64-bit hash (FNV-1a) without overflow
function fnv1a64(str) {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(str)) h = BigInt.asUintN(64, (h ^ BigInt(b)) * 0x100000001b3n);
  return h.toString(16).padStart(16, "0");
}
r.fnv1a64 = [fnv1a64(""), fnv1a64("a"), fnv1a64("héllo")];
export default r;
