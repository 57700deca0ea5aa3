// typed arrays: construction, overflow/clamping, shared buffers, subarray vs slice, set, from/of, sorting
const r = {};
const u8 = new Uint8Array([1, 255, 256, -1, 3.7]);
r.uint8Wrap = Array.from(u8);
r.clamped = Array.from(new Uint8ClampedArray([300, -5, 1.5, 2.5, 254.5]));
r.int8 = Array.from(new Int8Array([127, 128, -129]));
r.float32 = Array.from(new Float32Array([0.1, 1 / 3]), (x) => Number(x.toFixed(7)));
r.float32Precision = new Float32Array([0.1])[0] === 0.1;
r.sizes = [Int8Array, Uint16Array, Int32Array, Float32Array, Float64Array, BigInt64Array].map((C) => C.BYTES_PER_ELEMENT);

const buf = new ArrayBuffer(8);
const view32 = new Uint32Array(buf);
const view8 = new Uint8Array(buf);
view32[0] = 0x01020304;
r.sharedBuffer = { bytes: Array.from(view8.slice(0, 4)), byteLength: buf.byteLength, length32: view32.length };
r.littleEndianHost = view8[0] === 4;

const base = new Int16Array([0, 1, 2, 3, 4, 5]);
const sub = base.subarray(2, 4);
const sl = base.slice(2, 4);
sub[0] = 99;
sl[1] = -1;
r.subarrayShares = [Array.from(base), Array.from(sub), Array.from(sl), sub.byteOffset, sub.buffer === base.buffer];

const dst = new Uint8Array(6);
dst.set([1, 2], 1);
dst.set(new Uint8Array([7, 8, 9]), 3);
r.set = Array.from(dst);
try { dst.set([1, 2, 3], 5); } catch (e) { r.setOverflow = e.name; }

r.from = [Array.from(Uint8Array.from("123", Number)), Array.from(Int32Array.of(-1, 2)), Array.from(Float64Array.from(new Set([1.5, 2.5])))];
r.numericSort = Array.from(new Float64Array([10, -1, 2, NaN, 1.5]).sort());
r.methods = {
  map: Array.from(new Uint8Array([100, 200]).map((x) => x * 2)),
  filter: Array.from(new Int8Array([1, -2, 3]).filter((x) => x > 0)),
  reduce: new Uint16Array([1, 2, 3]).reduce((a, b) => a + b),
  join: new Uint8Array([1, 2]).join("|"),
  includes: new Float32Array([1.5]).includes(1.5),
  indexOf: new Int32Array([5, 6, 7]).indexOf(7),
  reverse: Array.from(new Uint8Array([1, 2, 3]).reverse()),
  fill: Array.from(new Uint8Array(3).fill(7, 1)),
  at: new Int8Array([1, 2, 3]).at(-1),
};
r.lengthFromBuffer = [new Uint16Array(new ArrayBuffer(10), 2).length, new Uint8Array(new ArrayBuffer(10), 2, 3).length];
try { new Uint32Array(new ArrayBuffer(10), 1); } catch (e) { r.misaligned = e.name; }
r.arrayBufferSlice = new Uint8Array(new Uint8Array([1, 2, 3, 4]).buffer.slice(1, 3)).join(",");
r.isView = [ArrayBuffer.isView(u8), ArrayBuffer.isView(buf), ArrayBuffer.isView(new DataView(buf))];
r.toStringTag = Object.prototype.toString.call(new Float64Array(1));
r.json = JSON.stringify(new Uint8Array([1, 2]));
r.outOfBoundsWrite = (() => { const t = new Uint8Array(2); t[5] = 1; return [t.length, t[5]]; })();

export default r;
