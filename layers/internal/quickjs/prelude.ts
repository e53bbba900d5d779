/**
 * The guest prelude: JavaScript evaluated inside each fresh QuickJS context before the program.
 * It is a function the host calls with its two host functions and the run's plan, so the host
 * functions never become globals. It captures the intrinsics it needs first (a program that
 * patches `JSON` or `Promise.prototype.then` only breaks itself), installs each namespace as a
 * frozen null-prototype global with one function per binding, the namespace's error class and a
 * `console` that prints plain lines, and returns the driver that runs the program.
 *
 * Binding arguments are serialized here with the lossless JSON rules of the host's snapshot
 * (plain records and dense arrays, finite numbers other than -0, getters read once, no cycles,
 * `toJSON` ignored); anything else rejects the call with the namespace's error class before the
 * host hears of it. The completion value goes through the same check.
 *
 * Strings cross the engine boundary as C strings, so everything the guest hands the host is JSON
 * text (which escapes NUL and lone surrogates) and bindings are named by index. The driver
 * returns (or resolves with) one outcome string: `u` (undefined), `v<json>`, `i<json what>` (not
 * lossless), `o` (over the result cap) or `e<json [head, stack]>`.
 *
 * @internal
 */

/** @internal */
export const PRELUDE_FILENAME = "prelude.js"

/** @internal */
export const UNDEFINED_ARGUMENTS =
  "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"

/** @internal */
export const ARGUMENTS_PREFIX = "tool arguments must be lossless JSON: "

/** @internal */
export const PRELUDE = String.raw`(function (hostCall, hostLog, planText) {
  "use strict";
  const global = globalThis;
  const apply = Reflect.apply;
  const ownKeys = Reflect.ownKeys;
  const getPrototypeOf = Object.getPrototypeOf;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const create = Object.create;
  const hasOwn = Object.prototype.hasOwnProperty;
  const isPrototypeOf = Object.prototype.isPrototypeOf;
  const objectToString = Object.prototype.toString;
  const isArray = Array.isArray;
  const isView = ArrayBuffer.isView;
  const join = Array.prototype.join;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const StringOf = String;
  const symbolToString = Symbol.prototype.toString;
  const regexTest = RegExp.prototype.test;
  const PromiseCtor = Promise;
  const promiseThen = Promise.prototype.then;
  const promiseReject = Promise.reject;
  const SetCtor = Set;
  const setHas = Set.prototype.has;
  const setAdd = Set.prototype.add;
  const setDelete = Set.prototype.delete;
  const BaseError = Error;
  const ObjectPrototype = Object.prototype;
  const ArrayPrototype = Array.prototype;
  const ErrorPrototype = Error.prototype;
  const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const special = [
    [Date.prototype, "a Date"], [Map.prototype, "a Map"], [Set.prototype, "a Set"],
    [WeakMap.prototype, "a WeakMap"], [WeakSet.prototype, "a WeakSet"], [RegExp.prototype, "a RegExp"],
    [Promise.prototype, "a Promise"], [Number.prototype, "a boxed number"],
    [String.prototype, "a boxed string"], [Boolean.prototype, "a boxed boolean"],
    [ArrayBuffer.prototype, "an ArrayBuffer"]
  ];
  const plan = parse(planText);
  const UNDEFINED_ARGUMENTS = ${JSON.stringify(UNDEFINED_ARGUMENTS)};
  const ARGUMENTS_PREFIX = ${JSON.stringify(ARGUMENTS_PREFIX)};
  const OPEN = 1;

  const messageOf = (thrown) => {
    if (typeof thrown === "string") return thrown;
    if (thrown !== null && typeof thrown === "object") {
      try {
        const message = thrown.message;
        if (typeof message === "string") return message;
      } catch (_) {}
    }
    try {
      return StringOf(thrown);
    } catch (_) {
      return "an unreadable value";
    }
  };

  const kindOfObject = (value, proto) => {
    if (isView(value)) return "a typed array";
    for (let i = 0; i < special.length; i++) if (special[i][0] === proto) return special[i][1];
    if (apply(isPrototypeOf, ErrorPrototype, [value])) return "an Error";
    return "a class instance";
  };

  const segment = (key) =>
    typeof key === "number" ? "[" + key + "]" : apply(regexTest, identifier, [key]) ? "." + key : "[" + stringify(key) + "]";

  // Lossless JSON text of root: { text } | { what } | { over: true }. Throws what a getter or a
  // proxy trap throws. Iterative, so nesting depth is bounded by memory only.
  const serialize = (root, label, limit) => {
    const parts = [];
    let count = 0;
    let size = 0;
    const stack = [];
    const path = [];
    const ancestors = new SetCtor();
    const emit = (text) => {
      parts[count++] = text;
      size += text.length;
    };
    const at = (kind) => ({ what: kind + " at " + label + apply(join, path, [""]) });
    const visit = (value) => {
      switch (typeof value) {
        case "string":
          emit(stringify(value));
          return undefined;
        case "boolean":
          emit(value ? "true" : "false");
          return undefined;
        case "number":
          if (value !== value) return "NaN";
          if (value === Infinity) return "Infinity";
          if (value === -Infinity) return "-Infinity";
          if (value === 0 && 1 / value < 0) return "-0";
          emit(StringOf(value));
          return undefined;
        case "undefined":
          return "undefined";
        case "bigint":
          return "a bigint";
        case "symbol":
          return "a symbol";
        case "function":
          return "a function";
        default:
          if (value === null) {
            emit("null");
            return undefined;
          }
          return OPEN;
      }
    };
    const open = (value) => {
      if (apply(setHas, ancestors, [value])) return "a cycle";
      let keys;
      let length;
      let array = false;
      if (isArray(value)) {
        if (getPrototypeOf(value) !== ArrayPrototype) return "an array subclass";
        keys = ownKeys(value);
        length = value.length;
        if (keys.length !== length + 1 || keys[length] !== "length") {
          return keys.length <= length ? "a sparse array" : "an array with extra properties";
        }
        array = true;
        emit("[");
      } else {
        const proto = getPrototypeOf(value);
        if (proto !== ObjectPrototype && proto !== null) return kindOfObject(value, proto);
        keys = ownKeys(value);
        length = keys.length;
        for (let i = 0; i < length; i++) if (typeof keys[i] !== "string") return "a symbol key";
        emit("{");
      }
      apply(setAdd, ancestors, [value]);
      stack[stack.length] = { value, keys, length, array, index: 0 };
      return undefined;
    };
    let problem = visit(root);
    if (problem === OPEN) problem = open(root);
    if (problem !== undefined) return at(problem);
    while (stack.length > 0) {
      if (size > limit) return { over: true };
      const top = stack[stack.length - 1];
      const depth = stack.length - 1;
      if (top.index >= top.length) {
        emit(top.array ? "]" : "}");
        apply(setDelete, ancestors, [top.value]);
        stack.length = depth;
        path.length = depth > 0 ? depth - 1 : 0;
        continue;
      }
      const index = top.index++;
      const key = top.array ? index : top.keys[index];
      path[depth] = segment(key);
      path.length = depth + 1;
      const descriptor = getOwnPropertyDescriptor(top.value, top.array ? StringOf(index) : key);
      if (descriptor === undefined) return at(top.array ? "a sparse array" : "a missing property");
      if (!top.array && !descriptor.enumerable) return at("a non-enumerable property");
      let value;
      if (apply(hasOwn, descriptor, ["value"])) value = descriptor.value;
      else {
        const getter = apply(hasOwn, descriptor, ["get"]) ? descriptor.get : undefined;
        value = getter === undefined ? undefined : apply(getter, top.value, []);
      }
      if (index > 0) emit(",");
      if (!top.array) emit(stringify(key) + ":");
      problem = visit(value);
      if (problem === OPEN) problem = open(value);
      if (problem !== undefined) return at(problem);
    }
    if (size > limit) return { over: true };
    return { text: apply(join, parts, [""]) };
  };

  const errorHead = (error) => {
    let name;
    let message;
    try {
      name = error.name;
    } catch (_) {}
    try {
      message = error.message;
    } catch (_) {}
    const head = typeof name === "string" && name !== "" ? name : "Error";
    return typeof message === "string" && message !== "" ? head + ": " + message : head;
  };

  const isError = (value) => {
    try {
      return apply(isPrototypeOf, ErrorPrototype, [value]);
    } catch (_) {
      return false;
    }
  };

  const replacer = (_key, value) => typeof value === "bigint" ? StringOf(value) + "n" : value;

  const format = (value) => {
    switch (typeof value) {
      case "string":
        return value;
      case "number":
        return value === 0 && 1 / value < 0 ? "-0" : StringOf(value);
      case "bigint":
        return StringOf(value) + "n";
      case "symbol":
        return apply(symbolToString, value, []);
      case "boolean":
        return value ? "true" : "false";
      case "undefined":
        return "undefined";
      case "function": {
        let name;
        try {
          name = value.name;
        } catch (_) {}
        return typeof name === "string" && name !== "" ? "[Function: " + name + "]" : "[Function (anonymous)]";
      }
      default:
        if (value === null) return "null";
        if (isError(value)) return errorHead(value);
        try {
          const text = stringify(value, replacer);
          if (typeof text === "string") return text;
        } catch (_) {}
        try {
          return apply(objectToString, value, []);
        } catch (_) {
          return "[object]";
        }
    }
  };

  const describe = (thrown) => {
    if (thrown !== null && (typeof thrown === "object" || typeof thrown === "function") && isError(thrown)) {
      let stack;
      try {
        stack = thrown.stack;
      } catch (_) {}
      return [errorHead(thrown), typeof stack === "string" ? stack : ""];
    }
    let text;
    try {
      text = format(thrown);
    } catch (_) {
      text = "an unreadable value";
    }
    return ["Uncaught " + text, ""];
  };

  const classes = create(null);
  const makeClass = (name, member) => {
    const ErrorClass = ({
      [name]: class extends BaseError {
        constructor(message, memberName) {
          super(message);
          defineProperty(this, member, { value: memberName, writable: true, enumerable: true, configurable: true });
        }
      }
    })[name];
    defineProperty(ErrorClass.prototype, "name", { value: name, writable: true, enumerable: false, configurable: true });
    return ErrorClass;
  };
  const failure = (ErrorClass, name, message) =>
    ErrorClass === undefined ? new BaseError(message) : new ErrorClass(message, name);
  const rejected = (error) => apply(promiseReject, PromiseCtor, [error]);

  const call = (namespace, index, ErrorClass, name, args) => {
    if (args === undefined) return rejected(failure(ErrorClass, name, UNDEFINED_ARGUMENTS));
    let serialized;
    try {
      serialized = serialize(args, "args", Infinity);
    } catch (thrown) {
      return rejected(failure(ErrorClass, name, ARGUMENTS_PREFIX + messageOf(thrown)));
    }
    if (serialized.what !== undefined) return rejected(failure(ErrorClass, name, ARGUMENTS_PREFIX + serialized.what));
    const pending = hostCall(namespace, index, serialized.text);
    return apply(promiseThen, pending, [parse, (message) => {
      throw failure(ErrorClass, name, typeof message === "string" ? parse(message) : "tool call failed");
    }]);
  };

  const namespaces = plan.namespaces;
  for (let n = 0; n < namespaces.length; n++) {
    const namespace = namespaces[n];
    let ErrorClass;
    if (namespace.errorClass !== null) {
      const className = namespace.errorClass.name;
      ErrorClass = classes[className];
      if (ErrorClass === undefined) {
        ErrorClass = classes[className] = makeClass(className, namespace.errorClass.member);
        defineProperty(global, className, { value: ErrorClass, writable: false, enumerable: false, configurable: false });
      }
    }
    const functions = create(null);
    const names = namespace.names;
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      defineProperty(functions, name, {
        value: (args) => call(n, i, ErrorClass, name, args),
        writable: false,
        enumerable: true,
        configurable: false
      });
    }
    defineProperty(global, namespace.global, { value: freeze(functions), writable: false, enumerable: false, configurable: false });
  }

  const print = (...items) => {
    let line = "";
    for (let i = 0; i < items.length; i++) line += (i === 0 ? "" : " ") + format(items[i]);
    hostLog(line.length > plan.consoleBytes ? null : stringify(line));
  };
  const console = create(null);
  const levels = ["log", "info", "warn", "error", "debug"];
  for (let i = 0; i < levels.length; i++) {
    defineProperty(console, levels[i], { value: print, writable: false, enumerable: true, configurable: false });
  }
  defineProperty(global, "console", { value: freeze(console), writable: true, enumerable: false, configurable: true });

  const outcome = (value) => {
    if (value === undefined) return "u";
    let result;
    try {
      result = serialize(value, "result", plan.resultBytes);
    } catch (thrown) {
      return "i" + stringify("a property could not be read: " + messageOf(thrown));
    }
    if (result.over === true) return "o";
    if (result.what !== undefined) return "i" + stringify(result.what);
    return "v" + result.text;
  };
  const thrownOutcome = (thrown) => "e" + stringify(describe(thrown));

  return (program, compileFailed) => {
    if (compileFailed) return thrownOutcome(program);
    if (typeof program !== "function") return "e" + stringify(["SyntaxError: the program must be the body of a function", ""]);
    let running;
    try {
      running = program();
    } catch (thrown) {
      return thrownOutcome(thrown);
    }
    return apply(promiseThen, running, [outcome, thrownOutcome]);
  };
})`
