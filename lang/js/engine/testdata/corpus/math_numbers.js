// Math and Number: functions (rounded for determinism), rounding modes, constants, integer checks, float quirks
const r = {};
const round = (x, d = 10) => Number(x.toFixed(d));
r.constants = [round(Math.PI), round(Math.E), round(Math.SQRT2), round(Math.LN2), round(Math.LOG10E)];
r.trig = [round(Math.sin(Math.PI / 6)), round(Math.cos(Math.PI)), round(Math.tan(Math.PI / 4)), round(Math.atan2(1, 1) * 4), round(Math.asin(1) * 2)];
r.hyperbolic = [round(Math.sinh(1)), round(Math.cosh(1)), round(Math.tanh(0.5)), round(Math.asinh(1)), round(Math.acosh(2)), round(Math.atanh(0.5))];
r.exp = [round(Math.exp(1)), round(Math.expm1(1e-10), 20) > 0, round(Math.log(Math.E)), Math.log2(1024), Math.log10(1000), round(Math.log1p(1))];
r.powers = [Math.sqrt(144), Math.cbrt(-27), Math.pow(2, 10), 2 ** -1, Math.hypot(3, 4), Math.hypot(), (-8) ** (1 / 3)];
r.rounding = {
  round: [Math.round(2.5), Math.round(-2.5), Math.round(-2.6), Math.round(0.49999999999999994)],
  floor: [Math.floor(-1.5), Math.floor(1.9)],
  ceil: [Math.ceil(-1.5), Math.ceil(1.1)],
  trunc: [Math.trunc(-1.9), Math.trunc(1.9)],
  sign: [Math.sign(-3), Math.sign(0), Math.sign(5)],
  fround: Math.fround(5.5) === 5.5 && Math.fround(5.05) !== 5.05,
};
r.minmax = [Math.max(), Math.min(), Math.max(1, NaN), Math.max(-0, 0), Math.min(3, 1, 2)];
r.integerOps = [Math.clz32(1), Math.clz32(0), Math.imul(0xffffffff, 5), Math.abs(-7.5)];
r.floatQuirks = [0.1 + 0.2 === 0.3, round(0.1 + 0.2, 15), Math.abs(0.1 + 0.2 - 0.3) < Number.EPSILON, 1 / 0, -1 / 0, Object.is(-0 * 1, -0)];
r.numberStatics = [Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, Number.isSafeInteger(2 ** 53), Number.isInteger(5.0), Number.isInteger(5.1), Number.isFinite("5"), isFinite("5"), Number.isNaN("x"), isNaN("x")];
r.maxMin = [Number.MAX_VALUE, Number.MIN_VALUE, Number.MAX_VALUE * 2];
r.toFixedRounding = [(1.005).toFixed(2), (1.45).toFixed(1), (2.5).toFixed(0), (-1.5).toFixed(0), (1e21).toFixed(2), (0).toFixed(2)];
r.toStringRadix = [(255).toString(2), (-255).toString(36), (0.5).toString(2), (3.75).toString(16)];
r.shortestRepr = [1 / 3, 100, 1e-7, 123456789012345680000, 5e-324, 2 ** 53 + 2];
r.numericSeparators = 1_000_000 + 0xff_ff * 0 + 0b1010_1010;
r.bitOps = [5 & 3, 5 | 3, 5 ^ 3, ~5, -16 >> 2, -16 >>> 28, 1 << 31, 2 ** 32 | 0];
r.modulo = [7 % 3, -7 % 3, 7 % -3, 5.5 % 2, ((-7 % 3) + 3) % 3];
r.coercion = [+"", +" 42 ", +"4e2", +[], +[5], +{}, +null, +undefined, +true, "3" * "4", "3" + 4, 3 + 4 + "5"];

// deterministic pseudo-random (LCG) instead of Math.random
let seed = 42;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
r.lcg = Array.from({ length: 4 }, () => Math.floor(rand() * 100));
r.randomInRange = (() => { const x = Math.random(); return x >= 0 && x < 1; })();

export default r;
