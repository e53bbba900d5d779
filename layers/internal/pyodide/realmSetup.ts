/**
 * The script that prepares a fresh interpreter realm (a `vm` context with code generation from
 * strings disabled) before Pyodide is evaluated in it. It evaluates to `setup(host)`, which
 * keeps the host's functions in closures only (never as reachable properties) and installs, as
 * realm-own objects: UTF-8/UTF-16/Latin-1 `TextDecoder` and `TextEncoder`, `performance.now`,
 * `crypto.getRandomValues`, `setTimeout`/`clearTimeout` (host timers, numeric ids, bounded
 * count), `readbuffer`/`read` (Pyodide's shell loader, serving only the package files), and a
 * capped `WebAssembly.Memory.prototype.grow`. It returns the controls the worker drives the
 * interpreter with.
 *
 * Every host function the realm calls takes and returns primitives (or fills a realm-own typed
 * array) and never throws into the realm, so no host object ever becomes reachable from guest
 * code, even with full JavaScript access inside the realm through Pyodide's FFI.
 *
 * @internal
 */

/** The host side the realm calls (all total, all primitive-valued). @internal */
export interface RealmHost {
  readonly size: (path: string) => number
  readonly fill: (path: string, target: ArrayBuffer) => void
  readonly text: (path: string) => string | undefined
  readonly schedule: (id: number, ms: number) => void
  readonly unschedule: (id: number) => void
  readonly now: () => number
  readonly random: (view: ArrayBufferView) => void
  /** Bytes the program wrote to the host device, as a Latin-1 string. */
  readonly emit: (bytes: string) => void
  /** Bytes the program printed (stdout and stderr), as a Latin-1 string. */
  readonly print: (bytes: string) => void
  /** The interpreter asked for memory beyond its cap. */
  readonly outOfMemory: () => void
}

/** What the worker holds of one realm (realm-own objects). @internal */
export interface RealmControls {
  readonly fire: (id: number) => void
  readonly setMemoryCap: (bytes: number) => void
  readonly memoryBytes: () => number
  readonly alloc: (length: number) => Uint8Array
  readonly boot: (loadPyodide: unknown, factory: unknown, snapshot: Uint8Array | undefined) => Promise<unknown>
  readonly snapshot: (pyodide: unknown) => Uint8Array
  readonly prepare: (pyodide: unknown, runner: string) => {
    readonly interrupt: SharedArrayBuffer
    readonly start: (config: string) => void
    readonly settle: (line: string) => void
  }
}

/** Marks a worker failure meaning the realm did not hold its boundary (the layer fails closed). @internal */
export const REALM_BROKEN = "the interpreter realm did not hold: "

/** The most timers one interpreter may have pending. @internal */
export const MAX_TIMERS = 10_000

/** The setup script; it evaluates to `setup(host)`. @internal */
export const REALM_SETUP = String.raw`(function () {
"use strict";
return function setup(host) {
  const size = host.size, fill = host.fill, text = host.text, schedule = host.schedule, unschedule = host.unschedule;
  const now = host.now, random = host.random, emit = host.emit, print = host.print, outOfMemory = host.outOfMemory;
  const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: true, configurable: true });
  const latin1 = (bytes, start, end) => {
    let out = "";
    for (let i = start; i < end; i += 8192) out += String.fromCharCode.apply(null, bytes.subarray(i, Math.min(end, i + 8192)));
    return out;
  };
  const bytesOf = (input) => {
    if (input === undefined) return new Uint8Array(0);
    if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    return new Uint8Array(input);
  };
  class TextDecoder {
    constructor(label = "utf-8", options = {}) {
      const name = String(label).toLowerCase();
      this.encoding = name === "utf8" ? "utf-8" : name === "latin1" || name === "iso-8859-1" ? "latin1" : name;
      if (!["utf-8", "utf-16le", "latin1"].includes(this.encoding)) throw new RangeError("unsupported encoding " + name);
      this.fatal = Boolean(options && options.fatal);
    }
    decode(input) {
      const u = bytesOf(input);
      if (this.encoding === "latin1") return latin1(u, 0, u.length);
      if (this.encoding === "utf-16le") {
        let out = "";
        for (let i = 0; i + 1 < u.length; i += 2) out += String.fromCharCode(u[i] | (u[i + 1] << 8));
        return out;
      }
      let out = "", i = 0;
      const bad = () => { if (this.fatal) throw new TypeError("The encoded data was not valid utf-8"); out += "\ufffd"; };
      while (i < u.length) {
        const c = u[i++];
        if (c < 0x80) { out += String.fromCharCode(c); continue; }
        let need, cp, min;
        if (c >= 0xf0 && c < 0xf8) { need = 3; cp = c & 7; min = 0x10000; }
        else if (c >= 0xe0) { need = 2; cp = c & 15; min = 0x800; }
        else if (c >= 0xc2 && c < 0xe0) { need = 1; cp = c & 31; min = 0x80; }
        else { bad(); continue; }
        let ok = i + need <= u.length;
        for (let k = 0; ok && k < need; k++) { const b = u[i + k]; if ((b & 0xc0) !== 0x80) ok = false; else cp = (cp << 6) | (b & 63); }
        if (!ok || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) { bad(); continue; }
        i += need;
        out += String.fromCodePoint(cp);
      }
      return out;
    }
  }
  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(input = "") {
      const s = String(input), out = [];
      for (let i = 0; i < s.length; i++) {
        let c = s.charCodeAt(i);
        if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
          const d = s.charCodeAt(i + 1);
          if (d >= 0xdc00 && d < 0xe000) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; }
        }
        if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
        if (c < 0x80) out.push(c);
        else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
        else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
        else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      }
      return new Uint8Array(out);
    }
    encodeInto(input, dest) {
      const bytes = this.encode(input);
      const written = Math.min(bytes.length, dest.length);
      dest.set(bytes.subarray(0, written));
      return { read: String(input).length, written };
    }
  }
  define("TextDecoder", TextDecoder);
  define("TextEncoder", TextEncoder);
  define("performance", Object.freeze({ now: () => now() }));
  define("crypto", Object.freeze({ getRandomValues: (view) => { random(view); return view; } }));
  const timers = new Map();
  let nextTimer = 0;
  define("setTimeout", (callback, ms) => {
    if (typeof callback !== "function") throw new TypeError("setTimeout needs a function");
    if (timers.size >= ${MAX_TIMERS}) throw new RangeError("too many pending timers");
    const id = ++nextTimer;
    timers.set(id, callback);
    schedule(id, Number(ms) || 0);
    return id;
  });
  define("clearTimeout", (id) => { if (timers.delete(id)) unschedule(Number(id)); });
  define("readbuffer", (path) => {
    const name = String(path), length = size(name);
    if (length < 0) throw new Error("no such file: " + name);
    const buffer = new ArrayBuffer(length);
    fill(name, buffer);
    return buffer;
  });
  define("read", (path) => {
    const content = text(String(path));
    if (content === undefined) throw new Error("no such file: " + String(path));
    return content;
  });
  define("load", () => { throw new Error("loading scripts is not available"); });
  let cap = Infinity;
  let memory;
  const grow = WebAssembly.Memory.prototype.grow;
  Object.defineProperty(WebAssembly.Memory.prototype, "grow", {
    value: function grow_(delta) {
      memory = this;
      if (this.buffer.byteLength + Number(delta) * 65536 > cap) { outOfMemory(); throw new RangeError("the memory limit was reached"); }
      return grow.call(this, delta);
    },
    writable: false,
    configurable: false
  });
  const write = (buffer) => { print(latin1(buffer, 0, buffer.length)); return buffer.length; };
  return Object.freeze({
    fire: (id) => { const callback = timers.get(id); if (callback === undefined) return; timers.delete(id); callback(); },
    setMemoryCap: (bytes) => { cap = bytes; },
    memoryBytes: () => memory === undefined ? 0 : memory.buffer.byteLength,
    alloc: (length) => new Uint8Array(length),
    boot: (loadPyodide, factory, snapshot) => loadPyodide({
      indexURL: "/pyodide/",
      jsglobals: Object.create(null),
      env: {},
      stdout: () => {},
      stderr: () => {},
      createPyodideModule: factory,
      _makeSnapshot: snapshot === undefined,
      _loadSnapshot: snapshot
    }),
    snapshot: (pyodide) => pyodide.makeMemorySnapshot(),
    prepare: (pyodide, runner) => {
      const FS = pyodide.FS;
      const device = FS.makedev(64, 7);
      FS.registerDevice(device, {
        open() {},
        close() {},
        read() { return 0; },
        write(stream, buffer, offset, length) { emit(latin1(new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength), offset, offset + length)); return length; }
      });
      FS.mkdev("/dev/etr-host", device);
      pyodide.setStdout({ write });
      pyodide.setStderr({ write });
      const interrupt = new SharedArrayBuffer(16);
      pyodide.setInterruptBuffer(new Int32Array(interrupt, 0, 1));
      for (const name of ["js", "pyodide_js"]) pyodide.unregisterJsModule(name);
      pyodide.runPython(runner);
      const start = pyodide.globals.get("_etr_start");
      const settle = pyodide.globals.get("_etr_settle");
      for (const name of ["readbuffer", "read", "load"]) delete globalThis[name];
      return Object.freeze({ interrupt, start: (config) => { start(String(config)); }, settle: (line) => { settle(String(line)); } });
    }
  });
};
})()`
