// object spread of a string primitive copies its indices (split out of spread.js: modernc.org/quickjs v0.27.0 yields {})
const r = {};
r.spreadString = { ..."hi" };
r.spreadStringKeys = Object.keys({ ..."abc" });
r.spreadStringThenArray = { ..."hi", ...[9] };
r.emojiCodeUnits = Object.keys({ ..."😀" }).length;
r.assignStringForComparison = Object.assign({}, "hi");
r.arraySpreadOfStringStillWorks = [..."hi"];
export default r;
