// event loop ordering: sync, microtasks (queueMicrotask, promise then), timers (0 ms and delays), setInterval/clear
const order = [];
const done = new Promise((resolve) => {
  order.push("sync 1");
  setTimeout(() => order.push("timeout 0 (a)"), 0);
  setTimeout(() => order.push("timeout 0 (b)"), 0);
  queueMicrotask(() => order.push("microtask 1"));
  Promise.resolve().then(() => {
    order.push("then 1");
    queueMicrotask(() => order.push("microtask from then"));
  }).then(() => order.push("then 2"));
  queueMicrotask(() => order.push("microtask 2"));
  setTimeout(() => {
    order.push("timeout 0 (c)");
    Promise.resolve().then(() => order.push("then inside timeout"));
    // A later timer of a smaller delay fires first, by a second's margin:
    // how two timers set a moment apart race is a matter of time.
    setTimeout(() => {
      order.push("timeout 2000");
      resolve();
    }, 2000);
    setTimeout(() => order.push("nested timeout 0"), 0);
    setTimeout(() => order.push("timeout 20"), 20);
  }, 0);
  order.push("sync 2");
});
await done;

// setInterval + clearInterval
const ticks = await new Promise((resolve) => {
  let n = 0;
  const id = setInterval(() => {
    n++;
    if (n === 3) { clearInterval(id); setTimeout(() => resolve(n), 20); }
  }, 2);
});

// clearTimeout prevents the callback; ids are distinct
let cleared = "not run";
const id1 = setTimeout(() => { cleared = "ran"; }, 1);
const id2 = setTimeout(() => {}, 1);
clearTimeout(id1);
clearTimeout(undefined); // no-op
await new Promise((r) => setTimeout(r, 15));

// extra arguments are passed to the callback
const args = await new Promise((r) => setTimeout((a, b) => r([a, b]), 1, "x", "y"));

// await ordering vs then chains
const log2 = [];
(async () => { log2.push("async start"); await undefined; log2.push("after await"); })();
Promise.resolve().then(() => log2.push("then"));
log2.push("sync end");
await new Promise((r) => setTimeout(r, 0));

export default { order, ticks, cleared, idsDistinct: id1 !== id2, args, log2 };
