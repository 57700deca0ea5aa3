// errors: Error subclasses, cause option, name/message, instanceof, AggregateError, built-in error types
const r = {};
class AppError extends Error {
  constructor(message, options) { super(message, options); this.name = "AppError"; }
}
class NotFound extends AppError {
  constructor(what, options) { super(`${what} not found`, options); this.name = "NotFound"; this.what = what; }
}

function load() {
  try { JSON.parse("{bad"); }
  catch (e) { throw new NotFound("config", { cause: e }); }
}
try { load(); } catch (e) {
  r.subclass = {
    name: e.name, message: e.message, what: e.what, str: String(e),
    chain: [e instanceof NotFound, e instanceof AppError, e instanceof Error],
    causeName: e.cause.name, causeIsSyntax: e.cause instanceof SyntaxError,
    ownCause: Object.hasOwn(e, "cause"), causeEnumerable: Object.getOwnPropertyDescriptor(e, "cause").enumerable,
  };
}
r.noCause = [Object.hasOwn(new Error("x"), "cause"), Object.hasOwn(new Error("x", {}), "cause"), new Error("x", { cause: undefined }).hasOwnProperty("cause")];
r.causeAnyValue = new Error("x", { cause: 42 }).cause;
r.builtins = [new TypeError("t"), new RangeError("r"), new SyntaxError("s"), new ReferenceError("f"), new EvalError("e"), new URIError("u")].map(String);
r.messageDefault = [new Error().message, String(new Error()), String(new Error(undefined))];

// errors thrown by the engine
const caught = [];
for (const f of [() => null.x, () => undefinedVar, () => new Array(-1), () => decodeURIComponent("%"), () => (1).toFixed(200), () => Symbol() + ""]) {
  try { f(); } catch (e) { caught.push(e.constructor.name); }
}
r.engineErrors = caught;

// throwing non-errors
try { throw { code: 7 }; } catch (e) { r.throwObject = e.code; }
try { throw "plain string"; } catch (e) { r.throwString = e; }
try { throw undefined; } catch (e) { r.throwUndefined = e === undefined; }

// optional catch binding
r.optionalCatch = (() => { try { throw 1; } catch { return "caught without binding"; } })();

// error properties
const err = new Error("msg");
r.properties = [Object.keys(err), typeof err.stack, Object.getOwnPropertyNames(err).includes("message")];
err.name = "Custom";
r.renamed = err.toString();
r.toStringOnObject = Error.prototype.toString.call({ name: "N", message: "M" });

// walking a cause chain
const chained = new Error("top", { cause: new Error("middle", { cause: new Error("root") }) });
const chain = [];
for (let e = chained; e; e = e.cause) chain.push(e.message);
r.causeChain = chain;

export default r;
