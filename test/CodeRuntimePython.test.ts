/**
 * The Python code runtime (spec §18.3 RT-1…6, DECISIONS D-17): values, printing, the binding
 * bridge (asyncio futures, ToolCallError, exotic names, PTC-8 argument checks), request
 * validation and hostile traffic. Skipped as a whole when no usable python3 is found.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Either, Exit, Fiber, Layer } from "effect"
import { existsSync } from "node:fs"
import * as CodeRuntimePython from "../layers/CodeRuntimePython.js"
import type { Binding, CodeRunResult, Namespace } from "../src/CodeRuntime.js"
import { BindingFailure, CodeRuntime, CodeRuntimeError, SandboxUnavailableError } from "../src/CodeRuntime.js"
import { nullProto, revokedProxy, throwingProxy, withBigint } from "./fixtures/hostile.js"

const probed = await Effect.runPromise(Effect.either(CodeRuntimePython.probe()))
const environment = Either.isRight(probed) ? probed.right : undefined
const title = Either.isRight(probed)
  ? `CodeRuntimePython (isolation ${environment?.levels.includes("bwrap") === true ? "bwrap" : "process-trusted-code-only: bwrap does not work here"})`
  : `CodeRuntimePython (skipped: no usable python3 here — ${probed.left.message})`

const TOOL_CALL_ERROR = { name: "ToolCallError", memberNameProperty: "toolName" }

const tools = (functions: Record<string, Binding>): Namespace => ({
  global: "tools",
  functions,
  errorClass: TOOL_CALL_ERROR
})

/** The sandbox where it works here; otherwise the behaviour tests name the weaker level explicitly. */
const LEVEL: CodeRuntimePython.IsolationLevel = environment?.levels.includes("bwrap") === true
  ? "bwrap"
  : "process-trusted-code-only"

const runtime = (limits: CodeRuntimePython.Options["limits"] = {}) =>
  CodeRuntimePython.make({ environment: environment!, isolation: LEVEL, limits })

const run = (program: string, bindings: ReadonlyArray<Namespace> = [], limits: CodeRuntimePython.Options["limits"] = {}) =>
  Effect.flatMap(runtime(limits), (rt) => rt.run({ program, bindings }))

const failure = (result: CodeRunResult) => result.error

const succeedWith = (value: unknown): Binding => () => Effect.succeed(value)

describe("CodeRuntimePython without an interpreter", () => {
  it.effect("a missing python fails the probe and the layer with a CodeRuntimeError naming it", () =>
    Effect.gen(function*() {
      const probe = yield* Effect.flip(CodeRuntimePython.probe({ executable: "/nonexistent/python3" }))
      assert.instanceOf(probe, CodeRuntimeError)
      assert.strictEqual(
        probe.message,
        "\"/nonexistent/python3\" was not found: install Python 3.8 or newer, or pass `executable` to CodeRuntimePython"
      )
      const built = yield* Effect.exit(
        Layer.build(CodeRuntimePython.layer({ executable: "no-such-python-here" })).pipe(Effect.scoped)
      )
      assert.isTrue(Exit.isFailure(built))
      const error = yield* Effect.flip(Effect.scoped(Layer.build(CodeRuntimePython.layer({ executable: "no-such-python-here" }))))
      assert.strictEqual(
        error.message,
        "\"no-such-python-here\" was not found on PATH: install Python 3.8 or newer, or pass `executable` to CodeRuntimePython"
      )
    }))

  it.effect("invalid options fail before anything runs", () =>
    Effect.gen(function*() {
      const limits = yield* Effect.flip(Effect.scoped(CodeRuntimePython.make({ limits: { cpuMs: 0 } })))
      assert.strictEqual(limits.message, "limits.cpuMs must be a positive integer")
      const isolation = yield* Effect.flip(
        Effect.scoped(CodeRuntimePython.make({ isolation: "vm" as unknown as "bwrap" }))
      )
      assert.strictEqual(
        isolation.message,
        "isolation must be one of \"bwrap\", \"unshare-trusted-code-only\", \"process-trusted-code-only\""
      )
      const forged = yield* Effect.flip(
        Effect.scoped(CodeRuntimePython.make({ environment: { levels: ["bwrap"] } as unknown as CodeRuntimePython.Environment }))
      )
      assert.strictEqual(forged.message, "environment must be a result of CodeRuntimePython.probe")
      const hostile = yield* Effect.flip(Effect.scoped(CodeRuntimePython.make(throwingProxy() as CodeRuntimePython.Options)))
      assert.strictEqual(hostile.message, "the options could not be read")
    }))
})

describe.skipIf(environment === undefined)(title, () => {
  it.scoped.skipIf(LEVEL !== "bwrap")("D-23: by default the layer runs programs in the sandbox (level bwrap, isolation container)", () =>
    Effect.gen(function*() {
      const rt = yield* CodeRuntime
      assert.strictEqual(rt.language, "python")
      assert.strictEqual(rt.isolation, "container")
      assert.deepStrictEqual(yield* rt.run({ program: "import os\nreturn [1 + 1, os.getuid()]", bindings: [] }), {
        value: [2, 65534],
        logs: []
      })
    }).pipe(Effect.provide(CodeRuntimePython.layer({ environment: environment! }))))

  it.scoped("D-23: without a working sandbox the layer fails closed with a SandboxUnavailableError saying what to install", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(CodeRuntimePython.layer({ bwrap: "/nonexistent/bwrap" })))
      assert.instanceOf(error, SandboxUnavailableError)
      const unavailable = error as SandboxUnavailableError
      assert.strictEqual(unavailable.missing, "bubblewrap (/nonexistent/bwrap) was not found")
      assert.include(unavailable.remedy, "apt-get install bubblewrap")
      assert.include(unavailable.remedy, "CodeRuntimePyodide.layer()")
      assert.strictEqual(
        unavailable.message,
        `CodeRuntimePython (isolation "bwrap") cannot build its sandbox here: ${unavailable.missing}. To fix: ${unavailable.remedy}`
      )
    }))

  it.scoped("D-23: a weaker level runs only when named, and its name says it is for trusted code only", () =>
    Effect.gen(function*() {
      const rt = yield* CodeRuntimePython.make({ environment: environment!, isolation: "process-trusted-code-only" })
      assert.strictEqual(rt.level, "process-trusted-code-only")
      assert.strictEqual(rt.isolation, "process")
      assert.match(CodeRuntimePython.isolationNotes["process-trusted-code-only"], /^UNFIT FOR UNTRUSTED CODE\./)
      assert.match(CodeRuntimePython.isolationNotes["unshare-trusted-code-only"], /^UNFIT FOR UNTRUSTED CODE\./)
      assert.deepStrictEqual(yield* rt.run({ program: "return 1 + 1", bindings: [] }), { value: 2, logs: [] })
    }))

  it.scoped("RT-1: make reports the level it chose, the probe's levels and its limits", () =>
    Effect.gen(function*() {
      const rt = yield* CodeRuntimePython.make({ environment: environment!, isolation: "process-trusted-code-only" })
      assert.strictEqual(rt.level, "process-trusted-code-only")
      assert.strictEqual(rt.environment.executable, environment!.executable)
      assert.strictEqual(rt.environment.levels[0], "process-trusted-code-only")
      assert.strictEqual(rt.limits.cpuMs, 5_000)
      assert.match(environment!.version, /^3\.\d+\.\d+$/)
    }))

  it.scoped("RT-2/RT-3: the completion value is lossless JSON; print and stderr become log lines in order", () =>
    Effect.gen(function*() {
      const result = yield* run([
        "import sys",
        "print('one')",
        "print('two\\nthree', file=sys.stderr)",
        "print('ü', 'é', sep='-', end='')",
        "return {'n': 1.5, 'i': -3, 'list': [None, True, False, 'x'], 'nested': {'k': []}, 'big': 2 ** 60}"
      ].join("\n"))
      assert.deepStrictEqual(result, {
        value: { n: 1.5, i: -3, list: [null, true, false, "x"], nested: { k: [] }, big: 2 ** 60 },
        logs: ["one", "two", "three", "ü-é"]
      })
    }))

  it.scoped("RT-2: `return None` is null; a bare return and falling off the end give no value", () =>
    Effect.gen(function*() {
      const rt = yield* runtime()
      assert.deepStrictEqual(yield* rt.run({ program: "return None", bindings: [] }), { value: null, logs: [] })
      const bare = yield* rt.run({ program: "x = 1\nif x:\n    return\nreturn 2", bindings: [] })
      assert.deepStrictEqual(bare, { logs: [] })
      assert.isFalse("value" in bare)
      const nested = yield* rt.run({
        program: "def f():\n    return 5\nclass C:\n    def m(self):\n        return 6\nprint(f(), C().m())",
        bindings: []
      })
      assert.deepStrictEqual(nested, { logs: ["5 6"] })
    }))

  it.scoped("RT-2: top-level await and return work, line numbers point at the model's code", () =>
    Effect.gen(function*() {
      const rt = yield* runtime()
      const echo = tools({ echo: (args) => Effect.succeed(args) })
      const awaited = yield* rt.run({
        program: "import asyncio\nawait asyncio.sleep(0)\nif True:\n    return await tools.echo({'v': [1, 2]})",
        bindings: [echo]
      })
      assert.deepStrictEqual(awaited, { value: { v: [1, 2] }, logs: [] })
      const thrown = yield* rt.run({ program: "x = 1\n\ndef f():\n    raise ValueError('bad')\nf()", bindings: [] })
      assert.deepStrictEqual(failure(thrown), { kind: "exception", message: "ValueError: bad (line 4)" })
      const syntax = yield* rt.run({ program: "x = 1\ny = (", bindings: [] })
      assert.deepStrictEqual(failure(syntax), { kind: "exception", message: "SyntaxError: '(' was never closed (line 2)" })
      const yielded = yield* rt.run({ program: "x = 1\nyield x", bindings: [] })
      assert.deepStrictEqual(failure(yielded), { kind: "exception", message: "SyntaxError: 'yield' outside function (line 2)" })
    }))

  it.scoped("RT-5: asyncio.gather overlaps two calls: both are in flight before either is released", () =>
    Effect.gen(function*() {
      const enteredA = yield* Deferred.make<void>()
      const enteredB = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const gated = (entered: Deferred.Deferred<void>, value: string): Binding => () =>
        Effect.zipRight(Deferred.succeed(entered, undefined), Effect.as(Deferred.await(release), value))
      const rt = yield* runtime()
      const fiber = yield* Effect.fork(rt.run({
        program: "import asyncio\na, b = await asyncio.gather(tools.a({}), tools.b({}))\nreturn a + b",
        bindings: [tools({ a: gated(enteredA, "A"), b: gated(enteredB, "B") })]
      }))
      yield* Deferred.await(enteredA)
      yield* Deferred.await(enteredB)
      assert.isFalse(yield* Deferred.isDone(release))
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), { value: "AB", logs: [] })
    }))

  it.scoped("RT-5: a failed binding raises ToolCallError with toolName and the message, catchable in Python", () =>
    Effect.gen(function*() {
      const rt = yield* runtime()
      const failing = tools({ breaks: () => Effect.fail(new BindingFailure({ message: "deliberate failure" })) })
      const caught = yield* rt.run({
        program: [
          "try:",
          "    await tools.breaks({})",
          "except ToolCallError as e:",
          "    return [type(e).__name__, e.toolName, str(e), e.message, isinstance(e, Exception)]"
        ].join("\n"),
        bindings: [failing]
      })
      assert.deepStrictEqual(caught.value, ["ToolCallError", "breaks", "deliberate failure", "deliberate failure", true])
      const uncaught = yield* rt.run({ program: "x = 0\nawait tools.breaks({})", bindings: [failing] })
      assert.deepStrictEqual(failure(uncaught), { kind: "exception", message: "ToolCallError: deliberate failure (line 2)" })
    }))

  it.scoped("RT-4/RT-5: every name is reachable by subscript, identifiers also as attributes, own names only", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const record = (label: string): Binding => (args) => Effect.sync(() => (seen.push(args), label))
      const functions = nullProto({
        "my-mcp.tool": record("mcp"),
        constructor: record("ctor"),
        class: record("class"),
        read_file: record("read"),
        "": record("empty")
      }) as Record<string, Binding>
      Object.defineProperty(functions, "__proto__", { value: record("proto"), enumerable: true })
      const result = yield* run(
        [
          "out = [await tools['my-mcp.tool']({'a': 1}), await tools['__proto__']({}), await tools.constructor({}),",
          "       await tools['class']({}), await tools.read_file({}), await tools['read_file']({}), await tools['']({})]",
          "out.append(hasattr(tools, '__proto__'))",
          "out.append('toString' in tools)",
          "out.append(sorted(tools))",
          "try:",
          "    tools.missing",
          "except AttributeError as e:",
          "    out.append(str(e))",
          "return out"
        ].join("\n"),
        [{ global: "tools", functions, errorClass: TOOL_CALL_ERROR }]
      )
      assert.deepStrictEqual(result.value, [
        "mcp",
        "proto",
        "ctor",
        "class",
        "read",
        "read",
        "empty",
        false,
        false,
        ["", "__proto__", "class", "constructor", "my-mcp.tool", "read_file"],
        "tools has no tool named 'missing'"
      ])
      assert.deepStrictEqual(seen[0], { a: 1 })
    }))

  it.scoped("PTC-8: arguments that are not lossless JSON reject the call descriptively and never reach the binding", () =>
    Effect.gen(function*() {
      let calls = 0
      const counted = tools({ t: () => Effect.sync(() => ++calls) })
      const result = yield* run(
        [
          "cyclic = []",
          "cyclic.append(cyclic)",
          "bad = [{1, 2}, b'x', float('nan'), float('inf'), {1: 'a'}, object(), 2 ** 53 + 1, {'a': [0, {'b': -0.0}]},",
          "       cyclic, {'k': {'deep': (1, set())}}]",
          "out = []",
          "for value in bad:",
          "    try:",
          "        await tools.t(value)",
          "    except ToolCallError as e:",
          "        out.append(str(e))",
          "for call in (lambda: tools.t(), lambda: tools.t({}, {}), lambda: tools.t({}, x=1)):",
          "    try:",
          "        await call()",
          "    except ToolCallError as e:",
          "        out.append(e.toolName + ': ' + str(e))",
          "return out"
        ].join("\n"),
        [counted]
      )
      const prefix = "tool arguments must be lossless JSON: "
      const noArgs = "t: tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
      assert.deepStrictEqual(result.value, [
        `${prefix}a value of type set at args`,
        `${prefix}a value of type bytes at args`,
        `${prefix}NaN at args`,
        `${prefix}Infinity at args`,
        `${prefix}a key of type int at args`,
        `${prefix}a value of type object at args`,
        `${prefix}an integer too large for a JSON number to hold exactly at args`,
        `${prefix}negative zero at args["a"][1]["b"]`,
        `${prefix}a cycle at args[0]`,
        `${prefix}a value of type set at args["k"]["deep"][1]`,
        noArgs,
        noArgs,
        noArgs
      ])
      assert.strictEqual(calls, 0)
    }))

  it.scoped("RT-5: arguments and results cross as lossless JSON; keyword arguments are the arguments object", () =>
    Effect.gen(function*() {
      const received: Array<unknown> = []
      const result = yield* run(
        "a = await tools.keep({'__proto__': {'x': 1}, 'n': [1, 2.5]})\nb = await tools.keep(path='p', limit=3)\nreturn [a, b, a['__proto__']]",
        [tools({ keep: (args) => Effect.sync(() => (received.push(args), args)) })]
      )
      assert.isTrue(Object.hasOwn(received[0] as object, "__proto__"))
      assert.deepStrictEqual(received[1], { path: "p", limit: 3 })
      const value = result.value as [object, unknown, unknown]
      assert.strictEqual(JSON.stringify(value), '[{"__proto__":{"x":1},"n":[1,2.5]},{"path":"p","limit":3},{"x":1}]')
      assert.isTrue(Object.hasOwn(value[0], "__proto__"))
      assert.strictEqual(Object.getPrototypeOf(value[0]), Object.prototype)
      assert.isTrue(Object.isFrozen(value[0]))
    }))

  it.scoped("RT-5: hostile binding results reach the program as ToolCallError, never the host", () =>
    Effect.gen(function*() {
      const bindings = tools({
        proxy: succeedWith(throwingProxy()),
        revoked: succeedWith(revokedProxy()),
        big: succeedWith(withBigint({ a: 1 })),
        notEffect: (() => 42) as unknown as Binding,
        throws: () => {
          throw new Error("synchronous throw")
        },
        dies: () => Effect.die(new Error("defect")),
        hostileFailure: () =>
          Effect.fail({
            get message(): string {
              throw new Error("hostile message")
            }
          } as BindingFailure),
        ok: succeedWith({ fine: true })
      })
      const result = yield* run(
        [
          "out = []",
          "for name in ['proxy', 'revoked', 'big', 'notEffect', 'throws', 'dies', 'hostileFailure', 'ok']:",
          "    try:",
          "        out.append(await tools[name]({}))",
          "    except ToolCallError as e:",
          "        out.append(e.toolName + ': ' + str(e))",
          "return out"
        ].join("\n"),
        [bindings]
      )
      assert.deepStrictEqual(result.value, [
        "proxy: the tool result could not be read",
        "revoked: the tool result could not be read",
        "big: the tool result is not lossless JSON",
        "notEffect: the tool call failed unexpectedly",
        "throws: the tool call failed unexpectedly",
        "dies: the tool call failed unexpectedly",
        "hostileFailure: tool call failed",
        { fine: true }
      ])
    }))

  it.scoped("RT-3: a completion value that is not lossless JSON is invalid-output, with where", () =>
    Effect.gen(function*() {
      const result = yield* run("return {'ok': [1, {'bad': {1, 2}}]}")
      assert.deepStrictEqual(failure(result), {
        kind: "invalid-output",
        message: "the program's result is not lossless JSON: a value of type set at result[\"ok\"][1][\"bad\"]"
      })
    }))

  it.scoped("RT-6: the program sees an empty environment, only its globals and a fresh working directory removed after", () =>
    Effect.gen(function*() {
      const result = yield* run(
        "import os\nreturn [dict(os.environ), sorted(k for k in globals()), os.getcwd(), os.listdir('.')]",
        [tools({ t: succeedWith(1) })]
      )
      const [env, names, cwd, listing] = result.value as [unknown, unknown, string, unknown]
      assert.deepStrictEqual(env, {})
      assert.deepStrictEqual(names, ["ToolCallError", "__builtins__", "__name__", "tools"])
      assert.deepStrictEqual(listing, [])
      assert.match(cwd, /etr-python-/)
      assert.isFalse(existsSync(cwd))
    }))

  it.scoped("RT-4/RT-3: a misused request fails with CodeRuntimeError and starts nothing", () =>
    Effect.gen(function*() {
      const rt = yield* runtime()
      const problem = (request: unknown) => Effect.map(Effect.flip(rt.run(request as never)), (e) => e.message)
      assert.strictEqual(
        yield* problem({ program: "", bindings: [{ global: "lambda", functions: {} }] }),
        "namespace global \"lambda\" is a reserved word"
      )
      assert.strictEqual(
        yield* problem({ program: "", bindings: [tools({}), tools({})] }),
        "namespace global \"tools\" is used twice"
      )
      assert.strictEqual(
        yield* problem({ program: "", bindings: [tools({ x: 1 as unknown as Binding })] }),
        "namespace \"tools\" member \"x\" is not a function"
      )
      assert.strictEqual(
        yield* problem({ program: "", bindings: [{ global: "ToolCallError", functions: {} }, tools({})] }),
        "error class \"ToolCallError\" collides with another global"
      )
      assert.strictEqual(yield* problem(throwingProxy()), "the run request could not be read")
      assert.strictEqual(yield* problem({ program: 1, bindings: [] }), "program must be a string")
      assert.strictEqual(yield* problem({ program: "", bindings: [throwingProxy()] }), "namespace 0 could not be read")
      assert.strictEqual(yield* problem({ program: "", bindings: [], signal: {} }), "signal must be an AbortSignal")
    }))

  it.scoped("RT-6: malformed traffic from the program ends that run as worker-exit; the host and the next run are fine", () =>
    Effect.gen(function*() {
      const rt = yield* runtime()
      let calls = 0
      const counted = [tools({ t: () => Effect.sync(() => ++calls) })]
      const garbage = yield* rt.run({ program: "import os\nos.write(4, b'not json\\n')\nawait tools.t({})", bindings: counted })
      assert.deepStrictEqual(failure(garbage), {
        kind: "worker-exit",
        message: "the program broke the runtime protocol (a line that is not JSON)"
      })
      const forged = yield* rt.run({
        program: "import os\nos.write(4, b'{\"t\":\"call\",\"id\":99,\"ns\":0,\"name\":\"nope\",\"args\":{}}\\n')\nimport time\ntime.sleep(5)",
        bindings: counted
      })
      assert.deepStrictEqual(failure(forged), { kind: "worker-exit", message: "the program broke the runtime protocol" })
      const deep = yield* rt.run({
        program: "import os\nos.write(4, b'{\"t\":\"done\",\"value\":' + b'[' * 100000 + b']' * 100000 + b'}\\n')\nos._exit(0)",
        bindings: []
      })
      assert.deepStrictEqual(failure(deep), {
        kind: "invalid-output",
        message: "the program's result is not lossless JSON: nested too deeply"
      })
      const exit = yield* rt.run({ program: "import os\nos._exit(3)", bindings: [] })
      assert.deepStrictEqual(failure(exit), { kind: "worker-exit", message: "the Python process exited with code 3" })
      assert.strictEqual(calls, 0)
      assert.deepStrictEqual(yield* rt.run({ program: "return await tools.t({})", bindings: counted }), { value: 1, logs: [] })
    }))
})
