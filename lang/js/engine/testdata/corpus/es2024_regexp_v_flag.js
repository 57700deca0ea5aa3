// ES2024 (newer than ES2023): RegExp v flag (unicodeSets): set operations, string properties
const r = {};
r.flag = [/x/v.unicodeSets, /x/v.flags];
r.difference = "abcdef".match(/[\p{L}--[a-c]]/gv);
r.intersection = "aAbB1".match(/[\p{Lu}&&[A-Z]]/gv);
r.nestedClass = "a-b_c".match(/[[a-z]--[b]]/gv);
r.stringProperty = "👍🏽 ok".match(/\p{RGI_Emoji}/v)?.[0].length ?? null;
r.stringLiteralsInClass = "xyz abc".match(/[\q{abc|xy}]/gv);
try { new RegExp("x", "uv"); } catch (e) { r.uvTogether = e.name; }
export default r;
