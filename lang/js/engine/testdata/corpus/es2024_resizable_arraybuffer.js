// ES2024 (newer than ES2023): resizable ArrayBuffer, length-tracking views, ArrayBuffer.prototype.transfer
const r = {};
const buf = new ArrayBuffer(4, { maxByteLength: 16 });
const tracking = new Uint8Array(buf);
r.initial = [buf.resizable, buf.byteLength, buf.maxByteLength, tracking.length];
buf.resize(12);
tracking[11] = 7;
r.grown = [buf.byteLength, tracking.length, tracking[11]];
buf.resize(2);
r.shrunk = [buf.byteLength, tracking.length];
try { buf.resize(32); } catch (e) { r.tooBig = e.name; }
r.fixed = [new ArrayBuffer(4).resizable, new ArrayBuffer(4).maxByteLength];

const src = new Uint8Array([1, 2, 3]).buffer;
const moved = src.transfer();
r.transfer = [src.detached, src.byteLength, moved.byteLength, Array.from(new Uint8Array(moved))];
const bigger = moved.transfer(5);
r.transferResize = [bigger.byteLength, Array.from(new Uint8Array(bigger))];
const fixedLen = new ArrayBuffer(2, { maxByteLength: 8 }).transferToFixedLength();
r.transferToFixedLength = [fixedLen.resizable, fixedLen.byteLength];
try { new Uint8Array(src); } catch (e) { r.detachedUse = e.name; }
export default r;
