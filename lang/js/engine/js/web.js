// Web APIs for the QuickJS engine, in plain ECMAScript 2023.
//
// The whole file is one function expression. The host evaluates it as a
// global script and calls it with globalThis; it defines on that object, as
// non-enumerable, writable, configurable properties like real Web globals:
//
//   TextEncoder, TextDecoder (UTF-8 only), atob, btoa, structuredClone,
//   DOMException, URLSearchParams, Headers, Event, EventTarget,
//   AbortController, AbortSignal
//
// and returns { inspect, updateSearchParams }:
//
//   inspect(value, mapStack)
//                    the text console.log prints for a value (Node-like);
//                    it never throws. mapStack, if given, rewrites an
//                    error's stack before it is shown.
//   updateSearchParams(params, query)
//                    replaces the list of a URLSearchParams with the parse of
//                    query without calling its change hook, for a URL object
//                    whose search was set. The hook itself is the
//                    undocumented second argument of the constructor,
//                    new URLSearchParams(init, onChange): onChange() is called
//                    after every change made through the params object.
//
// Arguments are treated as hostile: internals live in private fields,
// recursion is bounded (structuredClone works from an explicit stack,
// inspect stops at depth 2) and inspect catches whatever a getter or a
// Proxy throws.
(function (g) {
  "use strict";

  // ---------------------------------------------------------------------
  // Intrinsics, captured before user code can replace them.

  const {
    Array, ArrayBuffer, BigInt, Boolean, DataView, Date, Error, EvalError, Function, Int8Array, JSON, Map,
    Math, Number, Object, Promise, RangeError, Reflect, ReferenceError, RegExp, Set, String, Symbol,
    SyntaxError, TypeError, Uint8Array, URIError, WeakMap, WeakSet,
  } = g;
  const ObjectKeys = Object.keys;
  const defineProperty = Object.defineProperty;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const getPrototypeOf = Object.getPrototypeOf;
  const hasOwn = Object.hasOwn;
  const ownKeys = Reflect.ownKeys;
  const getOwnPropertySymbols = Object.getOwnPropertySymbols;
  const apply = Reflect.apply;
  const isArray = Array.isArray;
  const fromCharCode = String.fromCharCode;
  const encodeURIComponent_ = g.encodeURIComponent;
  const decodeURIComponent_ = g.decodeURIComponent;

  // uncurry(f)(self, ...args) calls f with this = self, natively.
  const uncurry = (fn) => Function.prototype.call.bind(fn);
  const getterOf = (proto, key) => uncurry(getOwnPropertyDescriptor(proto, key).get);

  const TypedArray = getPrototypeOf(Uint8Array);
  const typedArrayTag = getterOf(TypedArray.prototype, Symbol.toStringTag);
  const typedArrayBuffer = getterOf(TypedArray.prototype, "buffer");
  const typedArrayOffset = getterOf(TypedArray.prototype, "byteOffset");
  const typedArrayByteLength = getterOf(TypedArray.prototype, "byteLength");
  const typedArrayLength = getterOf(TypedArray.prototype, "length");
  const bufferByteLength = getterOf(ArrayBuffer.prototype, "byteLength");
  const bufferSlice = uncurry(ArrayBuffer.prototype.slice);
  const hasResizable = getOwnPropertyDescriptor(ArrayBuffer.prototype, "resizable") !== undefined;
  const bufferResizable = hasResizable ? getterOf(ArrayBuffer.prototype, "resizable") : () => false;
  const bufferMaxByteLength = hasResizable ? getterOf(ArrayBuffer.prototype, "maxByteLength") : null;
  const bufferTransfer = typeof ArrayBuffer.prototype.transfer === "function"
    ? uncurry(ArrayBuffer.prototype.transfer) : null;
  const SAB = typeof SharedArrayBuffer === "function" ? SharedArrayBuffer : null;
  const sharedByteLength = SAB ? getterOf(SAB.prototype, "byteLength") : null;
  const viewBuffer = getterOf(DataView.prototype, "buffer");
  const viewOffset = getterOf(DataView.prototype, "byteOffset");
  const viewByteLength = getterOf(DataView.prototype, "byteLength");
  const mapSize = getterOf(Map.prototype, "size");
  const mapEntries = uncurry(Map.prototype.entries);
  const setSize = getterOf(Set.prototype, "size");
  const setValues = uncurry(Set.prototype.values);
  const weakMapHas = uncurry(WeakMap.prototype.has);
  const weakSetHas = uncurry(WeakSet.prototype.has);
  const weakRefDeref = typeof WeakRef === "function" ? uncurry(WeakRef.prototype.deref) : null;
  const registryUnregister = typeof FinalizationRegistry === "function"
    ? uncurry(FinalizationRegistry.prototype.unregister) : null;
  const dateGetTime = uncurry(Date.prototype.getTime);
  const dateToISOString = uncurry(Date.prototype.toISOString);
  const regExpSource = getterOf(RegExp.prototype, "source");
  const regExpToString = uncurry(RegExp.prototype.toString);
  const numberValueOf = uncurry(Number.prototype.valueOf);
  const stringValueOf = uncurry(String.prototype.valueOf);
  const booleanValueOf = uncurry(Boolean.prototype.valueOf);
  const bigintValueOf = uncurry(BigInt.prototype.valueOf);
  const symbolValueOf = uncurry(Symbol.prototype.valueOf);
  const symbolToString = uncurry(Symbol.prototype.toString);
  const functionToString = uncurry(Function.prototype.toString);
  const objectToString = uncurry(Object.prototype.toString);
  const IteratorPrototype = getPrototypeOf(getPrototypeOf([][Symbol.iterator]()));

  const typedArrayConstructors = { __proto__: null };
  for (const name of ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
    "Int32Array", "Uint32Array", "Float16Array", "Float32Array", "Float64Array",
    "BigInt64Array", "BigUint64Array"]) {
    if (typeof g[name] === "function") typedArrayConstructors[name] = g[name];
  }

  // succeeds(fn, v) is true when fn(v) does not throw: a built-in method
  // that throws on an object without its internal slot is a brand check.
  function succeeds(fn, v) {
    try {
      fn(v);
      return true;
    } catch {
      return false;
    }
  }
  const isObject = (v) => (typeof v === "object" && v !== null) || typeof v === "function";
  const isTypedArray = (v) => typedArrayTag(v) !== undefined;
  const isArrayBuffer = (v) => succeeds(bufferByteLength, v);
  const isSharedArrayBuffer = (v) => sharedByteLength !== null && succeeds(sharedByteLength, v);
  const isDataView = (v) => succeeds(viewBuffer, v);

  const brandChecks = {
    __proto__: null,
    ArrayBuffer: isArrayBuffer,
    SharedArrayBuffer: isSharedArrayBuffer,
    DataView: isDataView,
    Map: (v) => succeeds(mapSize, v),
    Set: (v) => succeeds(setSize, v),
    WeakMap: (v) => succeeds((o) => weakMapHas(o, {}), v),
    WeakSet: (v) => succeeds((o) => weakSetHas(o, {}), v),
    WeakRef: (v) => weakRefDeref !== null && succeeds(weakRefDeref, v),
    FinalizationRegistry: (v) => registryUnregister !== null && succeeds((o) => registryUnregister(o, {}), v),
    Promise: (v) => v instanceof Promise,
    Date: (v) => succeeds(dateGetTime, v),
    RegExp: (v) => v !== RegExp.prototype && succeeds(regExpSource, v),
    Boolean: (v) => succeeds(booleanValueOf, v),
    Number: (v) => succeeds(numberValueOf, v),
    String: (v) => succeeds(stringValueOf, v),
    BigInt: (v) => succeeds(bigintValueOf, v),
    Symbol: (v) => succeeds(symbolValueOf, v),
    Error: () => true, // the tag is "Error" only with [[ErrorData]] or a Symbol.toStringTag
    Arguments: () => true,
  };

  // Web platform classes register here under their Symbol.toStringTag:
  // brand(v) tells an instance, view(v) lists the [name, value] pairs that
  // inspect shows. structuredClone refuses them.
  const platformClasses = { __proto__: null };

  // kindOf names the type of an object by its internal slots: "Function",
  // "Array", "TypedArray", a key of brandChecks, "Platform" or "Object" for
  // anything else, class instances included. Object.prototype.toString
  // names the candidate and its brand check confirms it, which spares the
  // throws of trying every check; an object whose Symbol.toStringTag hides
  // its type counts as "Object".
  function kindOf(v) {
    if (typeof v === "function") return "Function";
    let tag;
    try {
      if (isArray(v)) return "Array";
      if (isTypedArray(v)) return "TypedArray";
      if (isDOMException(v)) return "Error";
      tag = objectToString(v).slice(8, -1);
      const check = brandChecks[tag];
      if (check !== undefined) return check(v) ? tag : "Object";
      const platform = platformClasses[tag];
      return platform !== undefined && platform.brand(v) ? "Platform" : "Object";
    } catch {
      return "Object"; // a revoked or throwing proxy
    }
  }

  // The engine's own classes: their bytecode leaves out their source text
  // (see internal/bytecode), from which console would tell a class.
  const ownClasses = new WeakSet();

  function defineGlobal(name, value) {
    defineProperty(g, name, { value, writable: true, enumerable: false, configurable: true });
  }
  function toStringTag(cls, tag) {
    defineProperty(cls.prototype, Symbol.toStringTag, { value: tag, configurable: true });
  }
  function requireArgs(given, needed, what) {
    if (given < needed) {
      throw new TypeError(`${what}: ${needed} argument${needed > 1 ? "s" : ""} required, but only ${given} present`);
    }
  }
  // WebIDL dictionary argument: undefined and null are empty.
  function dictionary(v, what) {
    if (v === undefined || v === null) return {};
    if (!isObject(v)) throw new TypeError(`${what}: options must be an object`);
    return v;
  }
  // WebIDL USVString: lone surrogates become U+FFFD.
  const loneSurrogates = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
  function toUSVString(v) {
    const s = `${v}`;
    return /[\uD800-\uDFFF]/.test(s) ? s.replace(loneSurrogates, "\uFFFD") : s;
  }
  // WebIDL ByteString: every code unit must be below 0x100.
  function toByteString(v, what) {
    const s = `${v}`;
    if (/[^\x00-\xFF]/.test(s)) throw new TypeError(`${what}: ${JSON.stringify(s)} is not a valid ByteString`);
    return s;
  }

  // Iterators over a list of pairs, as Web IDL iterable<K, V> declarations
  // have: live, they read the current list at every step.
  function iteratorFactory(tag) {
    class PairIterator {
      #source;
      #kind;
      #index = 0;
      constructor(source, kind) {
        this.#source = source;
        this.#kind = kind;
      }
      next() {
        if (this.#source === null) return { value: undefined, done: true };
        const pairs = this.#source();
        if (this.#index >= pairs.length) {
          this.#source = null;
          return { value: undefined, done: true };
        }
        const pair = pairs[this.#index++];
        const value = this.#kind === "keys" ? pair[0] : this.#kind === "values" ? pair[1] : [pair[0], pair[1]];
        return { value, done: false };
      }
    }
    ownClasses.add(PairIterator);
    Object.setPrototypeOf(PairIterator.prototype, IteratorPrototype);
    delete PairIterator.prototype.constructor;
    toStringTag(PairIterator, tag);
    return (source, kind) => new PairIterator(source, kind);
  }

  // ---------------------------------------------------------------------
  // DOMException

  const domExceptionCodes = {
    __proto__: null,
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
    NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InUseAttributeError: 10,
    InvalidStateError: 11, SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14,
    InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18, NetworkError: 19,
    AbortError: 20, URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23,
    InvalidNodeTypeError: 24, DataCloneError: 25,
  };

  let isDOMException;
  class DOMException extends Error {
    #name;
    constructor(message = "", name = "Error") {
      super(`${message}`);
      this.#name = `${name}`;
    }
    get name() {
      return this.#name;
    }
    get code() {
      return domExceptionCodes[this.#name] ?? 0;
    }
    static {
      isDOMException = (v) => isObject(v) && #name in v;
    }
  }

  // ---------------------------------------------------------------------
  // UTF-8

  // writeUTF8 encodes str into the bytes of out, as far as whole characters
  // fit, with U+FFFD for lone surrogates.
  function writeUTF8(str, out) {
    const n = str.length;
    const cap = out.length;
    let i = 0;
    let j = 0;
    while (i < n) {
      let c = str.charCodeAt(i);
      if (c < 0x80) {
        if (j >= cap) break;
        out[j++] = c;
        i++;
        continue;
      }
      let units = 1;
      if (c >= 0xd800 && c <= 0xdfff) {
        const d = c <= 0xdbff && i + 1 < n ? str.charCodeAt(i + 1) : 0;
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          units = 2;
        } else {
          c = 0xfffd;
        }
      }
      if (c < 0x800) {
        if (j + 2 > cap) break;
        out[j++] = 0xc0 | (c >> 6);
      } else if (c < 0x10000) {
        if (j + 3 > cap) break;
        out[j++] = 0xe0 | (c >> 12);
        out[j++] = 0x80 | ((c >> 6) & 0x3f);
      } else {
        if (j + 4 > cap) break;
        out[j++] = 0xf0 | (c >> 18);
        out[j++] = 0x80 | ((c >> 12) & 0x3f);
        out[j++] = 0x80 | ((c >> 6) & 0x3f);
      }
      out[j++] = 0x80 | (c & 0x3f);
      i += units;
    }
    return { read: i, written: j };
  }

  function encodeUTF8(str) {
    const n = str.length;
    if (!/[^\x00-\x7f]/.test(str)) {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) out[i] = str.charCodeAt(i);
      return out;
    }
    // Bytes beyond one per code unit, counted over the non-ASCII units only:
    // 1 for U+0080..U+07FF and for each half of a surrogate pair, 2 for the
    // rest of the BMP and for a lone surrogate (as U+FFFD).
    const wide = str.replace(/[\x00-\x7f]+/g, "");
    let size = n;
    for (let i = 0; i < wide.length; i++) {
      const c = wide.charCodeAt(i);
      size += c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 1 : 2;
    }
    if (/[\uD800-\uDFFF]/.test(str)) size += str.match(loneSurrogates)?.length ?? 0;
    const out = new Uint8Array(size);
    writeUTF8(str, out);
    return out;
  }

  // Collects UTF-16 code units and strings into one string.
  class StringBuilder {
    parts = [];
    units = [];
    push(u) {
      this.units.push(u);
      if (this.units.length >= 8192) this.flush();
    }
    append(s) {
      this.flush();
      this.parts.push(s);
    }
    flush() {
      if (this.units.length > 0) {
        this.parts.push(apply(fromCharCode, null, this.units));
        this.units = [];
      }
    }
    toString() {
      this.flush();
      return this.parts.length === 1 ? this.parts[0] : this.parts.join("");
    }
  }

  // latin1 reads bytes as a string of the same length, natively.
  function latin1(bytes) {
    const parts = [];
    for (let i = 0; i < bytes.length; i += 8192) parts.push(apply(fromCharCode, null, bytes.subarray(i, i + 8192)));
    return parts.join("");
  }

  const newDecoderState = () => ({ cp: 0, needed: 0, seen: 0, lower: 0x80, upper: 0xbf });
  const nonASCII = /[\x80-\xff]/g;

  // decodeUTF8 is the WHATWG UTF-8 decoder: every maximal invalid subpart
  // becomes one U+FFFD (or a TypeError when fatal). st carries a partial
  // sequence from one call to the next; flush ends the stream. Long runs
  // of ASCII are copied natively, from a latin1 reading of the bytes; after
  // a short one the next 256 bytes go byte by byte.
  function decodeUTF8(bytes, st, fatal, flush) {
    let { cp, needed, seen, lower, upper } = st;
    const out = new StringBuilder();
    const fail = () => {
      if (fatal) {
        Object.assign(st, newDecoderState());
        throw new TypeError("The encoded data is not valid UTF-8");
      }
      out.push(0xfffd);
    };
    const n = bytes.length;
    const text = latin1(bytes);
    let probeAt = 0;
    let i = 0;
    while (i < n) {
      const b = bytes[i];
      if (needed === 0) {
        if (b < 0x80) {
          if (i >= probeAt) {
            nonASCII.lastIndex = i;
            const end = nonASCII.test(text) ? nonASCII.lastIndex - 1 : n;
            if (end - i >= 16) {
              out.append(text.slice(i, end));
              i = end;
              continue;
            }
            probeAt = i + 256;
          }
          out.push(b);
          i++;
          continue;
        }
        i++;
        if (b >= 0xc2 && b <= 0xdf) {
          needed = 1;
          cp = b & 0x1f;
        } else if (b >= 0xe0 && b <= 0xef) {
          if (b === 0xe0) lower = 0xa0;
          if (b === 0xed) upper = 0x9f;
          needed = 2;
          cp = b & 0xf;
        } else if (b >= 0xf0 && b <= 0xf4) {
          if (b === 0xf0) lower = 0x90;
          if (b === 0xf4) upper = 0x8f;
          needed = 3;
          cp = b & 0x7;
        } else {
          fail();
        }
      } else if (b < lower || b > upper) {
        // The byte is not consumed: it starts the next sequence.
        cp = needed = seen = 0;
        lower = 0x80;
        upper = 0xbf;
        fail();
      } else {
        i++;
        lower = 0x80;
        upper = 0xbf;
        cp = (cp << 6) | (b & 0x3f);
        if (++seen === needed) {
          if (cp > 0xffff) {
            out.push(0xd800 + ((cp - 0x10000) >> 10));
            out.push(0xdc00 + ((cp - 0x10000) & 0x3ff));
          } else {
            out.push(cp);
          }
          cp = needed = seen = 0;
        }
      }
    }
    if (flush && needed !== 0) {
      cp = needed = seen = 0;
      lower = 0x80;
      upper = 0xbf;
      fail();
    }
    Object.assign(st, { cp, needed, seen, lower, upper });
    return out.toString();
  }

  // bytesOf views the bytes of an AllowSharedBufferSource without copying.
  function bytesOf(input, what) {
    if (isTypedArray(input)) {
      return new Uint8Array(typedArrayBuffer(input), typedArrayOffset(input), typedArrayByteLength(input));
    }
    if (isDataView(input)) return new Uint8Array(viewBuffer(input), viewOffset(input), viewByteLength(input));
    if (isArrayBuffer(input) || isSharedArrayBuffer(input)) return new Uint8Array(input);
    throw new TypeError(`${what}: argument is not an ArrayBuffer, SharedArrayBuffer or a view on one`);
  }

  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input = "") {
      return encodeUTF8(`${input}`);
    }
    encodeInto(source, destination) {
      requireArgs(arguments.length, 2, "TextEncoder.encodeInto");
      const s = `${source}`;
      if (typedArrayTag(destination) !== "Uint8Array") {
        throw new TypeError("TextEncoder.encodeInto: argument 2 is not a Uint8Array");
      }
      return writeUTF8(s, destination);
    }
    #brand = true; // for "#brand in v"
    static {
      platformClasses.TextEncoder = {
        brand: (v) => #brand in v,
        view: () => [["encoding", "utf-8"]],
      };
    }
  }
  toStringTag(TextEncoder, "TextEncoder");

  const utf8Labels = ["unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8"];

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    #state = newDecoderState();
    #bomSeen = false;
    #doNotFlush = false;
    constructor(label = "utf-8", options = undefined) {
      const name = `${label}`.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "").toLowerCase();
      if (!utf8Labels.includes(name)) {
        throw new RangeError(`TextDecoder: the encoding label provided ('${label}') is not supported; only UTF-8 is`);
      }
      const o = dictionary(options, "TextDecoder");
      this.#fatal = Boolean(o.fatal);
      this.#ignoreBOM = Boolean(o.ignoreBOM);
    }
    get encoding() {
      return "utf-8";
    }
    get fatal() {
      return this.#fatal;
    }
    get ignoreBOM() {
      return this.#ignoreBOM;
    }
    decode(input = undefined, options = undefined) {
      const bytes = input === undefined ? new Uint8Array(0) : bytesOf(input, "TextDecoder.decode");
      const stream = Boolean(dictionary(options, "TextDecoder.decode").stream);
      if (!this.#doNotFlush) {
        this.#state = newDecoderState();
        this.#bomSeen = false;
      }
      this.#doNotFlush = stream;
      let s = decodeUTF8(bytes, this.#state, this.#fatal, !stream);
      if (!this.#bomSeen && s.length > 0) {
        this.#bomSeen = true;
        if (!this.#ignoreBOM && s.charCodeAt(0) === 0xfeff) s = s.slice(1);
      }
      return s;
    }
    static {
      platformClasses.TextDecoder = {
        brand: (v) => #fatal in v,
        view: (v) => [["encoding", "utf-8"], ["fatal", v.#fatal], ["ignoreBOM", v.#ignoreBOM]],
      };
    }
  }
  toStringTag(TextDecoder, "TextDecoder");

  // ---------------------------------------------------------------------
  // Base64 (forgiving-base64 of the HTML standard)

  const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const base64Codes = new Uint8Array(64);
  const base64Index = new Int8Array(128).fill(-1);
  for (let i = 0; i < 64; i++) {
    base64Codes[i] = base64Alphabet.charCodeAt(i);
    base64Index[base64Codes[i]] = i;
  }

  function atob(data) {
    requireArgs(arguments.length, 1, "atob");
    let s = `${data}`.replace(/[\t\n\f\r ]+/g, "");
    if (s.length % 4 === 0) s = s.replace(/==?$/, "");
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) {
      throw new DOMException("atob: the string to be decoded is not correctly encoded", "InvalidCharacterError");
    }
    const n = s.length;
    const out = new Uint8Array(Math.floor((n * 3) / 4));
    let i = 0;
    let j = 0;
    for (; i + 4 <= n; i += 4) {
      const bits = (base64Index[s.charCodeAt(i)] << 18) | (base64Index[s.charCodeAt(i + 1)] << 12) |
        (base64Index[s.charCodeAt(i + 2)] << 6) | base64Index[s.charCodeAt(i + 3)];
      out[j++] = bits >> 16;
      out[j++] = bits >> 8;
      out[j++] = bits;
    }
    if (n - i >= 2) {
      // The bits left over after the last whole byte are dropped.
      const bits = (base64Index[s.charCodeAt(i)] << 18) | (base64Index[s.charCodeAt(i + 1)] << 12) |
        (n - i === 3 ? base64Index[s.charCodeAt(i + 2)] << 6 : 0);
      out[j++] = bits >> 16;
      if (n - i === 3) out[j++] = bits >> 8;
    }
    return latin1(out);
  }

  function btoa(data) {
    requireArgs(arguments.length, 1, "btoa");
    const s = `${data}`;
    if (/[^\x00-\xFF]/.test(s)) {
      throw new DOMException("btoa: the string to be encoded contains characters outside of the Latin1 range",
        "InvalidCharacterError");
    }
    const n = s.length;
    const out = new Uint8Array(Math.ceil(n / 3) * 4);
    const a = base64Codes;
    let i = 0;
    let j = 0;
    for (; i + 3 <= n; i += 3) {
      const bits = (s.charCodeAt(i) << 16) | (s.charCodeAt(i + 1) << 8) | s.charCodeAt(i + 2);
      out[j++] = a[bits >> 18];
      out[j++] = a[(bits >> 12) & 63];
      out[j++] = a[(bits >> 6) & 63];
      out[j++] = a[bits & 63];
    }
    if (i < n) {
      const two = n - i === 2;
      const bits = (s.charCodeAt(i) << 16) | (two ? s.charCodeAt(i + 1) << 8 : 0);
      out[j++] = a[bits >> 18];
      out[j++] = a[(bits >> 12) & 63];
      out[j++] = two ? a[(bits >> 6) & 63] : 0x3d;
      out[j++] = 0x3d;
    }
    return latin1(out);
  }

  // ---------------------------------------------------------------------
  // structuredClone

  const errorConstructors = {
    __proto__: null,
    Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError,
  };

  function dataCloneError(v) {
    let what;
    if (typeof v === "symbol") what = symbolToString(v);
    else if (typeof v === "function") what = inspect(v);
    else {
      try {
        what = `#<${constructorName(v) ?? "Object"}>`;
      } catch {
        what = "#<Object>";
      }
    }
    return new DOMException(`${what} could not be cloned`, "DataCloneError");
  }

  function cloneBuffer(buf) {
    let copy;
    try {
      copy = bufferSlice(buf, 0);
    } catch {
      throw new DOMException("a detached ArrayBuffer could not be cloned", "DataCloneError");
    }
    if (bufferResizable(buf)) {
      const resizable = new ArrayBuffer(bufferByteLength(buf), { maxByteLength: bufferMaxByteLength(buf) });
      new Uint8Array(resizable).set(new Uint8Array(copy));
      return resizable;
    }
    return copy;
  }

  function structuredClone(value, options = undefined) {
    requireArgs(arguments.length, 1, "structuredClone");
    const o = dictionary(options, "structuredClone");
    const transfer = [];
    if (o.transfer !== undefined) {
      if (!isObject(o.transfer) || typeof o.transfer[Symbol.iterator] !== "function") {
        throw new TypeError("structuredClone: options.transfer is not iterable");
      }
      for (const t of Array.from(o.transfer)) {
        if (!isObject(t)) throw new TypeError("structuredClone: transfer list entries must be objects");
        if (!isArrayBuffer(t)) throw dataCloneError(t);
        if (transfer.includes(t)) throw new DOMException("an ArrayBuffer is transferred twice", "DataCloneError");
        try {
          bufferSlice(t, 0, 0);
        } catch {
          throw new DOMException("a detached ArrayBuffer could not be transferred", "DataCloneError");
        }
        transfer.push(t);
      }
    }

    // Objects are created when first met, so that shared and cyclic
    // references resolve through memory; their contents are filled in later
    // from the work stack, which keeps deep nesting off the call stack.
    const memory = new Map();
    const work = [];
    const copyProperties = (from, to) => {
      work.push(() => {
        for (const key of ObjectKeys(from)) {
          if (!hasOwn(from, key)) continue;
          defineProperty(to, key, { value: clone(from[key]), writable: true, enumerable: true, configurable: true });
        }
      });
    };
    const clone = (v) => {
      if (typeof v === "function" || typeof v === "symbol") throw dataCloneError(v);
      if (typeof v !== "object" || v === null) return v;
      let out = memory.get(v);
      if (out !== undefined) return out;
      switch (kindOf(v)) {
        case "Object":
          // Any other object, class instances included, becomes a plain
          // object with its own enumerable string-keyed properties.
          out = {};
          memory.set(v, out);
          copyProperties(v, out);
          return out;
        case "Array":
          out = new Array(v.length);
          memory.set(v, out);
          copyProperties(v, out);
          return out;
        case "TypedArray":
        case "DataView": {
          const typed = isTypedArray(v);
          const buffer = typed ? typedArrayBuffer(v) : viewBuffer(v);
          if (isSharedArrayBuffer(buffer)) throw dataCloneError(buffer);
          const bufferCopy = clone(buffer);
          try {
            out = typed
              ? new typedArrayConstructors[typedArrayTag(v)](bufferCopy, typedArrayOffset(v), typedArrayLength(v))
              : new DataView(bufferCopy, viewOffset(v), viewByteLength(v));
          } catch {
            throw new DOMException("an out-of-bounds view could not be cloned", "DataCloneError");
          }
          break;
        }
        case "ArrayBuffer":
          out = cloneBuffer(v);
          break;
        case "Boolean":
          out = Object(booleanValueOf(v));
          break;
        case "Number":
          out = Object(numberValueOf(v));
          break;
        case "String":
          out = Object(stringValueOf(v));
          break;
        case "BigInt":
          out = Object(bigintValueOf(v));
          break;
        case "Date":
          out = new Date(dateGetTime(v));
          break;
        case "RegExp":
          out = new RegExp(v); // copies [[OriginalSource]] and [[OriginalFlags]]; lastIndex is 0
          break;
        case "Map": {
          out = new Map();
          const entries = Array.from(mapEntries(v));
          work.push(() => {
            for (const [k, val] of entries) out.set(clone(k), clone(val));
          });
          break;
        }
        case "Set": {
          out = new Set();
          const values = Array.from(setValues(v));
          work.push(() => {
            for (const val of values) out.add(clone(val));
          });
          break;
        }
        case "Error": {
          if (isDOMException(v)) {
            out = new DOMException(v.message, v.name);
            break;
          }
          const name = `${v.name}`;
          const messageDesc = getOwnPropertyDescriptor(v, "message");
          const message = messageDesc && "value" in messageDesc ? `${messageDesc.value}` : undefined;
          const Ctor = errorConstructors[name] ?? Error;
          out = message === undefined ? new Ctor() : new Ctor(message);
          memory.set(v, out);
          const stackDesc = getOwnPropertyDescriptor(v, "stack");
          const stack = stackDesc && "value" in stackDesc ? stackDesc.value : v.stack;
          if (typeof stack === "string") {
            defineProperty(out, "stack", { value: stack, writable: true, enumerable: false, configurable: true });
          }
          const causeDesc = getOwnPropertyDescriptor(v, "cause");
          if (causeDesc && "value" in causeDesc) {
            defineProperty(out, "cause", {
              value: clone(causeDesc.value), writable: true, enumerable: false, configurable: true,
            });
          }
          return out;
        }
        default:
          // SharedArrayBuffer, Symbol objects, WeakMap, WeakSet, WeakRef,
          // FinalizationRegistry, Promise, arguments and Web platform objects
          throw dataCloneError(v);
      }
      memory.set(v, out);
      return out;
    };

    const result = clone(value);
    while (work.length > 0) work.pop()();
    // The clone holds copies; transferring detaches the originals.
    if (bufferTransfer !== null) for (const t of transfer) bufferTransfer(t);
    return result;
  }

  // ---------------------------------------------------------------------
  // URLSearchParams (application/x-www-form-urlencoded)

  function percentDecode(s) {
    const bytes = encodeUTF8(s);
    const out = new Uint8Array(bytes.length);
    const hex = (b) => (b >= 0x30 && b <= 0x39 ? b - 0x30 : (b | 0x20) >= 0x61 && (b | 0x20) <= 0x66 ? (b | 0x20) - 0x57 : -1);
    let j = 0;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      if (b === 0x25 && i + 2 < bytes.length) {
        const h = hex(bytes[i + 1]);
        const l = hex(bytes[i + 2]);
        if (h >= 0 && l >= 0) {
          out[j++] = (h << 4) | l;
          i += 2;
          continue;
        }
      }
      out[j++] = b;
    }
    return decodeUTF8(out.subarray(0, j), newDecoderState(), false, true);
  }

  function formDecode(s) {
    if (s.includes("+")) s = s.replace(/\+/g, " ");
    if (!s.includes("%")) return s;
    try {
      return decodeURIComponent_(s); // the same where it succeeds, and native
    } catch {
      return percentDecode(s);
    }
  }

  function parseQuery(query) {
    const list = [];
    for (const part of query.split("&")) {
      if (part === "") continue;
      const eq = part.indexOf("=");
      const name = eq < 0 ? part : part.slice(0, eq);
      const value = eq < 0 ? "" : part.slice(eq + 1);
      list.push([formDecode(name), formDecode(value)]);
    }
    return list;
  }

  // encodeURIComponent leaves !'()~ alone and writes a space as %20; the
  // urlencoded serializer escapes the former and writes the latter as +.
  function formEncode(s) {
    return encodeURIComponent_(s).replace(/%20|[!'()~]/g,
      (m) => (m === "%20" ? "+" : "%" + m.charCodeAt(0).toString(16).toUpperCase()));
  }

  // pairsOf converts a WebIDL sequence<sequence<T>> or record<T, T>
  // argument to a list of pairs, each string converted by convert.
  function pairsOf(init, convert, what) {
    const pairs = [];
    const iterator = init[Symbol.iterator];
    if (iterator !== undefined && iterator !== null) {
      if (typeof iterator !== "function") throw new TypeError(`${what}: argument is not iterable`);
      for (const pair of init) {
        if (!isObject(pair)) throw new TypeError(`${what}: each pair must be an iterable [name, value]`);
        const items = Array.from(pair);
        if (items.length !== 2) {
          throw new TypeError(`${what}: each pair must have exactly 2 items, not ${items.length}`);
        }
        pairs.push([convert(items[0]), convert(items[1])]);
      }
      return pairs;
    }
    for (const key of ownKeys(init)) {
      const desc = getOwnPropertyDescriptor(init, key);
      if (desc === undefined || !desc.enumerable) continue;
      if (typeof key === "symbol") throw new TypeError(`${what}: record keys cannot be symbols`);
      pairs.push([convert(key), convert(init[key])]);
    }
    return pairs;
  }

  const urlSearchParamsIterator = iteratorFactory("URLSearchParams Iterator");
  let updateSearchParams;

  class URLSearchParams {
    #list = [];
    #onChange = null;
    constructor(init = "", onChange = undefined) {
      if (typeof onChange === "function") this.#onChange = onChange;
      if (isObject(init)) {
        this.#list = #list in init
          ? init.#list.map((p) => [p[0], p[1]])
          : pairsOf(init, toUSVString, "URLSearchParams");
      } else {
        const s = toUSVString(init);
        this.#list = parseQuery(s.charCodeAt(0) === 0x3f ? s.slice(1) : s);
      }
    }
    #changed() {
      if (this.#onChange !== null) apply(this.#onChange, undefined, []);
    }
    get size() {
      return this.#list.length;
    }
    append(name, value) {
      requireArgs(arguments.length, 2, "URLSearchParams.append");
      this.#list.push([toUSVString(name), toUSVString(value)]);
      this.#changed();
    }
    delete(name, value = undefined) {
      requireArgs(arguments.length, 1, "URLSearchParams.delete");
      name = toUSVString(name);
      if (value === undefined) {
        this.#list = this.#list.filter((p) => p[0] !== name);
      } else {
        value = toUSVString(value);
        this.#list = this.#list.filter((p) => p[0] !== name || p[1] !== value);
      }
      this.#changed();
    }
    get(name) {
      requireArgs(arguments.length, 1, "URLSearchParams.get");
      name = toUSVString(name);
      const pair = this.#list.find((p) => p[0] === name);
      return pair === undefined ? null : pair[1];
    }
    getAll(name) {
      requireArgs(arguments.length, 1, "URLSearchParams.getAll");
      name = toUSVString(name);
      return this.#list.filter((p) => p[0] === name).map((p) => p[1]);
    }
    has(name, value = undefined) {
      requireArgs(arguments.length, 1, "URLSearchParams.has");
      name = toUSVString(name);
      if (value === undefined) return this.#list.some((p) => p[0] === name);
      value = toUSVString(value);
      return this.#list.some((p) => p[0] === name && p[1] === value);
    }
    set(name, value) {
      requireArgs(arguments.length, 2, "URLSearchParams.set");
      name = toUSVString(name);
      value = toUSVString(value);
      const i = this.#list.findIndex((p) => p[0] === name);
      if (i < 0) {
        this.#list.push([name, value]);
      } else {
        this.#list[i][1] = value;
        this.#list = this.#list.filter((p, j) => j <= i || p[0] !== name);
      }
      this.#changed();
    }
    sort() {
      // Array.prototype.sort is stable; < compares UTF-16 code units.
      this.#list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      this.#changed();
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== "function") throw new TypeError("URLSearchParams.forEach: callback is not a function");
      for (let i = 0; i < this.#list.length; i++) {
        const [name, value] = this.#list[i];
        apply(callback, thisArg, [value, name, this]);
      }
    }
    keys() {
      return urlSearchParamsIterator(() => this.#list, "keys");
    }
    values() {
      return urlSearchParamsIterator(() => this.#list, "values");
    }
    entries() {
      return urlSearchParamsIterator(() => this.#list, "entries");
    }
    toString() {
      return this.#list.map((p) => `${formEncode(p[0])}=${formEncode(p[1])}`).join("&");
    }
    static {
      updateSearchParams = (params, query) => {
        const s = toUSVString(query);
        params.#list = parseQuery(s.charCodeAt(0) === 0x3f ? s.slice(1) : s);
      };
      platformClasses.URLSearchParams = {
        brand: (v) => #list in v,
        view: (v) => v.#list,
        arrows: true,
      };
    }
  }
  defineProperty(URLSearchParams.prototype, Symbol.iterator,
    { value: URLSearchParams.prototype.entries, writable: true, configurable: true });
  toStringTag(URLSearchParams, "URLSearchParams");

  // ---------------------------------------------------------------------
  // Headers

  const tokenPattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

  function headerName(name) {
    const s = toByteString(name, "Headers");
    if (!tokenPattern.test(s)) throw new TypeError(`Headers: invalid header name ${JSON.stringify(s)}`);
    return s.toLowerCase();
  }
  function headerValue(value) {
    const s = toByteString(value, "Headers").replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
    if (/[\0\r\n]/.test(s)) throw new TypeError(`Headers: invalid header value ${JSON.stringify(s)}`);
    return s;
  }

  const headersIterator = iteratorFactory("Headers Iterator");

  class Headers {
    #list = []; // [lowercase name, value] in the order they were added
    #sorted = null; // sort-and-combine of #list, dropped on every change
    constructor(init = undefined) {
      if (init === undefined) return;
      if (!isObject(init)) {
        throw new TypeError("Headers: argument must be a Headers object, an array of pairs or a record");
      }
      if (#list in init) {
        this.#list = init.#list.map((p) => [p[0], p[1]]);
        return;
      }
      for (const [name, value] of pairsOf(init, (v) => toByteString(v, "Headers"), "Headers")) {
        this.#list.push([headerName(name), headerValue(value)]);
      }
    }
    #pairs() {
      if (this.#sorted !== null) return this.#sorted;
      const byName = new Map();
      for (const [name, value] of this.#list) {
        const values = byName.get(name);
        if (values === undefined) byName.set(name, [value]);
        else values.push(value);
      }
      const sorted = [];
      for (const name of Array.from(byName.keys()).sort()) {
        if (name === "set-cookie") {
          for (const value of byName.get(name)) sorted.push([name, value]);
        } else {
          sorted.push([name, byName.get(name).join(", ")]);
        }
      }
      return (this.#sorted = sorted);
    }
    append(name, value) {
      requireArgs(arguments.length, 2, "Headers.append");
      name = headerName(name);
      this.#list.push([name, headerValue(value)]);
      this.#sorted = null;
    }
    delete(name) {
      requireArgs(arguments.length, 1, "Headers.delete");
      name = headerName(name);
      this.#list = this.#list.filter((p) => p[0] !== name);
      this.#sorted = null;
    }
    get(name) {
      requireArgs(arguments.length, 1, "Headers.get");
      name = headerName(name);
      const values = this.#list.filter((p) => p[0] === name).map((p) => p[1]);
      return values.length === 0 ? null : values.join(", ");
    }
    getSetCookie() {
      return this.#list.filter((p) => p[0] === "set-cookie").map((p) => p[1]);
    }
    has(name) {
      requireArgs(arguments.length, 1, "Headers.has");
      name = headerName(name);
      return this.#list.some((p) => p[0] === name);
    }
    set(name, value) {
      requireArgs(arguments.length, 2, "Headers.set");
      name = headerName(name);
      value = headerValue(value);
      const i = this.#list.findIndex((p) => p[0] === name);
      if (i < 0) {
        this.#list.push([name, value]);
      } else {
        this.#list[i][1] = value;
        this.#list = this.#list.filter((p, j) => j <= i || p[0] !== name);
      }
      this.#sorted = null;
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== "function") throw new TypeError("Headers.forEach: callback is not a function");
      for (let i = 0; i < this.#pairs().length; i++) {
        const [name, value] = this.#pairs()[i];
        apply(callback, thisArg, [value, name, this]);
      }
    }
    keys() {
      return headersIterator(() => this.#pairs(), "keys");
    }
    values() {
      return headersIterator(() => this.#pairs(), "values");
    }
    entries() {
      return headersIterator(() => this.#pairs(), "entries");
    }
    static {
      platformClasses.Headers = {
        brand: (v) => #list in v,
        view: (v) => v.#pairs(),
      };
    }
  }
  defineProperty(Headers.prototype, Symbol.iterator,
    { value: Headers.prototype.entries, writable: true, configurable: true });
  toStringTag(Headers, "Headers");

  // ---------------------------------------------------------------------
  // Event, EventTarget

  let eventInternals;

  class Event {
    #type;
    #bubbles;
    #cancelable;
    #composed;
    #timeStamp = Date.now();
    #target = null;
    #currentTarget = null;
    #phase = 0;
    #canceled = false;
    #stop = false;
    #stopImmediate = false;
    #dispatching = false;
    #inPassiveListener = false;
    constructor(type, eventInitDict = undefined) {
      requireArgs(arguments.length, 1, "Event");
      this.#type = `${type}`;
      const o = dictionary(eventInitDict, "Event");
      this.#bubbles = Boolean(o.bubbles);
      this.#cancelable = Boolean(o.cancelable);
      this.#composed = Boolean(o.composed);
    }
    get type() {
      return this.#type;
    }
    get target() {
      return this.#target;
    }
    get srcElement() {
      return this.#target;
    }
    get currentTarget() {
      return this.#currentTarget;
    }
    get eventPhase() {
      return this.#phase;
    }
    get bubbles() {
      return this.#bubbles;
    }
    get cancelable() {
      return this.#cancelable;
    }
    get composed() {
      return this.#composed;
    }
    get defaultPrevented() {
      return this.#canceled;
    }
    get returnValue() {
      return !this.#canceled;
    }
    set returnValue(v) {
      if (!v) this.preventDefault();
    }
    get cancelBubble() {
      return this.#stop;
    }
    set cancelBubble(v) {
      if (v) this.#stop = true;
    }
    get isTrusted() {
      return false;
    }
    get timeStamp() {
      return this.#timeStamp;
    }
    composedPath() {
      return this.#dispatching && this.#currentTarget !== null ? [this.#currentTarget] : [];
    }
    preventDefault() {
      if (this.#cancelable && !this.#inPassiveListener) this.#canceled = true;
    }
    stopPropagation() {
      this.#stop = true;
    }
    stopImmediatePropagation() {
      this.#stop = true;
      this.#stopImmediate = true;
    }
    static {
      eventInternals = {
        isEvent: (v) => isObject(v) && #type in v,
        type: (e) => e.#type,
        dispatching: (e) => e.#dispatching,
        stoppedImmediately: (e) => e.#stopImmediate,
        canceled: (e) => e.#canceled,
        begin(e, target) {
          e.#dispatching = true;
          e.#target = target;
          e.#currentTarget = target;
          e.#phase = 2;
        },
        end(e) {
          e.#dispatching = false;
          e.#currentTarget = null;
          e.#phase = 0;
          e.#stop = false;
          e.#stopImmediate = false;
        },
        setPassive(e, passive) {
          e.#inPassiveListener = passive;
        },
      };
      platformClasses.Event = {
        brand: (v) => #type in v,
        view: (v) => [
          ["type", v.#type], ["defaultPrevented", v.#canceled], ["cancelable", v.#cancelable], ["timeStamp", v.#timeStamp],
        ],
      };
    }
  }
  for (const [name, value] of [["NONE", 0], ["CAPTURING_PHASE", 1], ["AT_TARGET", 2], ["BUBBLING_PHASE", 3]]) {
    defineProperty(Event, name, { value, enumerable: true });
    defineProperty(Event.prototype, name, { value, enumerable: true });
  }
  toStringTag(Event, "Event");

  // A listener that throws does not stop the others; the error goes to
  // reportError when the host has one, else it is rethrown once the
  // dispatch is over.
  function reportListenerError(err, pending) {
    if (typeof g.reportError === "function") {
      try {
        g.reportError(err);
        return;
      } catch {
        // fall through to rethrowing
      }
    }
    pending.push(err);
  }

  function listenerOptions(options) {
    if (!isObject(options)) return { capture: Boolean(options), once: false, passive: false, signal: null };
    const signal = options.signal;
    if (signal !== undefined && !isAbortSignal(signal)) {
      throw new TypeError("addEventListener: options.signal is not an AbortSignal");
    }
    return {
      capture: Boolean(options.capture),
      once: Boolean(options.once),
      passive: Boolean(options.passive),
      signal: signal ?? null,
    };
  }

  let isAbortSignal;
  let addAbortAlgorithm;
  let abortSignalAborted;

  class EventTarget {
    #listeners = new Map(); // type -> [{ callback, capture, once, passive, removed }]
    static {
      platformClasses.EventTarget = { brand: (v) => #listeners in v, view: () => [] };
    }
    addEventListener(type, callback, options = undefined) {
      requireArgs(arguments.length, 2, "EventTarget.addEventListener");
      type = `${type}`;
      const { capture, once, passive, signal } = listenerOptions(options);
      if (callback === null || callback === undefined) return;
      if (!isObject(callback)) throw new TypeError("EventTarget.addEventListener: listener is not an object");
      if (signal !== null && abortSignalAborted(signal)) return;
      let list = this.#listeners.get(type);
      if (list === undefined) this.#listeners.set(type, (list = []));
      if (list.some((l) => l.callback === callback && l.capture === capture)) return;
      const listener = { callback, capture, once, passive, removed: false };
      list.push(listener);
      if (signal !== null) addAbortAlgorithm(signal, () => this.#remove(type, listener));
    }
    removeEventListener(type, callback, options = undefined) {
      requireArgs(arguments.length, 2, "EventTarget.removeEventListener");
      type = `${type}`;
      const capture = isObject(options) ? Boolean(options.capture) : Boolean(options);
      const list = this.#listeners.get(type);
      const listener = list?.find((l) => l.callback === callback && l.capture === capture);
      if (listener !== undefined) this.#remove(type, listener);
    }
    #remove(type, listener) {
      listener.removed = true;
      const list = this.#listeners.get(type);
      if (list === undefined) return;
      const i = list.indexOf(listener);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) this.#listeners.delete(type);
    }
    dispatchEvent(event) {
      requireArgs(arguments.length, 1, "EventTarget.dispatchEvent");
      const ev = eventInternals;
      if (!ev.isEvent(event)) throw new TypeError("EventTarget.dispatchEvent: argument is not an Event");
      if (ev.dispatching(event)) {
        throw new DOMException("EventTarget.dispatchEvent: the event is already being dispatched", "InvalidStateError");
      }
      const type = ev.type(event);
      const errors = [];
      ev.begin(event, this);
      try {
        for (const listener of (this.#listeners.get(type) ?? []).slice()) {
          if (ev.stoppedImmediately(event)) break;
          if (listener.removed) continue;
          if (listener.once) this.#remove(type, listener);
          ev.setPassive(event, listener.passive);
          try {
            const cb = listener.callback;
            if (typeof cb === "function") {
              apply(cb, this, [event]);
            } else {
              const handleEvent = cb.handleEvent;
              if (typeof handleEvent !== "function") throw new TypeError("listener has no handleEvent method");
              apply(handleEvent, cb, [event]);
            }
          } catch (err) {
            reportListenerError(err, errors);
          }
          ev.setPassive(event, false);
        }
      } finally {
        ev.end(event);
      }
      if (errors.length > 0) throw errors[0];
      return !ev.canceled(event);
    }
  }
  toStringTag(EventTarget, "EventTarget");
  const { addEventListener: addListener, removeEventListener: removeListener, dispatchEvent } = EventTarget.prototype;

  // ---------------------------------------------------------------------
  // AbortController, AbortSignal

  const constructing = Symbol("constructing");
  let signalAbort;

  class AbortSignal extends EventTarget {
    #aborted = false;
    #reason = undefined;
    #algorithms = []; // run when aborted: removal of listeners added with this signal
    #dependents = []; // signals made by AbortSignal.any from this one
    #onabort = null;
    #onabortListener = null;
    constructor(key = undefined) {
      if (key !== constructing) throw new TypeError("AbortSignal: illegal constructor");
      super();
    }
    get aborted() {
      return this.#aborted;
    }
    get reason() {
      return this.#reason;
    }
    throwIfAborted() {
      if (this.#aborted) throw this.#reason;
    }
    get onabort() {
      return this.#onabort;
    }
    set onabort(handler) {
      this.#onabort = typeof handler === "function" ? handler : null;
      if (this.#onabort === null && this.#onabortListener !== null) {
        apply(removeListener, this, ["abort", this.#onabortListener]);
        this.#onabortListener = null;
      } else if (this.#onabort !== null && this.#onabortListener === null) {
        this.#onabortListener = (event) => {
          const h = this.#onabort;
          if (h !== null && apply(h, this, [event]) === false) event.preventDefault();
        };
        apply(addListener, this, ["abort", this.#onabortListener]);
      }
    }
    static abort(reason = undefined) {
      const signal = new AbortSignal(constructing);
      signal.#aborted = true;
      signal.#reason = reason === undefined ? new DOMException("The signal has been aborted", "AbortError") : reason;
      return signal;
    }
    static any(signals) {
      requireArgs(arguments.length, 1, "AbortSignal.any");
      const list = Array.from(signals);
      for (const s of list) {
        if (!isAbortSignal(s)) throw new TypeError("AbortSignal.any: every entry must be an AbortSignal");
      }
      const result = new AbortSignal(constructing);
      const aborted = list.find((s) => s.#aborted);
      if (aborted !== undefined) {
        result.#aborted = true;
        result.#reason = aborted.#reason;
        return result;
      }
      for (const s of list) s.#dependents.push(result);
      return result;
    }
    static {
      isAbortSignal = (v) => isObject(v) && #aborted in v;
      abortSignalAborted = (s) => s.#aborted;
      addAbortAlgorithm = (s, fn) => {
        s.#algorithms.push(fn);
      };
      signalAbort = (s, reason) => {
        if (s.#aborted) return;
        s.#aborted = true;
        s.#reason = reason === undefined ? new DOMException("The signal has been aborted", "AbortError") : reason;
        const signals = [s];
        for (const d of s.#dependents) {
          if (d.#aborted) continue;
          d.#aborted = true;
          d.#reason = s.#reason;
          signals.push(d);
        }
        s.#dependents = [];
        let failure = null;
        for (const t of signals) {
          const algorithms = t.#algorithms;
          t.#algorithms = [];
          try {
            for (const fn of algorithms) fn();
            apply(dispatchEvent, t, [new Event("abort")]);
          } catch (err) {
            failure ??= { err };
          }
        }
        if (failure !== null) throw failure.err;
      };
      platformClasses.AbortSignal = {
        brand: (v) => #aborted in v,
        view: (v) => [["aborted", v.#aborted]],
      };
    }
  }
  toStringTag(AbortSignal, "AbortSignal");

  class AbortController {
    #signal = new AbortSignal(constructing);
    get signal() {
      return this.#signal;
    }
    abort(reason = undefined) {
      signalAbort(this.#signal, reason);
    }
    static {
      platformClasses.AbortController = {
        brand: (v) => #signal in v,
        view: (v) => [["signal", v.#signal]],
      };
    }
  }
  toStringTag(AbortController, "AbortController");

  // ---------------------------------------------------------------------
  // inspect: Node's util.inspect with its defaults, simplified.

  const maxDepth = 2; // nesting deeper than this prints as [Object], [Array], ...
  const maxItems = 100; // array, typed array, Map and Set entries shown
  const maxProperties = 1000; // object properties shown
  const maxStringLength = 10000;
  const maxOutput = 1 << 20; // characters of leaves, in all; past that "..."
  const breakLength = 80;

  // Escapes as util.inspect: the quote is ', or " or ` when that avoids
  // escaping.
  const escapeMeta = [];
  for (let i = 0; i < 0x20; i++) escapeMeta[i] = "\\x" + i.toString(16).toUpperCase().padStart(2, "0");
  Object.assign(escapeMeta, { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r", 0x5c: "\\\\" });
  for (let i = 0x7f; i <= 0x9f; i++) escapeMeta[i] = "\\x" + i.toString(16).toUpperCase();

  const escapeWithQuote =
    /[\x00-\x1f\x27\x5c\x7f-\x9f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
  const escapeNoQuote = /[\x00-\x1f\x5c\x7f-\x9f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

  function quote(s) {
    let q = "'";
    if (s.includes("'")) {
      if (!s.includes('"')) q = '"';
      else if (!s.includes("`") && !s.includes("${")) q = "`";
    }
    return q + s.replace(q === "'" ? escapeWithQuote : escapeNoQuote, (c) => {
      const code = c.charCodeAt(0);
      if (code === 0x27) return "\\'";
      return escapeMeta[code] ?? "\\u" + code.toString(16);
    }) + q;
  }

  function formatString(s, depth) {
    let trailer = "";
    if (s.length > maxStringLength) {
      const more = s.length - maxStringLength;
      s = s.slice(0, maxStringLength);
      trailer = `... ${more} more character${more > 1 ? "s" : ""}`;
    }
    const indentation = 2 * depth;
    if (s.length > 16 && s.length > breakLength - indentation - 4 && s.includes("\n")) {
      return s.split(/(?<=\n)/).map(quote).join(` +\n${" ".repeat(indentation + 2)}`) + trailer;
    }
    return quote(s) + trailer;
  }

  function formatPrimitive(v, depth) {
    switch (typeof v) {
      case "string":
        return formatString(v, depth);
      case "number":
        return Object.is(v, -0) ? "-0" : `${v}`;
      case "bigint":
        return `${v}n`;
      case "symbol":
        return symbolToString(v);
      default:
        return `${v}`; // undefined, boolean, null
    }
  }

  const formatKey = (key) => typeof key === "symbol"
    ? `[${symbolToString(key)}]`
    : /^[a-zA-Z_][a-zA-Z_0-9]*$/.test(key) ? key : quote(key);

  // constructorName is the name of the constructor of the nearest
  // prototype that has one, or null for an object without prototype.
  function constructorName(v) {
    let proto = getPrototypeOf(v);
    if (proto === null) return null;
    for (let i = 0; proto !== null && i < 1000; i++) {
      const desc = getOwnPropertyDescriptor(proto, "constructor");
      if (desc !== undefined && typeof desc.value === "function") {
        const nameDesc = getOwnPropertyDescriptor(desc.value, "name");
        if (nameDesc !== undefined && typeof nameDesc.value === "string" && nameDesc.value !== "") return nameDesc.value;
      }
      proto = getPrototypeOf(proto);
    }
    return "Object";
  }

  // Node's getPrefix: "Foo ", "Foo(3) ", "Foo [tag] ", "[Object: null prototype] ".
  function prefixOf(ctor, tag, fallback, size = "") {
    if (ctor === null) {
      return tag !== "" && tag !== fallback
        ? `[${fallback}${size}: null prototype] [${tag}] `
        : `[${fallback}${size}: null prototype] `;
    }
    return tag !== "" && tag !== ctor ? `${ctor}${size} [${tag}] ` : `${ctor}${size} `;
  }

  function safeGet(o, key) {
    try {
      return o[key];
    } catch {
      return undefined;
    }
  }

  function propertyEntry(o, key, ctx, depth) {
    let desc;
    try {
      desc = getOwnPropertyDescriptor(o, key);
    } catch {
      return `${formatKey(key)}: [Uninspectable]`;
    }
    if (desc === undefined) return null;
    let value;
    if ("value" in desc) value = formatValue(desc.value, ctx, depth + 1);
    else if (desc.get && desc.set) value = "[Getter/Setter]";
    else if (desc.get) value = "[Getter]";
    else value = desc.set ? "[Setter]" : "undefined";
    return `${formatKey(key)}: ${value}`;
  }

  // Own enumerable keys, strings then symbols, as Node shows them.
  function visibleKeys(o, skipIndices) {
    let keys = ObjectKeys(o);
    if (skipIndices) keys = keys.filter((k) => !isIndex(k));
    for (const sym of getOwnPropertySymbols(o)) {
      if (getOwnPropertyDescriptor(o, sym)?.enumerable) keys.push(sym);
    }
    return keys;
  }

  function isIndex(key) {
    const n = Number(key);
    return n >>> 0 === n && n !== 4294967295 && `${n}` === key;
  }

  function propertyEntries(o, keys, ctx, depth, output) {
    let shown = 0;
    for (const key of keys) {
      if (ctx.budget <= 0) {
        output.push("...");
        break;
      }
      if (shown >= maxProperties) {
        output.push(`... ${keys.length - shown} more propert${keys.length - shown > 1 ? "ies" : "y"}`);
        break;
      }
      const entry = propertyEntry(o, key, ctx, depth);
      if (entry !== null) {
        output.push(entry);
        shown++;
      }
    }
    return output;
  }

  // Node's groupArrayElements: lines up many short array items in columns.
  function groupArrayElements(output, depth, allNumbers) {
    let totalLength = 0;
    let maxLength = 0;
    let outputLength = output.length;
    if (/^\.\.\. \d+ more item/.test(output[outputLength - 1])) outputLength--;
    const separatorSpace = 2;
    const dataLen = [];
    for (let i = 0; i < outputLength; i++) {
      const len = output[i].length;
      dataLen.push(len);
      totalLength += len + separatorSpace;
      if (maxLength < len) maxLength = len;
    }
    const actualMax = maxLength + separatorSpace;
    const indentation = 2 * depth;
    if (actualMax * 3 + indentation < breakLength && (totalLength / actualMax > 5 || maxLength <= 6)) {
      const averageBias = Math.sqrt(actualMax - totalLength / output.length);
      const biasedMax = Math.max(actualMax - 3 - averageBias, 1);
      const columns = Math.min(
        Math.round(Math.sqrt(2.5 * biasedMax * outputLength) / biasedMax),
        Math.floor((breakLength - indentation) / actualMax),
        12,
        15,
      );
      if (columns <= 1) return output;
      const maxLineLength = [];
      for (let i = 0; i < columns; i++) {
        let lineLength = 0;
        for (let j = i; j < output.length; j += columns) if (dataLen[j] > lineLength) lineLength = dataLen[j];
        maxLineLength.push(lineLength + separatorSpace);
      }
      const grouped = [];
      for (let i = 0; i < outputLength; i += columns) {
        const max = Math.min(i + columns, outputLength);
        let line = "";
        let j = i;
        for (; j < max - 1; j++) {
          const cell = `${output[j]}, `;
          line += allNumbers ? cell.padStart(maxLineLength[j - i]) : cell.padEnd(maxLineLength[j - i]);
        }
        line += allNumbers ? output[j].padStart(maxLineLength[j - i] - separatorSpace) : output[j];
        grouped.push(line);
      }
      if (outputLength < output.length) grouped.push(output[outputLength]);
      return grouped;
    }
    return output;
  }

  // Node's reduceToSingleString: one line when it fits, else one entry a line.
  function reduce(output, base, open, close, ctx, depth, arrayLike, allNumbers) {
    const entries = output.length;
    if (arrayLike && entries > 6) output = groupArrayElements(output, depth, allNumbers);
    const indentation = 2 * depth;
    if (ctx.currentDepth - depth < 3 && entries === output.length) {
      const start = output.length + indentation + open.length + base.length + 10;
      let total = output.length + start;
      let fits = total + output.length <= breakLength;
      for (let i = 0; fits && i < output.length; i++) {
        total += output[i].length;
        if (total > breakLength) fits = false;
      }
      if (fits && !base.includes("\n")) {
        const joined = output.join(", ");
        if (!joined.includes("\n")) return `${base ? `${base} ` : ""}${open} ${joined} ${close}`;
      }
    }
    const nl = `\n${" ".repeat(indentation)}`;
    return `${base ? `${base} ` : ""}${open}${nl}  ${output.join(`,${nl}  `)}${nl}${close}`;
  }

  function formatValue(v, ctx, depth) {
    if (ctx.budget <= 0) return "...";
    if (!isObject(v)) {
      const s = formatPrimitive(v, depth);
      ctx.budget -= s.length;
      return s;
    }
    if (ctx.seen.includes(v)) {
      let id = ctx.circular.get(v);
      if (id === undefined) ctx.circular.set(v, (id = ctx.circular.size + 1));
      return `[Circular *${id}]`;
    }
    let s;
    try {
      s = formatObject(v, ctx, depth);
    } catch {
      s = "[Uninspectable]";
    }
    const id = ctx.circular.get(v);
    return id === undefined ? s : `<ref *${id}> ${s}`;
  }

  function functionBase(fn, ctor, tag) {
    let source = "";
    try {
      source = functionToString(fn);
    } catch {
      // a proxy or an exotic function
    }
    const nameDesc = getOwnPropertyDescriptor(fn, "name");
    const name = nameDesc !== undefined && typeof nameDesc.value === "string" ? nameDesc.value : "";
    if (ownClasses.has(fn) || source.startsWith("class") && source.endsWith("}")) {
      let base = `class ${name || "(anonymous)"}`;
      if (ctor !== "Function" && ctor !== null) base += ` [${ctor}]`;
      if (tag !== "" && ctor !== tag) base += ` [${tag}]`;
      if (ctor === null) {
        base += " extends [null prototype]";
      } else {
        const parent = getPrototypeOf(fn);
        const parentName = parent === null ? undefined : getOwnPropertyDescriptor(parent, "name")?.value;
        if (typeof parentName === "string" && parentName !== "") base += ` extends ${parentName}`;
      }
      return `[${base}]`;
    }
    let type = "Function";
    const kind = objectToString(fn);
    if (kind === "[object GeneratorFunction]" || kind === "[object AsyncGeneratorFunction]") type = `Generator${type}`;
    if (kind === "[object AsyncFunction]" || kind === "[object AsyncGeneratorFunction]") type = `Async${type}`;
    let base = `[${type}`;
    if (ctor === null) base += " (null prototype)";
    base += name === "" ? " (anonymous)" : `: ${name}`;
    base += "]";
    if (ctor !== type && ctor !== null && ctor !== "Function") base += ` ${ctor}`;
    if (tag !== "" && ctor !== tag) base += ` [${tag}]`;
    return base;
  }

  function formatError(err, ctx, depth) {
    const name = safeGet(err, "name");
    const message = safeGet(err, "message");
    const n = name === undefined ? "Error" : typeof name === "symbol" ? symbolToString(name) : `${name}`;
    const m = message === undefined ? "" : typeof message === "symbol" ? symbolToString(message) : `${message}`;
    const header = n === "" ? m : m === "" ? n : `${n}: ${m}`;
    let stack = safeGet(err, "stack");
    if (typeof stack === "string" && ctx.mapStack) stack = ctx.mapStack(stack);
    let text = header;
    if (typeof stack === "string" && stack.trim() !== "") {
      // QuickJS stacks hold only the frames; V8's start with the header.
      text = /^\s*at /.test(stack) ? `${header}\n${stack.replace(/\s+$/, "")}` : stack.replace(/\s+$/, "");
    }
    if (depth > 0) text = text.replace(/\n/g, `\n${" ".repeat(2 * depth)}`);
    return text;
  }

  function toStringTagOf(v) {
    try {
      const tag = v[Symbol.toStringTag];
      const desc = getOwnPropertyDescriptor(v, Symbol.toStringTag);
      // An own enumerable tag is shown with the other properties instead.
      return typeof tag === "string" && !(desc !== undefined && desc.enumerable) ? tag : "";
    } catch {
      return "";
    }
  }

  // formatArrayItems pushes the items of an array (or arguments object) to
  // output, runs of holes as "<n empty items>", and reports whether all
  // items are numbers.
  function formatArrayItems(v, length, ctx, depth, output) {
    let allNumbers = true;
    let sparseIndices = null;
    let i = 0;
    while (i < length && output.length < maxItems) {
      if (ctx.budget <= 0) {
        output.push("...");
        return false;
      }
      if (hasOwn(v, i)) {
        const item = safeGet(v, i);
        if (typeof item !== "number" && typeof item !== "bigint") allNumbers = false;
        output.push(formatValue(item, ctx, depth + 1));
        i++;
        continue;
      }
      // A run of holes: scan a little, then look the next index up.
      let next = i + 1;
      const scanEnd = Math.min(length, i + 4096);
      while (next < scanEnd && !hasOwn(v, next)) next++;
      if (next === scanEnd && next < length) {
        sparseIndices ??= ObjectKeys(v).filter(isIndex).map(Number).sort((a, b) => a - b);
        next = sparseIndices.find((k) => k >= scanEnd) ?? length;
      }
      const holes = next - i;
      allNumbers = false;
      output.push(`<${holes} empty item${holes > 1 ? "s" : ""}>`);
      i = next;
    }
    if (i < length) output.push(moreItems(length - i));
    return allNumbers;
  }

  const moreItems = (n) => `... ${n} more item${n > 1 ? "s" : ""}`;

  function formatObject(v, ctx, depth) {
    const kind = kindOf(v);
    const ctor = constructorName(v);
    const tag = toStringTagOf(v);
    let base = ""; // shown ahead of the braces: a function, an error, a date...
    let open = ctor === "Object" && tag === "" ? "{" : `${prefixOf(ctor, tag, "Object")}{`;
    let close = "}";
    const output = []; // the entries, ahead of the properties
    let fill = null; // pushes the entries that nest values to output
    let keys = null; // own properties shown, by default the enumerable ones
    const hiddenKeys = []; // [cause] and [errors] of errors
    let arrayLike = false;
    let allNumbers = false;

    switch (kind) {
      case "Platform": {
        // Web platform objects show their state as name: value pairs, or
        // name => value ones for URLSearchParams as Node does.
        const platform = platformClasses[objectToString(v).slice(8, -1)];
        const view = platform.view(v);
        open = `${prefixOf(ctor, tag, "Object")}{`;
        fill = () => {
          for (const [key, value] of view.slice(0, maxItems)) {
            output.push(platform.arrows
              ? `${formatValue(key, ctx, depth + 1)} => ${formatValue(value, ctx, depth + 1)}`
              : `${formatKey(key)}: ${formatValue(value, ctx, depth + 1)}`);
          }
          if (view.length > maxItems) output.push(moreItems(view.length - maxItems));
        };
        if (view.length === 0) fill = null;
        break;
      }
      case "Function":
        base = functionBase(v, ctor, tag);
        break;
      case "Array":
      case "Arguments": {
        const length = kind === "Array" ? v.length : Number(safeGet(v, "length")) || 0;
        keys = length > 1e6 ? [] : visibleKeys(v, true); // the own keys of a huge array cost too much
        open = kind === "Arguments" ? "[Arguments] ["
          : `${ctor !== "Array" || tag !== "" ? prefixOf(ctor, tag, "Array", `(${length})`) : ""}[`;
        close = "]";
        arrayLike = true;
        if (length > 0) fill = () => (allNumbers = formatArrayItems(v, length, ctx, depth, output));
        break;
      }
      case "TypedArray": {
        const name = typedArrayTag(v);
        const length = typedArrayLength(v);
        keys = [];
        open = `${prefixOf(ctor, tag, name, `(${length})`)}[`;
        close = "]";
        arrayLike = true;
        allNumbers = true;
        for (let i = 0; i < length && i < maxItems; i++) output.push(formatPrimitive(v[i], depth));
        if (length > maxItems) output.push(moreItems(length - maxItems));
        break;
      }
      case "ArrayBuffer":
      case "SharedArrayBuffer": {
        const length = kind === "ArrayBuffer" ? bufferByteLength(v) : sharedByteLength(v);
        open = `${prefixOf(ctor, tag, kind)}{`;
        let bytes;
        try {
          bytes = Array.from(new Uint8Array(v, 0, Math.min(length, maxItems)), (b) => b.toString(16).padStart(2, "0")).join(" ");
        } catch {
          bytes = "(detached)";
        }
        if (length > maxItems) bytes += ` ... ${length - maxItems} more byte${length - maxItems > 1 ? "s" : ""}`;
        output.push(`[Uint8Contents]: <${bytes}>`, `byteLength: ${length}`);
        break;
      }
      case "DataView":
        open = `${prefixOf(ctor, tag, "DataView")}{`;
        fill = () => {
          let length = 0;
          let offset = 0;
          try {
            length = viewByteLength(v);
            offset = viewOffset(v);
          } catch {
            // a detached buffer
          }
          output.push(`byteLength: ${length}`, `byteOffset: ${offset}`,
            `buffer: ${formatValue(viewBuffer(v), ctx, depth + 1)}`);
        };
        break;
      case "Map":
      case "Set": {
        const map = kind === "Map";
        const size = map ? mapSize(v) : setSize(v);
        open = `${prefixOf(ctor, tag, kind, `(${size})`)}{`;
        if (size > 0) {
          fill = () => {
            const it = map ? mapEntries(v) : setValues(v);
            for (let i = 0; i < maxItems; i++) {
              const step = it.next();
              if (step.done) break;
              if (ctx.budget <= 0) {
                output.push("...");
                return;
              }
              output.push(map
                ? `${formatValue(step.value[0], ctx, depth + 1)} => ${formatValue(step.value[1], ctx, depth + 1)}`
                : formatValue(step.value, ctx, depth + 1));
            }
            if (size > maxItems) output.push(moreItems(size - maxItems));
          };
        }
        break;
      }
      case "Error": {
        base = formatError(v, ctx, depth);
        // As Node: own name, message and stack already shown are left out.
        keys = visibleKeys(v, false).filter((k) => {
          if (k !== "name" && k !== "message" && k !== "stack") return true;
          const value = safeGet(v, k);
          return typeof value !== "string" || !base.includes(value);
        });
        for (const hidden of ["errors", "cause"]) {
          const desc = getOwnPropertyDescriptor(v, hidden);
          if (desc !== undefined && !desc.enumerable) hiddenKeys.push(hidden);
        }
        break;
      }
      case "Date": {
        const time = dateGetTime(v);
        base = Number.isNaN(time) ? "Invalid Date" : dateToISOString(v);
        break;
      }
      case "RegExp":
        base = regExpToString(v);
        break;
      case "Number":
        base = `[Number: ${formatPrimitive(numberValueOf(v), depth)}]`;
        break;
      case "String":
        base = `[String: ${quote(stringValueOf(v))}]`;
        keys = visibleKeys(v, true);
        break;
      case "Boolean":
        base = `[Boolean: ${booleanValueOf(v)}]`;
        break;
      case "BigInt":
        base = `[BigInt: ${bigintValueOf(v)}n]`;
        break;
      case "Symbol":
        base = `[Symbol: ${symbolToString(symbolValueOf(v))}]`;
        break;
      case "WeakMap":
      case "WeakSet":
      case "Promise":
        // Neither their items nor a promise's state can be read from JavaScript.
        open = `${prefixOf(ctor, tag, kind)}{`;
        output.push(kind === "Promise" ? "<unknown>" : "<items unknown>");
        break;
      default:
        break;
    }
    keys ??= visibleKeys(v, false);
    if (base !== "") open = "{";

    const empty = fill === null && output.length === 0 && keys.length === 0 && hiddenKeys.length === 0;
    if (empty) return base !== "" ? base : `${open}${close}`;
    if (depth > maxDepth) return ctor === null ? "[Object: null prototype]" : `[${ctor}]`;
    ctx.seen.push(v);
    ctx.currentDepth = depth;
    try {
      if (fill !== null) fill();
      propertyEntries(v, keys, ctx, depth, output);
      for (const key of hiddenKeys) output.push(`[${key}]: ${formatValue(safeGet(v, key), ctx, depth + 1)}`);
    } finally {
      ctx.seen.pop();
    }
    return reduce(output, base, open, close, ctx, depth, arrayLike, allNumbers);
  }

  function inspect(value, mapStack) {
    if (typeof value === "string") return value;
    try {
      return formatValue(value, { seen: [], circular: new Map(), currentDepth: 0, budget: maxOutput, mapStack }, 0);
    } catch {
      return "[Uninspectable]";
    }
  }

  // ---------------------------------------------------------------------

  for (const c of [DOMException, StringBuilder, TextEncoder, TextDecoder, URLSearchParams, Headers,
    Event, EventTarget, AbortSignal, AbortController]) {
    ownClasses.add(c);
  }
  defineGlobal("DOMException", DOMException);
  defineGlobal("TextEncoder", TextEncoder);
  defineGlobal("TextDecoder", TextDecoder);
  defineGlobal("atob", atob);
  defineGlobal("btoa", btoa);
  defineGlobal("structuredClone", structuredClone);
  defineGlobal("URLSearchParams", URLSearchParams);
  defineGlobal("Headers", Headers);
  defineGlobal("Event", Event);
  defineGlobal("EventTarget", EventTarget);
  defineGlobal("AbortSignal", AbortSignal);
  defineGlobal("AbortController", AbortController);

  return { inspect, updateSearchParams, ownClass: (c) => ownClasses.add(c) };
})
