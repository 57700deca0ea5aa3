// DataView: endianness, all getters/setters, offsets, bounds errors, building a binary record
const r = {};
const buf = new ArrayBuffer(16);
const dv = new DataView(buf);
dv.setUint16(0, 0x1234);          // big-endian by default
dv.setUint16(2, 0x1234, true);    // little-endian
r.endianBytes = Array.from(new Uint8Array(buf, 0, 4), (b) => b.toString(16));
r.readBack = [dv.getUint16(0), dv.getUint16(2, true), dv.getUint16(2).toString(16)];

dv.setInt8(4, -1);
r.signedness = [dv.getInt8(4), dv.getUint8(4)];
dv.setInt32(4, -123456, true);
r.int32 = [dv.getInt32(4, true), dv.getUint32(4, true)];
dv.setFloat32(8, 1.5);
dv.setFloat64(8, Math.PI);
r.float64 = dv.getFloat64(8);
dv.setFloat32(0, 0.1);
r.float32 = Number(dv.getFloat32(0).toFixed(6));
dv.setBigInt64(8, -2n, true);
r.bigint64 = [String(dv.getBigInt64(8, true)), String(dv.getBigUint64(8, true))];

r.props = [dv.byteLength, dv.byteOffset, new DataView(buf, 4, 8).byteLength, new DataView(buf, 4).byteOffset];
try { dv.getUint32(14); } catch (e) { r.outOfRange = e.name; }
try { new DataView(buf, 17); } catch (e) { r.badOffset = e.name; }

// encode a little record: [u8 version][u16 count BE][f32 value LE][utf-8 bytes]
function encode(version, count, value, text) {
  const bytes = new TextEncoder().encode(text);
  const out = new DataView(new ArrayBuffer(7 + bytes.length));
  out.setUint8(0, version);
  out.setUint16(1, count);
  out.setFloat32(3, value, true);
  new Uint8Array(out.buffer).set(bytes, 7);
  return out.buffer;
}
function decode(ab) {
  const v = new DataView(ab);
  return { version: v.getUint8(0), count: v.getUint16(1), value: v.getFloat32(3, true), text: new TextDecoder().decode(new Uint8Array(ab, 7)) };
}
const encoded = encode(2, 513, 2.25, "héllo");
r.recordHex = Array.from(new Uint8Array(encoded), (b) => b.toString(16).padStart(2, "0")).join("");
r.recordDecoded = decode(encoded);
r.tag = Object.prototype.toString.call(dv);

export default r;
