// Date (UTC only): Date.UTC, toISOString, getUTC*, setUTC*, parsing ISO strings, arithmetic
const r = {};
const t = Date.UTC(2024, 1, 29, 13, 45, 30, 123); // month is 0-based: Feb 29 (leap year)
const d = new Date(t);
r.utcValue = t;
r.iso = d.toISOString();
r.parts = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCDay(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()];
r.epoch = new Date(0).toISOString();
r.negative = new Date(-86400000).toISOString();
r.overflow = new Date(Date.UTC(2023, 11, 32)).toISOString();
r.monthRollback = new Date(Date.UTC(2023, 2, 0)).getUTCDate();
r.twoDigitYear = Date.UTC(99, 0, 1) === Date.UTC(1999, 0, 1);

r.parse = {
  full: Date.parse("2020-01-02T03:04:05.006Z"),
  offset: new Date("2020-01-02T03:04:05+02:00").toISOString(),
  dateOnlyIsUTC: new Date("2020-06-15").toISOString(),
  yearMonth: new Date("2021-07").toISOString(),
  year: new Date("2022").toISOString(),
  extendedYear: new Date("+010000-01-01T00:00:00Z").getUTCFullYear(),
  invalid: Number.isNaN(Date.parse("not a date")),
};
r.invalidDate = [String(new Date(NaN)), new Date("garbage").getTime()];
try { new Date(NaN).toISOString(); } catch (e) { r.invalidISO = e.name; }

const m = new Date(Date.UTC(2021, 0, 31));
m.setUTCMonth(1); // Feb 31 -> Mar 3
r.setUTCMonth = m.toISOString();
m.setUTCHours(25, 61, 0, 0);
r.setUTCHours = m.toISOString();
const ret = m.setUTCFullYear(2000);
r.setterReturnsTime = ret === m.getTime();

const a = new Date("2024-01-01T00:00:00Z"), b = new Date("2024-12-25T12:00:00Z");
r.diffDays = (b - a) / 86400000;
r.compare = [a < b, a.getTime() === new Date(a).getTime(), +a === a.valueOf()];
r.addDays = new Date(a.getTime() + 45 * 86400000).toISOString().slice(0, 10);
r.toJSON = a.toJSON();
r.toUTCString = b.toUTCString();
r.maxDate = [new Date(8.64e15).toISOString(), new Date(8.64e15 + 1).getTime()];
r.dayNames = [0, 1, 2, 3, 4, 5, 6].map((i) => new Date(Date.UTC(2023, 0, 1 + i)).getUTCDay());
r.typeofNow = typeof Date.now();
r.dateCallIsString = typeof Date();
r.isLeap = [1900, 2000, 2023, 2024].map((y) => new Date(Date.UTC(y, 1, 29)).getUTCMonth() === 1);

export default r;
