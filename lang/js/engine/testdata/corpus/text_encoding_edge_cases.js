// TextEncoder/TextDecoder edge cases: lone surrogates, invalid bytes (U+FFFD), fatal mode, BOM handling, streaming, encodeInto
const r = {};
const enc = new TextEncoder();
const dec = new TextDecoder();
const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, "0")).join(" ");

// lone surrogates are replaced by U+FFFD when encoding
r.loneSurrogate = hex(enc.encode("\ud800"));

// invalid bytes decode to U+FFFD; fatal mode throws
r.invalidDecode = dec.decode(new Uint8Array([0x61, 0xff, 0x62]));
r.truncated = dec.decode(new Uint8Array([0xe2, 0x82]));
try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xff])); r.fatal = "no throw"; } catch (e) { r.fatal = e.name; }
r.fatalFlag = [new TextDecoder("utf-8", { fatal: true }).fatal, dec.fatal, dec.ignoreBOM];

// BOM is stripped by default
r.bom = [dec.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), new TextDecoder("utf-8", { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])).length];

// streaming: a multi-byte char split across chunks
const sd = new TextDecoder();
const grin = enc.encode("😀");
r.streaming = sd.decode(grin.subarray(0, 2), { stream: true }) + "|" + sd.decode(grin.subarray(2));

// encodeInto
const target = new Uint8Array(5);
const res = enc.encodeInto("aé😀", target);
r.encodeInto = { read: res.read, written: res.written, bytes: hex(target) };
export default r;
