// BigInt: arithmetic, big values, asIntN/asUintN, conversions, mixed-type TypeErrors
const r = {};
const big = 2n ** 100n;
r.pow = big.toString();
r.arith = [(7n + 3n).toString(), (7n - 10n).toString(), (7n * 6n).toString(), (7n / 2n).toString(), (-7n / 2n).toString(), (7n % 3n).toString(), (-7n % 3n).toString()];
r.factorial25 = (() => { let f = 1n; for (let i = 1n; i <= 25n; i++) f *= i; return f.toString(); })();
r.bitwise = [(0b1100n & 0b1010n).toString(), (0b1100n | 0b1010n).toString(), (0b1100n ^ 0b1010n).toString(), (1n << 70n).toString(), (-256n >> 4n).toString(), (~5n).toString()];
r.asIntN = [BigInt.asIntN(8, 255n).toString(), BigInt.asIntN(8, 128n).toString(), BigInt.asUintN(8, -1n).toString(), BigInt.asIntN(64, 2n ** 63n).toString(), BigInt.asIntN(64, -1n).toString()];
r.compare = [1n < 2, 2n == 2, 2n === 2, 10n > 9.5, 0n == false, typeof 1n];
r.conversions = [BigInt(123).toString(), BigInt("0xff").toString(), BigInt("  42  ").toString(), Number(2n ** 53n), String(-5n), (255n).toString(16), (255n).toString(2), parseInt("99n")];
r.truthiness = [Boolean(0n), Boolean(1n), 0n ? "t" : "f"];
r.sorted = [5n, -2n, 10n, 0n].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String);

const errs = {};
try { 1n + 1; } catch (e) { errs.mixedAdd = e.name; }
try { BigInt(1.5); } catch (e) { errs.fractional = e.name; }
try { BigInt("1.5"); } catch (e) { errs.badString = e.name; }
try { Math.max(1n); } catch (e) { errs.mathMax = e.name; }
try { +1n; } catch (e) { errs.unaryPlus = e.name; }
try { 1n / 0n; } catch (e) { errs.divZero = e.name; }
try { JSON.stringify({ a: 1n }); } catch (e) { errs.json = e.name; }
try { new BigInt(1); } catch (e) { errs.newBigInt = e.name; }
try { 1n >>> 1n; } catch (e) { errs.unsignedShift = e.name; }
r.errors = errs;

// toJSON workaround and BigInt64Array
BigInt.prototype.toJSON = function () { return this.toString() + "n"; };
r.jsonWithToJSON = JSON.stringify({ v: 12345678901234567890n });
delete BigInt.prototype.toJSON;
const arr = new BigInt64Array([1n, -1n, 2n ** 63n - 1n]);
r.bigint64 = Array.from(arr, String);
r.biguint64 = Array.from(new BigUint64Array([-1n]), String);
r.mixedString = "v=" + 10n;
r.increment = (() => { let x = 9n; x++; x += 1n; return x.toString(); })();

export default r;
