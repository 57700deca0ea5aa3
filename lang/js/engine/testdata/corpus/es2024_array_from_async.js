// ES2024 (newer than ES2023): Array.fromAsync
const r = {};
async function* gen() { yield 1; await null; yield 2; yield 3; }
r.fromAsyncGen = await Array.fromAsync(gen());
r.withMapper = await Array.fromAsync(gen(), async (x) => x * 10);
r.fromPromises = await Array.fromAsync([Promise.resolve("a"), "b", new Promise((res) => setTimeout(() => res("c"), 1))]);
r.fromArrayLike = await Array.fromAsync({ length: 2, 0: "x", 1: Promise.resolve("y") });
r.rejects = await Array.fromAsync((async function* () { yield 1; throw new Error("fail"); })()).catch((e) => e.message);
r.returnsPromise = Array.fromAsync([]) instanceof Promise;
export default r;
