// async/await: sequencing, error propagation, await on thenables and non-promises
const sleep = (ms, v) => new Promise((r) => setTimeout(() => r(v), ms));

async function add(a, b) { await null; return a + b; }
async function fails() { await sleep(1); throw new RangeError("bad"); }

const results = {};
results.sequential = await add(await add(1, 2), 3);

try { await fails(); results.caught = null; }
catch (e) { results.caught = `${e.name}:${e.message}`; }

// await on a plain thenable object
results.thenable = await { then(res) { res("from-thenable"); } };

// await on a non-promise value
results.plain = await 42;

// async arrow and async method
const obj = { async m(x) { return x * 2; } };
const arrow = async (x) => (await obj.m(x)) + 1;
results.arrowMethod = await arrow(10);

// ordering inside async functions
const log = [];
async function a() { log.push("a1"); await null; log.push("a2"); }
const p = a();
log.push("sync");
await p;
results.order = log;

// returning a promise from async unwraps it
results.unwrap = await (async () => sleep(5, "slept"))();

// rejection handled with .catch returns a value
results.catchValue = await fails().catch((e) => e.message.toUpperCase());

// async function always returns a promise
results.isPromise = (async () => 1)() instanceof Promise;

export default results;
