// The runner of `crucible run --lang deno`: imports the module named by its
// argument and reports its default export (awaited) or its uncaught error on
// fd 3 as one JSON object. It runs inside the program's own process: it is a
// convenience, not a boundary.
const encoder = new TextEncoder();

function report(text) {
  try {
    const out = Deno.openSync("/dev/fd/3", { write: true });
    out.writeSync(encoder.encode(text));
    out.close();
  } catch {
    // no result channel (or the program closed it)
  }
}

function describe(e) {
  if (e instanceof Error) {
    return { name: e.name, message: e.message, stack: String(e.stack ?? "") };
  }
  return { name: "Error", message: String(e), stack: "" };
}

try {
  const mod = await import(new URL(Deno.args[0], "file:///").href);
  const value = await mod.default;
  let text;
  try {
    text = JSON.stringify({ result: value === undefined ? null : value });
  } catch (e) {
    throw new TypeError("the default export cannot be encoded as JSON: " + (e?.message ?? e));
  }
  report(text);
} catch (e) {
  const err = describe(e);
  console.error(err.stack || `${err.name}: ${err.message}`);
  report(JSON.stringify({ error: err }));
  Deno.exit(1);
}
