// TextEncoder/TextDecoder (utf-8) basics: round trips with non-ASCII and emoji, byte layout, decoding from buffers/views
const r = {};
const enc = new TextEncoder();
const dec = new TextDecoder();
const samples = ["hello", "héllo wörld", "日本語", "emoji 😀🎉", "👨‍👩‍👧", "Ωμέγα", "", "\u0000nul"];
r.roundTrip = samples.map((s) => dec.decode(enc.encode(s)) === s);
r.byteLengths = samples.map((s) => enc.encode(s).length);
const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, "0")).join(" ");
r.bytes = { e_acute: hex(enc.encode("é")), euro: hex(enc.encode("€")), grin: hex(enc.encode("😀")) };
r.encoding = [enc.encoding, dec.encoding, new TextDecoder("utf-8").encoding, new TextDecoder("UTF8").encoding];
r.encodeReturnsUint8 = enc.encode("x") instanceof Uint8Array;
r.encodeUndefined = enc.encode().length;

// decoding from ArrayBuffer, DataView and subarray views
const bytes = enc.encode("abc😀def");
r.fromBuffer = dec.decode(bytes.buffer);
r.fromSubarray = dec.decode(bytes.subarray(3, 7));
r.fromDataView = dec.decode(new DataView(bytes.buffer, 0, 3));

r.utf8Length = [..."aé€😀"].map((c) => enc.encode(c).length);

export default r;
