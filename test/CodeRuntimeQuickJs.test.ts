/**
 * The embedded QuickJS code runtime in the caller's thread, through the public `CodeRuntime`
 * service: the seam (RT-1…5), values and TypeScript, the binding bridge with its lossless
 * argument rule (PTC-8, T-PTC-041/059), console capture (PTC-3, T-PTC-055) and isolation (RT-6,
 * D-17). Limits and faults are in CodeRuntimeQuickJs.limits.test.ts.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as CodeRuntimeQuickJs from "../layers/CodeRuntimeQuickJs.js"
import type { Binding } from "../src/CodeRuntime.js"
import { CodeRuntime, CodeRuntimeError } from "../src/CodeRuntime.js"
import { changing, nullProto, ownProtoKey, revokedProxy, throwingProxy } from "./fixtures/hostile.js"
import { gated, kindOf, recording, run, TOOL_CALL_ERROR, tools } from "./fixtures/quickjs.js"

const ARGS = "tool arguments must be lossless JSON"

/** Standard globals of a bare QuickJS context (ECMAScript only). */
const STANDARD_GLOBALS = [
  "AggregateError", "Array", "ArrayBuffer", "BigInt", "BigInt64Array", "BigUint64Array", "Boolean", "DataView", "Date",
  "Error", "EvalError", "FinalizationRegistry", "Float16Array", "Float32Array", "Float64Array", "Function", "Infinity",
  "Int16Array", "Int32Array", "Int8Array", "InternalError", "Iterator", "JSON", "Map", "Math", "NaN", "Number", "Object",
  "Promise", "Proxy", "RangeError", "ReferenceError", "Reflect", "RegExp", "Set", "SharedArrayBuffer", "String",
  "Symbol", "SyntaxError", "TypeError", "URIError", "Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray",
  "WeakMap", "WeakRef", "WeakSet", "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape",
  "eval", "globalThis", "isFinite", "isNaN", "parseFloat", "parseInt", "undefined", "unescape"
]

layer(CodeRuntimeQuickJs.layer({ cpuMs: 5_000 }))("CodeRuntimeQuickJs.layer", (it) => {
  describe("RT-1, RT-2, RT-3: the service, programs and values", () => {
    it.effect("RT-1: the in-thread runtime runs typescript in wasm", () =>
      Effect.gen(function*() {
        const runtime = yield* CodeRuntime
        assert.strictEqual(runtime.language, "typescript")
        assert.strictEqual(runtime.isolation, "wasm")
      }))

    it.effect("RT-2: the program is an async function body: return gives the value, logs are empty", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* run("return 1"), { value: 1, logs: [] })
        assert.deepStrictEqual(yield* run("const v = await Promise.resolve(41)\nreturn v + 1"), { value: 42, logs: [] })
      }))

    it.effect("RT-3: returning undefined (or nothing, or an empty program) gives no value key; null is kept", () =>
      Effect.gen(function*() {
        for (const program of ["return undefined", "const x = 1", ""]) {
          const result = yield* run(program)
          assert.deepStrictEqual(result, { logs: [] })
          assert.isFalse("value" in result, program)
        }
        const nullResult = yield* run("return null")
        assert.isTrue("value" in nullResult)
        assert.deepStrictEqual(nullResult, { value: null, logs: [] })
      }))

    it.effect("RT-3: nested JSON values, unicode and lone surrogates come back exactly", () =>
      Effect.gen(function*() {
        const result = yield* run(
          "return { n: 1.5, neg: -3, big: 1e21, s: 'é\\u0000\\uD800', t: true, f: false, z: null, a: [[], {}, [1, 'x']] }"
        )
        assert.deepStrictEqual(result.value, {
          n: 1.5,
          neg: -3,
          big: 1e21,
          s: "é\u0000\uD800",
          t: true,
          f: false,
          z: null,
          a: [[], {}, [1, "x"]]
        })
      }))

    it.effect("RT-3: a completion value with an own __proto__ key keeps it as data and pollutes nothing", () =>
      Effect.gen(function*() {
        const result = yield* run(`return JSON.parse('{"__proto__": {"polluted": true}, "k": 1}')`)
        const value = result.value as Record<string, unknown>
        assert.strictEqual(Object.getPrototypeOf(value), Object.prototype)
        assert.deepStrictEqual(Object.getOwnPropertyDescriptor(value, "__proto__")?.value, { polluted: true })
        assert.strictEqual(({} as Record<string, unknown>).polluted, undefined)
      }))

    it.effect("RT-3: a completion value that is not lossless JSON is invalid-output, naming what and where", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["return new Date(0)", "a Date at result"],
          ["return { f() {} }", "a function at result.f"],
          ["return [1n]", "a bigint at result[0]"],
          ["return { x: NaN }", "NaN at result.x"],
          ["return { x: undefined }", "undefined at result.x"],
          ["return -0", "-0 at result"],
          ["return [1, , 3]", "a sparse array at result"],
          ["const o = { a: {} }; o.a.self = o; return o", "a cycle at result.a.self"],
          ["return new Map()", "a Map at result"],
          ["return { 'odd key': new (class Point {})() }", "a class instance at result[\"odd key\"]"],
          ["return { [Symbol('s')]: 1 }", "a symbol key at result"],
          ["return { get x() { throw new Error('no read') } }", "a property could not be read: no read"]
        ]
        for (const [program, what] of cases) {
          assert.deepStrictEqual((yield* run(program)).error, {
            kind: "invalid-output",
            message: `the program's result is not lossless JSON: ${what}`
          }, program)
        }
      }))

    it.effect("RT-3: plain records (null prototype too), getters read once and shared subtrees are accepted", () =>
      Effect.gen(function*() {
        const result = yield* run(
          "let reads = 0\nconst shared = { s: 1 }\nconst o = Object.create(null)\no.x = 1\n" +
            "return { o, a: shared, b: shared, get g() { return ++reads } }"
        )
        assert.deepStrictEqual(result.value, { o: { x: 1 }, a: { s: 1 }, b: { s: 1 }, g: 1 })
      }))
  })

  describe("TypeScript", () => {
    it.effect("erasable TypeScript is stripped before it runs", () =>
      Effect.gen(function*() {
        const result = yield* run(
          "interface Point { x: number; y?: number }\n" +
            "type Pair<T> = [T, T]\n" +
            "function add<T extends number>(a: T, b: T): number { return a + b }\n" +
            "abstract class Shape { abstract area(): number }\n" +
            "class Square extends Shape { private readonly side: number; constructor(side: number) { super(); this.side = side } area(): number { return this.side ** 2 } }\n" +
            "const p: Point = { x: 1 } satisfies Point\n" +
            "const pair = [p.x, 2] as Pair<number>\n" +
            "declare const debug: boolean | undefined\n" +
            "const maybe: Point | undefined = p\n" +
            "return { sum: add(pair[0], pair[1]), area: new Square(3).area(), x: maybe!.x }"
        )
        assert.deepStrictEqual(result, { value: { sum: 3, area: 9, x: 1 }, logs: [] })
      }))

    it.effect("an enum is rejected with amaro's message, its position and what to do instead (kind exception)", () =>
      Effect.gen(function*() {
        const result = yield* run("const a = 1\nenum Color { Red, Green }\nreturn Color.Green")
        assert.deepStrictEqual(result.error, {
          kind: "exception",
          message: "SyntaxError: TypeScript enum is not supported in strip-only mode (line 2, column 1); the code " +
            "runs type-stripped, so write erasable TypeScript only (no enum, namespace or parameter properties; " +
            "use `as` for assertions)"
        })
      }))

    it.effect("namespaces and parameter properties are rejected the same way", () =>
      Effect.gen(function*() {
        const namespace = yield* run("namespace NS { export const x = 1 }\nreturn NS.x")
        assert.strictEqual(kindOf(namespace), "exception")
        assert.match(namespace.error!.message, /^SyntaxError: TypeScript namespace declaration is not supported in strip-only mode \(line 1, column 1\); /)
        const property = yield* run("class P { constructor(private x: number) {} }\nreturn 1")
        assert.match(property.error!.message, /^SyntaxError: TypeScript parameter property is not supported in strip-only mode \(line 1, column 31\); /)
      }))

    it.effect("a syntax error points at the model's line and column", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual((yield* run("const a = 1\n\nlet b = ;")).error, {
          kind: "exception",
          message: "SyntaxError: Expression expected (line 3, column 9)"
        })
      }))

    it.effect("a runtime error gives the guest's name: message and the position of the failing line", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual((yield* run("const a: any = null\n\n  a.x")).error, {
          kind: "exception",
          message: "TypeError: cannot read property 'x' of null (line 3, column 4)"
        })
        assert.deepStrictEqual((yield* run("function f() {\n  throw new RangeError('too far')\n}\nf()")).error, {
          kind: "exception",
          message: "RangeError: too far (line 2, column 23)"
        })
      }))

    it.effect("throwing a non-error value is an exception that shows the value", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual((yield* run("throw 'raw'")).error, { kind: "exception", message: "Uncaught raw" })
        assert.deepStrictEqual((yield* run("throw { code: 7 }")).error, { kind: "exception", message: `Uncaught {"code":7}` })
      }))
  })

  describe("RT-5: the binding bridge", () => {
    it.effect("RT-5: arguments and results cross as lossless JSON in both directions", () =>
      Effect.gen(function*() {
        const { binding, calls } = recording()
        const args = { s: "é\u0000\uD800", n: [1, 2.5, -7], o: { deep: { t: true, z: null } } }
        const result = yield* run(
          `const args = ${JSON.stringify(args)}\nconst back = await tools.echo(args)\n` +
            "return { same: JSON.stringify(back) === JSON.stringify(args), back }",
          [tools({ echo: binding("echo") })]
        )
        assert.deepStrictEqual(result.value, { same: true, back: args })
        assert.deepStrictEqual(calls, [{ name: "echo", args }])
        assert.strictEqual(Object.getPrototypeOf(calls[0].args), Object.prototype)
      }))

    it.effect("RT-5: a binding failure is an instance of the namespace's error class, catchable, with toolName and message", () =>
      Effect.gen(function*() {
        const { failing, binding } = recording()
        const result = yield* run(
          "try {\n  await tools.fail({})\n} catch (e) {\n" +
            "  const next = await tools.ok({ after: true })\n" +
            "  return { isClass: e instanceof ToolCallError, isError: e instanceof Error, name: e.name,\n" +
            "    className: ToolCallError.name, toolName: e.toolName, message: e.message, next }\n}",
          [tools({ fail: failing("fail", "deliberate failure"), ok: binding("ok") })]
        )
        assert.deepStrictEqual(result.value, {
          isClass: true,
          isError: true,
          name: "ToolCallError",
          className: "ToolCallError",
          toolName: "fail",
          message: "deliberate failure",
          next: { after: true }
        })
      }))

    it.effect("RT-5: an uncaught binding failure ends the run as an exception naming the class and message", () =>
      Effect.gen(function*() {
        const { failing } = recording()
        const result = yield* run("await tools.fail({})\nreturn 1", [tools({ fail: failing("fail", "caught: deliberate failure") })])
        assert.deepStrictEqual(result.error, { kind: "exception", message: "ToolCallError: caught: deliberate failure" })
      }))

    it.effect("RT-5: another error class and member property; without one, failures are plain Errors", () =>
      Effect.gen(function*() {
        const { failing } = recording()
        const custom = yield* run(
          "try { await api.get({}) } catch (e) { return [e instanceof ApiError, e.name, e.endpoint, e.message] }",
          [{ global: "api", functions: { get: failing("get", "404") }, errorClass: { name: "ApiError", memberNameProperty: "endpoint" } }]
        )
        assert.deepStrictEqual(custom.value, [true, "ApiError", "get", "404"])
        const plain = yield* run(
          "try { await api.get({}) } catch (e) { return [Object.getPrototypeOf(e) === Error.prototype, e.message, typeof ToolCallError] }",
          [{ global: "api", functions: { get: failing("get", "404") } }]
        )
        assert.deepStrictEqual(plain.value, [true, "404", "undefined"])
      }))

    it.effect("PTC-6, RT-4: __proto__, constructor and exotic names are ordinary own bindings of a frozen null-prototype global", () =>
      Effect.gen(function*() {
        const { binding, calls } = recording()
        const names = ["__proto__", "constructor", "hasOwnProperty", "my-mcp.tool", "a\u0000b", "é"]
        const functions = Object.fromEntries(names.map((name) => [name, binding(name, () => name)]))
        const namespace = tools({})
        for (const name of names) Object.defineProperty(namespace.functions, name, { value: functions[name], enumerable: true })
        const result = yield* run(
          "const keys = Reflect.ownKeys(tools)\nconst answers = []\n" +
            "for (const key of keys) answers.push(await tools[key]({ key }))\n" +
            "return { keys, answers, proto: Object.getPrototypeOf(tools) === null, frozen: Object.isFrozen(tools) }",
          [namespace]
        )
        assert.deepStrictEqual(result.value, { keys: names, answers: names, proto: true, frozen: true })
        assert.deepStrictEqual(calls.map((call) => call.name), names)
      }))

    it.effect("RT-5: hostile bindings (throw, die, no Effect, lossy or hostile values) reject with a message; odd but lossless values pass", () =>
      Effect.gen(function*() {
        const bad: Record<string, Binding> = {
          throws: () => {
            throw new Error("host secret")
          },
          dies: () => Effect.die(new Error("host secret")),
          notEffect: (() => 42) as unknown as Binding,
          bigint: () => Effect.succeed(10n),
          proxy: () => Effect.succeed(throwingProxy()),
          revoked: () => Effect.succeed(revokedProxy()),
          hostileFailure: () => Effect.fail(throwingProxy() as never),
          unreadableMessage: () =>
            Effect.fail(Object.defineProperty({}, "message", {
              get: () => {
                throw new Error("no")
              }
            }) as never),
          nullProto: () => Effect.succeed(nullProto({ a: 1 })),
          changing: () => Effect.succeed(changing({ k: 0 }, "v", "first", "later"))
        }
        const result = yield* run(
          "const out = {}\nfor (const name of Object.keys(tools)) {\n" +
            "  try { out[name] = ['ok', await tools[name]({})] } catch (e) { out[name] = e.message }\n}\nreturn out",
          [tools(bad)]
        )
        assert.deepStrictEqual(result.value, {
          throws: "the tool call failed unexpectedly",
          dies: "the tool call failed unexpectedly",
          notEffect: "the tool call failed unexpectedly",
          bigint: "the tool result is not lossless JSON",
          proxy: "the tool result could not be read",
          revoked: "the tool result could not be read",
          hostileFailure: "the tool call failed unexpectedly",
          unreadableMessage: "tool call failed",
          nullProto: ["ok", { a: 1 }],
          changing: ["ok", { k: 0, v: "first" }]
        })
      }))

    it.effect("PTC-8, T-PTC-041, T-PTC-059: arguments that are not lossless JSON reject before the host, naming what", () =>
      Effect.gen(function*() {
        const { binding, calls } = recording()
        const result = yield* run(
          "const attempts = [\n" +
            "  () => tools.x(),\n" +
            "  () => tools.x(undefined),\n" +
            "  () => tools.x({ n: 10n }),\n" +
            "  () => tools.x({ get v() { throw 'boom' } }),\n" +
            "  () => tools.x({ get v() { throw new Error('getter failed') } }),\n" +
            "  () => tools.x({ when: new Date(0) }),\n" +
            "  () => tools.x({ f() {} }),\n" +
            "  () => tools.x({ n: NaN }),\n" +
            "  () => tools.x({ list: [1, undefined] }),\n" +
            "  () => tools.x({ s: Symbol('s') }),\n" +
            "  () => { const o = {}; o.me = o; return tools.x(o) },\n" +
            "  () => tools.x({ p: new (class P {})() }),\n" +
            "  () => tools.x({ m: new Map() }),\n" +
            "  () => tools.x({ t: new Uint8Array(2) }),\n" +
            "  () => tools.x([1, , 2]),\n" +
            "  () => tools.x({ z: -0 }),\n" +
            "  () => tools.x({ [Symbol('k')]: 1 }),\n" +
            "  () => tools.x(Object.defineProperty({}, 'hidden', { value: 1 })),\n" +
            "  () => tools.x({ toJSON() { return 1 } }),\n" +
            "]\nconst out = []\n" +
            "for (const attempt of attempts) {\n" +
            "  try { await attempt(); out.push('resolved') }\n" +
            "  catch (e) { out.push([e instanceof ToolCallError, e.toolName, e.message]) }\n}\nreturn out",
          [tools({ x: binding("x") })]
        )
        const rejected = (message: string) => [true, "x", message]
        assert.deepStrictEqual(result.value, [
          rejected(`${ARGS} (call the tool with an arguments object, e.g. \`{}\`)`),
          rejected(`${ARGS} (call the tool with an arguments object, e.g. \`{}\`)`),
          rejected(`${ARGS}: a bigint at args.n`),
          rejected(`${ARGS}: boom`),
          rejected(`${ARGS}: getter failed`),
          rejected(`${ARGS}: a Date at args.when`),
          rejected(`${ARGS}: a function at args.f`),
          rejected(`${ARGS}: NaN at args.n`),
          rejected(`${ARGS}: undefined at args.list[1]`),
          rejected(`${ARGS}: a symbol at args.s`),
          rejected(`${ARGS}: a cycle at args.me`),
          rejected(`${ARGS}: a class instance at args.p`),
          rejected(`${ARGS}: a Map at args.m`),
          rejected(`${ARGS}: a typed array at args.t`),
          rejected(`${ARGS}: a sparse array at args`),
          rejected(`${ARGS}: -0 at args.z`),
          rejected(`${ARGS}: a symbol key at args`),
          rejected(`${ARGS}: a non-enumerable property at args.hidden`),
          rejected(`${ARGS}: a function at args.toJSON`)
        ])
        assert.deepStrictEqual(calls, [])
      }))

    it.effect("PTC-8, JSON-3/4/6: getters are read once, shared subtrees are copied, deep nesting is accepted", () =>
      Effect.gen(function*() {
        let depth = 0
        const deep: Binding = (args) =>
          Effect.sync(() => {
            let node = args as { readonly c?: unknown } | undefined
            while (node !== undefined && node.c !== undefined) {
              depth++
              node = node.c as { readonly c?: unknown }
            }
            return depth
          })
        const { binding, calls } = recording()
        const result = yield* run(
          "let reads = 0\nconst shared = { k: 1 }\n" +
            "await tools.x({ get g() { return ++reads }, a: shared, b: shared })\n" +
            "let nested = {}\nfor (let i = 0; i < 20000; i++) nested = { c: nested }\n" +
            "return { reads, depth: await tools.deep(nested) }",
          [tools({ x: binding("x"), deep })]
        )
        assert.deepStrictEqual(result.value, { reads: 1, depth: 20000 })
        assert.deepStrictEqual(calls, [{ name: "x", args: { g: 1, a: { k: 1 }, b: { k: 1 } } }])
      }))

    it.effect("RT-5: a binding result with an own __proto__ key reaches the program as data; nothing is polluted", () =>
      Effect.gen(function*() {
        const result = yield* run(
          "const r = await tools.x({})\n" +
            "return { own: Object.getOwnPropertyNames(r), inner: Object.getOwnPropertyDescriptor(r, '__proto__').value,\n" +
            "  protoIsObject: Object.getPrototypeOf(r) === Object.prototype, clean: ({}).polluted === undefined }",
          [tools({ x: () => Effect.succeed(ownProtoKey()) })]
        )
        assert.deepStrictEqual(result.value, {
          own: ["__proto__"],
          inner: { polluted: true },
          protoIsObject: true,
          clean: true
        })
        assert.strictEqual(({} as Record<string, unknown>).polluted, undefined)
      }))

    it.effect("RT-6: guest prototype pollution and __proto__ keys in arguments never reach the host's prototypes", () =>
      Effect.gen(function*() {
        const { binding, calls } = recording()
        yield* run(
          "Object.prototype.polluted = 'guest'\nArray.prototype.polluted = 'guest'\n" +
            "await tools.x(JSON.parse('{\"__proto__\": {\"polluted\": \"args\"}, \"list\": [1]}'))",
          [tools({ x: binding("x") })]
        )
        const args = calls[0].args as Record<string, unknown>
        assert.strictEqual(Object.getPrototypeOf(args), Object.prototype)
        assert.deepStrictEqual(Object.getOwnPropertyDescriptor(args, "__proto__")?.value, { polluted: "args" })
        assert.strictEqual(({} as Record<string, unknown>).polluted, undefined)
        assert.strictEqual(([] as unknown as Record<string, unknown>).polluted, undefined)
        assert.isUndefined((yield* run("return ({}).polluted")).value)
      }))

    it.effect("RT-5: Promise.all over two bindings overlaps: both calls are in flight before either is released", () =>
      Effect.gen(function*() {
        const gate = yield* gated
        const fiber = yield* Effect.fork(
          run("return await Promise.all([tools.g({ n: 1 }), tools.g({ n: 2 })])", [tools({ g: gate.binding })])
        )
        assert.deepStrictEqual(yield* gate.awaitStart(0), { n: 1 })
        assert.deepStrictEqual(yield* gate.awaitStart(1), { n: 2 })
        yield* gate.release(1)
        yield* gate.release(0)
        assert.deepStrictEqual(yield* Fiber.join(fiber), { value: [{ n: 1 }, { n: 2 }], logs: [] })
      }))
  })

  describe("console (PTC-3)", () => {
    it.effect("T-PTC-055: console.log prints the plain text as one line", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* run("console.log('printed')"), { logs: ["printed"] })
        assert.deepStrictEqual(yield* run("console.log('printed')\nreturn 'returned'"), { value: "returned", logs: ["printed"] })
      }))

    it.effect("every level prints a line in order; values format like a compact console", () =>
      Effect.gen(function*() {
        const result = yield* run(
          "console.log('a', 1, { b: [1, 'x'] }, null, undefined, 2n, -0, true)\n" +
            "console.info(new TypeError('bad'), function named() {}, () => 1, Symbol('s'))\n" +
            "console.warn({ big: 3n, nested: { u: undefined } })\n" +
            "console.error('nul\\u0000 and \\uD800')\nconsole.debug()\n" +
            "const cyclic = {}; cyclic.self = cyclic\nconsole.log(cyclic, Object.create(null))"
        )
        assert.deepStrictEqual(result.logs, [
          `a 1 {"b":[1,"x"]} null undefined 2n -0 true`,
          "TypeError: bad [Function: named] [Function (anonymous)] Symbol(s)",
          `{"big":"3n","nested":{}}`,
          "nul\u0000 and \uD800",
          "",
          "[object Object] {}"
        ])
      }))

    it.effect("logs printed before a failure are kept", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* run("console.log('before')\nthrow new Error('after')"), {
          logs: ["before"],
          error: { kind: "exception", message: "Error: after (line 2, column 16)" }
        })
      }))
  })

  describe("RT-6, D-17: isolation", () => {
    it.effect("RT-6: the program sees only ECMAScript globals, its namespaces, their error class and console", () =>
      Effect.gen(function*() {
        const result = yield* run(
          "return Object.getOwnPropertyNames(globalThis).sort()",
          [tools({ x: recording().binding("x") })]
        )
        assert.deepStrictEqual(result.value, [...STANDARD_GLOBALS, "ToolCallError", "console", "tools"].sort())
      }))

    it.effect("RT-6: no process, require, module loading, timers, network or host buffers", () =>
      Effect.gen(function*() {
        const result = yield* run(
          "return ['process', 'require', 'module', 'exports', '__dirname', 'setTimeout', 'setInterval', 'setImmediate',\n" +
            "  'queueMicrotask', 'fetch', 'XMLHttpRequest', 'WebSocket', 'Buffer', 'Deno', 'Bun', 'std', 'os', 'print']\n" +
            "  .filter((name) => typeof globalThis[name] !== 'undefined')"
        )
        assert.deepStrictEqual(result.value, [])
        assert.deepStrictEqual((yield* run("return await import('fs')")).error, {
          kind: "exception",
          message: "ReferenceError: could not load module 'fs'"
        })
        assert.deepStrictEqual((yield* run("import fs from 'fs'\nreturn fs")).error?.kind, "exception")
      }))

    it.effect("RT-6: constructor chains reach only the guest realm", () =>
      Effect.gen(function*() {
        const namespace = [tools({ x: recording().binding("x") })]
        for (
          const program of [
            "return globalThis.constructor.constructor('return process')()",
            "return tools.x.constructor('return process')()",
            "return (async () => {}).constructor('return process')()",
            "return Function('return this')().process.version"
          ]
        ) {
          const result = yield* run(program, namespace)
          assert.strictEqual(kindOf(result), "exception", program)
          assert.match(result.error!.message, /^(ReferenceError: 'process' is not defined|TypeError: cannot read property 'version' of undefined)/, program)
        }
        assert.deepStrictEqual((yield* run("return [eval('1 + 1'), Function('return this')() === globalThis]")).value, [2, true])
      }))

    it.effect("RT-6: runs share no state", () =>
      Effect.gen(function*() {
        yield* run("globalThis.leftover = 1\nObject.prototype.leak = 1")
        assert.deepStrictEqual((yield* run("return [typeof leftover, ({}).leak === undefined]")).value, ["undefined", true])
      }))
  })

  describe("RT-3, RT-4: contract misuse fails run with CodeRuntimeError", () => {
    const misuse = (request: unknown) =>
      Effect.flatMap(CodeRuntime, (runtime) => Effect.flip(runtime.run(request as never)))

    it.effect("RT-4: invalid namespaces give namespaceProblem's message", () =>
      Effect.gen(function*() {
        const functions = {}
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ global: "1x", functions }, `namespace global "1x" must match [A-Za-z_][A-Za-z0-9_]*`],
          [{ global: "lambda", functions }, `namespace global "lambda" is a reserved word`],
          [{ global: "console", functions }, `namespace global "console" is reserved`],
          [{ global: "tools" }, `namespace "tools" needs a functions object`],
          [{ global: "tools", functions, errorClass: { name: "E", memberNameProperty: "message" } }, `error class "E" cannot use "message" as its memberNameProperty`],
          [throwingProxy(), "a namespace could not be read"],
          [{ global: "tools", functions: throwingProxy() }, `namespace "tools" has functions that could not be read`],
          [{ global: "tools", functions: { x: 1 } }, `namespace "tools" binding "x" is not a function`]
        ]
        for (const [namespace, message] of cases) {
          const error = yield* misuse({ program: "return 1", bindings: [namespace] })
          assert.instanceOf(error, CodeRuntimeError)
          assert.strictEqual(error.message, message)
        }
      }))

    it.effect("RT-4: two namespaces on one global, a class named like a namespace or console, one class declared twice", () =>
      Effect.gen(function*() {
        const a = { global: "a", functions: {}, errorClass: TOOL_CALL_ERROR }
        assert.strictEqual((yield* misuse({ program: "", bindings: [a, a] })).message, `namespace global "a" is used twice`)
        assert.strictEqual(
          (yield* misuse({ program: "", bindings: [a, { global: "ToolCallError", functions: {} }] })).message,
          `error class "ToolCallError" has the name of a namespace global`
        )
        assert.strictEqual(
          (yield* misuse({
            program: "",
            bindings: [a, { global: "b", functions: {}, errorClass: { name: "ToolCallError", memberNameProperty: "tool" } }]
          })).message,
          `error class "ToolCallError" is declared twice differently`
        )
        assert.strictEqual(
          (yield* misuse({ program: "", bindings: [{ ...a, errorClass: { name: "console", memberNameProperty: "tool" } }] }))
            .message,
          `error class "console" is reserved`
        )
        const shared = yield* run("return [typeof a, typeof b, ToolCallError.name]", [a, { ...a, global: "b" }])
        assert.deepStrictEqual(shared.value, ["object", "object", "ToolCallError"])
      }))

    it.effect("RT-3: a request that is not an object, a program that is not a string, a bad signal", () =>
      Effect.gen(function*() {
        assert.strictEqual((yield* misuse(null)).message, "a run request must be an object")
        assert.strictEqual((yield* misuse(throwingProxy())).message, "the run request could not be read")
        assert.strictEqual((yield* misuse({ program: 1, bindings: [] })).message, "the program must be a string")
        assert.strictEqual((yield* misuse({ program: "", bindings: {} })).message, "bindings must be an array of namespaces")
        assert.strictEqual(
          (yield* misuse({ program: "", bindings: [], signal: { aborted: false } })).message,
          "signal must be an AbortSignal"
        )
      }))
  })
})

describe("CodeRuntimeQuickJs.layer({ typescript: false })", () => {
  it.effect("runs plain JavaScript under language javascript: type annotations are syntax errors", () =>
    Effect.gen(function*() {
      const runtime = yield* CodeRuntime
      assert.strictEqual(runtime.language, "javascript")
      assert.deepStrictEqual(yield* runtime.run({ program: "return 1 + 1", bindings: [] }), { value: 2, logs: [] })
      const typed = yield* runtime.run({ program: "const x: number = 1", bindings: [] })
      assert.strictEqual(kindOf(typed), "exception")
      assert.match(typed.error!.message, /^SyntaxError: .* \(line 1, column 8\)$/)
    }).pipe(Effect.provide(CodeRuntimeQuickJs.layer({ typescript: false }))))

  it.effect("after the layer's scope closed, run fails with CodeRuntimeError", () =>
    Effect.gen(function*() {
      const runtime = yield* Effect.scoped(Effect.provide(CodeRuntime, CodeRuntimeQuickJs.layer({ typescript: false })))
      const error = yield* Effect.flip(runtime.run({ program: "return 1", bindings: [] }))
      assert.instanceOf(error, CodeRuntimeError)
      assert.strictEqual(error.message, "the code runtime is shut down")
    }))
})
