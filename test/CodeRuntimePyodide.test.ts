/**
 * The Pyodide code runtime (spec §18.3 RT-1…6, DECISIONS D-17, D-23): the same seam, SDK and
 * bridge as the subprocess runtime (asyncio.gather overlaps calls, ToolCallError, lossless JSON),
 * a fresh interpreter per run, and stops that land: abort and wall time while the program waits,
 * the CPU budget while it computes, and a program that swallows the interrupt is ended by
 * terminating its worker. The escape probes are in CodeRuntime.escape.test.ts.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Ref, TestClock } from "effect"
import * as CodeRuntimePyodide from "../layers/CodeRuntimePyodide.js"
import type { Binding } from "../src/CodeRuntime.js"
import { BindingFailure, CodeRuntime } from "../src/CodeRuntime.js"
import { tools } from "./fixtures/quickjs.js"

const run = (program: string, bindings = [tools({})], signal?: AbortSignal) =>
  Effect.flatMap(CodeRuntime, (runtime) => runtime.run({ program, bindings, signal }))

describe("CodeRuntimePyodide options", () => {
  it.effect("invalid options fail before any worker starts", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.scoped(CodeRuntimePyodide.make({ limits: { memoryBytes: 1024 } })))
      assert.strictEqual(
        error.message,
        "invalid CodeRuntimePyodide options: limits.memoryBytes must be from 48 MiB (50331648) to 2 GiB (2147483648)"
      )
      const unknown = yield* Effect.flip(Effect.scoped(CodeRuntimePyodide.make({ isolation: "x" } as never)))
      assert.strictEqual(unknown.message, "invalid CodeRuntimePyodide options: unknown option \"isolation\"")
    }))
})

layer(CodeRuntimePyodide.layer({ limits: { cpuMs: 800, wallMs: 5_000 }, poolSize: 2 }), { timeout: 120_000 })(
  "CodeRuntimePyodide",
  (it) => {
    it.effect("RT-1/RT-2: language python in wasm; values, prints and errors as in the subprocess runtime", () =>
      Effect.gen(function*() {
        const runtime = yield* CodeRuntime
        assert.strictEqual(runtime.language, "python")
        assert.strictEqual(runtime.isolation, "wasm")
        assert.deepStrictEqual(yield* run("print('one')\nreturn {'n': 1.5, 'list': [None, True], 'big': 2 ** 52}"), {
          value: { n: 1.5, list: [null, true], big: 2 ** 52 },
          logs: ["one"]
        })
        assert.deepStrictEqual((yield* run("x = 1\n\ndef f():\n    raise ValueError('bad')\nf()")).error, {
          kind: "exception",
          message: "ValueError: bad (line 4)"
        })
        assert.deepStrictEqual((yield* run("return {1, 2}")).error, {
          kind: "invalid-output",
          message: "the program's result is not lossless JSON: a value of type set at result"
        })
      }))

    it.effect("RT-5: asyncio.gather overlaps two calls; failures raise ToolCallError; arguments are lossless JSON", () =>
      Effect.gen(function*() {
        const enteredA = yield* Deferred.make<void>()
        const enteredB = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const gated = (entered: Deferred.Deferred<void>, value: string): Binding => () =>
          Effect.zipRight(Deferred.succeed(entered, undefined), Effect.as(Deferred.await(release), value))
        const fiber = yield* Effect.fork(run(
          [
            "import asyncio",
            "a, b = await asyncio.gather(tools.a({}), tools.b({}))",
            "try:",
            "    await tools.fail({})",
            "except ToolCallError as e:",
            "    failure = [e.toolName, str(e)]",
            "try:",
            "    await tools.a({'x': float('nan')})",
            "except ToolCallError as e:",
            "    lossy = str(e)",
            "return [a + b, failure, lossy]"
          ].join("\n"),
          [tools({
            a: gated(enteredA, "A"),
            b: gated(enteredB, "B"),
            fail: () => Effect.fail(new BindingFailure({ message: "deliberate failure" }))
          })]
        ))
        yield* Deferred.await(enteredA)
        yield* Deferred.await(enteredB)
        assert.isFalse(yield* Deferred.isDone(release))
        yield* Deferred.succeed(release, undefined)
        assert.deepStrictEqual((yield* Fiber.join(fiber)).value, [
          "AB",
          ["fail", "deliberate failure"],
          "tool arguments must be lossless JSON: NaN at args[\"x\"]"
        ])
      }))

    it.effect("RT-6: aborting the signal while the program waits ends it as abort and interrupts the binding", () =>
      Effect.gen(function*() {
        const entered = yield* Deferred.make<void>()
        const interrupted = yield* Ref.make(false)
        const controller = new AbortController()
        const waiting: Binding = () =>
          Effect.zipRight(Deferred.succeed(entered, undefined), Effect.never).pipe(
            Effect.onInterrupt(() => Ref.set(interrupted, true))
          )
        const fiber = yield* Effect.fork(run("print('started')\nawait tools.wait({})", [tools({ wait: waiting })], controller.signal))
        yield* Deferred.await(entered)
        controller.abort()
        const result = yield* Fiber.join(fiber)
        assert.deepStrictEqual(result.error, { kind: "abort", message: "the run was aborted" })
        assert.isTrue(yield* Ref.get(interrupted))
      }))

    it.effect("RT-6: the wall limit counts tool time", () =>
      Effect.gen(function*() {
        const entered = yield* Deferred.make<void>()
        const fiber = yield* Effect.fork(run("await tools.wait({})", [
          tools({ wait: () => Effect.zipRight(Deferred.succeed(entered, undefined), Effect.never) })
        ]))
        yield* Deferred.await(entered)
        yield* TestClock.adjust("5 seconds")
        assert.deepStrictEqual((yield* Fiber.join(fiber)).error, {
          kind: "timeout",
          message: "the run took longer than 5000 ms of wall time (tool calls included)"
        })
      }))

    it.effect("D-17: a program that swallows the CPU interrupt is still ended as timeout (its worker is terminated) and the next run works", () =>
      Effect.gen(function*() {
        const result = yield* run("while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass")
        assert.deepStrictEqual(result.error, { kind: "timeout", message: "the program used more than 800 ms of CPU time" })
        assert.deepStrictEqual(yield* run("return 'fine'"), { value: "fine", logs: [] })
      }))
  }
)
