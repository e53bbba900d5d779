/**
 * Limits and faults of the in-thread QuickJS runtime (D-17, RT-6): every limit ends the run
 * with its kind (never `exception`, even when the program catches the error), the host stays
 * healthy and the next run works; abort, fiber interruption and scope close stop runs and
 * interrupt their bindings; invalid options fail the layer.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Scope, TestClock } from "effect"
import * as CodeRuntimeQuickJs from "../layers/CodeRuntimeQuickJs.js"
import type { Binding, CodeRunResult } from "../src/CodeRuntime.js"
import { CodeRuntime, CodeRuntimeError } from "../src/CodeRuntime.js"
import { throwingProxy } from "./fixtures/hostile.js"
import { gated, recording, run, tools } from "./fixtures/quickjs.js"

const MiB = 1024 * 1024

/** Real elapsed time of `effect` in ms (CPU limits are real time by nature). */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = performance.now()
    const value = yield* effect
    return [value, performance.now() - start] as const
  })

/** A run that must work: the host is healthy after the previous fault. */
const healthy = Effect.gen(function*() {
  assert.deepStrictEqual(yield* run("return 1 + 1"), { value: 2, logs: [] })
})

/** A binding that waits for `release` and records whether it was interrupted. */
const hanging = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  const interrupted = yield* Deferred.make<void>()
  const binding: Binding = () =>
    Effect.zipRight(Deferred.succeed(started, undefined), Effect.never).pipe(
      Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
    )
  return { binding, started, interrupted }
})

const memoryError = (result: CodeRunResult, what: string) =>
  assert.deepStrictEqual(result.error, { kind: "memory", message: `the program exceeded the ${what}` })

const small = {
  cpuMs: 300,
  wallMs: 1_000,
  sourceBytes: 1024,
  resultBytes: 64,
  consoleBytes: 4096,
  maxToolCalls: 5,
  maxInFlight: 2
}

layer(CodeRuntimeQuickJs.layer(small))("limits (small)", (it) => {
  describe("CPU and wall time", () => {
    it.effect("D-17: while (true) {} ends with timeout once the CPU budget is spent; the next run works", () =>
      Effect.gen(function*() {
        const [result, elapsed] = yield* timed(run("while (true) {}"))
        assert.deepStrictEqual(result.error, { kind: "timeout", message: "the program used more than 300 ms of CPU time" })
        assert.isAtLeast(elapsed, 290)
        assert.isBelow(elapsed, 300 + 2_000)
        yield* healthy
      }))

    it.effect("D-17: an infinite loop after an await is stopped the same way", () =>
      Effect.gen(function*() {
        const result = yield* run("await tools.x({})\nlet n = 0\nwhile (true) { n++ }", [tools({ x: recording().binding("x") })])
        assert.deepStrictEqual(result.error, { kind: "timeout", message: "the program used more than 300 ms of CPU time" })
        yield* healthy
      }))

    it.effect("the CPU budget counts guest time only, not the time a tool takes", () =>
      Effect.gen(function*() {
        const slow: Binding = () =>
          Effect.sync(() => {
            const end = performance.now() + 400
            while (performance.now() < end) {
              // host work outside the guest, longer than the guest's budget
            }
            return "done"
          })
        assert.deepStrictEqual(yield* run("const a = await tools.slow({})\nreturn a", [tools({ slow })]), {
          value: "done",
          logs: []
        })
      }))

    it.effect("the wall limit (on Effect's Clock) ends a run stuck on a tool and interrupts the tool", () =>
      Effect.gen(function*() {
        const tool = yield* hanging
        const fiber = yield* Effect.fork(run("await tools.hang({})\nreturn 1", [tools({ hang: tool.binding })]))
        yield* Deferred.await(tool.started)
        yield* TestClock.adjust("1 second")
        assert.deepStrictEqual((yield* Fiber.join(fiber)).error, {
          kind: "timeout",
          message: "the run took longer than 1000 ms of wall time (tool calls included)"
        })
        yield* Deferred.await(tool.interrupted)
        yield* healthy
      }))

    it.effect("a program waiting on a promise nothing can settle ends at once as an exception", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual((yield* run("await new Promise(() => {})")).error, {
          kind: "exception",
          message: "the program is waiting for a promise that nothing will settle"
        })
      }))
  })

  describe("output", () => {
    it.effect("D-17: printing past the console cap ends with output-limit and keeps the lines that fit", () =>
      Effect.gen(function*() {
        const result = yield* run("for (let i = 0; i < 1000; i++) console.log('x'.repeat(99))\nreturn 1")
        assert.deepStrictEqual(result.error, {
          kind: "output-limit",
          message: "the program printed more than the 4 KiB console limit"
        })
        assert.strictEqual(result.logs.length, 40)
        assert.isTrue(result.logs.every((line) => line === "x".repeat(99)))
        yield* healthy
      }))

    it.effect("D-17: one line longer than the whole console cap ends with output-limit without crossing over", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* run("console.log('fits')\nconsole.log('x'.repeat(1 << 20))\nreturn 1"), {
          logs: ["fits"],
          error: { kind: "output-limit", message: "the program printed more than the 4 KiB console limit" }
        })
      }))

    it.effect("D-17: a result whose JSON is over the cap (in UTF-8 bytes) is output-limit", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* run("return 'x'.repeat(62)"), { value: "x".repeat(62), logs: [] })
        assert.deepStrictEqual(yield* run("return 'é'.repeat(31)"), { value: "é".repeat(31), logs: [] })
        assert.deepStrictEqual((yield* run("return 'é'.repeat(32)")).error, {
          kind: "output-limit",
          message: "the program's result is 66 bytes of JSON, over the 64 bytes result limit"
        })
        assert.deepStrictEqual((yield* run("return 'x'.repeat(1000)")).error, {
          kind: "output-limit",
          message: "the program's result is over the 64 bytes result limit"
        })
      }))

    it.effect("a program over the source cap (in UTF-8 bytes) is refused as output-limit before it runs", () =>
      Effect.gen(function*() {
        const { binding, calls } = recording()
        const program = `await tools.x({})\n// ${"é".repeat(502)}`
        assert.isBelow(program.length, 1024)
        assert.deepStrictEqual((yield* run(program, [tools({ x: binding("x") })])).error, {
          kind: "output-limit",
          message: `the program is ${Buffer.byteLength(program)} bytes, over the 1 KiB source limit`
        })
        assert.deepStrictEqual(calls, [])
      }))
  })

  describe("tool calls", () => {
    it.effect("D-17: the call past maxToolCalls ends the run with call-limit; only the allowed calls ran", () =>
      Effect.gen(function*() {
        const { binding, calls } = recording()
        const result = yield* run("for (let i = 0; i < 10; i++) await tools.x({ i })\nreturn 'done'", [tools({ x: binding("x") })])
        assert.deepStrictEqual(result.error, { kind: "call-limit", message: "the program made more than 5 tool calls" })
        assert.deepStrictEqual(calls.map((call) => call.args), [0, 1, 2, 3, 4].map((i) => ({ i })))
      }))

    it.effect("PTC-8: calls rejected for their arguments use no call of the budget", () =>
      Effect.gen(function*() {
        const { binding, calls } = recording()
        const result = yield* run(
          "for (let i = 0; i < 10; i++) await tools.x({ bad: 1n }).catch(() => {})\n" +
            "for (let i = 0; i < 5; i++) await tools.x({ i })\nreturn 'done'",
          [tools({ x: binding("x") })]
        )
        assert.deepStrictEqual(result, { value: "done", logs: [] })
        assert.strictEqual(calls.length, 5)
      }))

    it.effect("calls beyond maxInFlight queue (never rejected) and start as slots free up", () =>
      Effect.gen(function*() {
        const gate = yield* gated
        const fiber = yield* Effect.fork(
          run("return await Promise.all([1, 2, 3].map((n) => tools.g({ n })))", [tools({ g: gate.binding })])
        )
        yield* gate.awaitStart(0)
        yield* gate.awaitStart(1)
        yield* Effect.yieldNow()
        assert.strictEqual(gate.calls(), 2)
        yield* gate.release(0)
        assert.deepStrictEqual(yield* gate.awaitStart(2), { n: 3 })
        yield* gate.release(1)
        yield* gate.release(2)
        assert.deepStrictEqual(yield* Fiber.join(fiber), { value: [{ n: 1 }, { n: 2 }, { n: 3 }], logs: [] })
      }))

    it.effect("RT-6: a run that returns while a call is in flight interrupts that call; its late result is dropped", () =>
      Effect.gen(function*() {
        const tool = yield* hanging
        const result = yield* run("tools.hang({})\nreturn 'returned'", [tools({ hang: tool.binding })])
        assert.deepStrictEqual(result, { value: "returned", logs: [] })
        yield* Deferred.await(tool.interrupted)
        yield* healthy
      }))
  })

  describe("abort and interruption (RT-6)", () => {
    it.effect("RT-6: aborting the signal while the program waits on a tool ends with abort and interrupts the tool", () =>
      Effect.gen(function*() {
        const tool = yield* hanging
        const controller = new AbortController()
        const fiber = yield* Effect.fork(
          run("await tools.hang({})\nreturn 1", [tools({ hang: tool.binding })], controller.signal)
        )
        yield* Deferred.await(tool.started)
        controller.abort()
        assert.deepStrictEqual(yield* Fiber.join(fiber), { logs: [], error: { kind: "abort", message: "the run was aborted" } })
        yield* Deferred.await(tool.interrupted)
        yield* healthy
      }))

    it.effect("RT-6: an abort that lands while a tool runs stops the program before it computes again", () =>
      Effect.gen(function*() {
        const controller = new AbortController()
        const stop: Binding = () => Effect.sync(() => controller.abort())
        const result = yield* run(
          "console.log('start')\nawait tools.stop({})\nconsole.log('after')\nwhile (true) {}",
          [tools({ stop })],
          controller.signal
        )
        assert.deepStrictEqual(result, { logs: ["start"], error: { kind: "abort", message: "the run was aborted" } })
      }))

    it.effect("RT-6: an already aborted signal ends the run as abort without running anything", () =>
      Effect.gen(function*() {
        const { binding, calls } = recording()
        const result = yield* run("await tools.x({})", [tools({ x: binding("x") })], AbortSignal.abort())
        assert.deepStrictEqual(result, { logs: [], error: { kind: "abort", message: "the run was aborted" } })
        assert.deepStrictEqual(calls, [])
      }))

    it.effect("RT-6: interrupting the fiber running the program stops it and interrupts its tools", () =>
      Effect.gen(function*() {
        const tool = yield* hanging
        const fiber = yield* Effect.fork(run("await tools.hang({})\nreturn 1", [tools({ hang: tool.binding })]))
        yield* Deferred.await(tool.started)
        const exit = yield* Fiber.interrupt(fiber)
        assert.isTrue(Exit.isInterrupted(exit))
        yield* Deferred.await(tool.interrupted)
        yield* healthy
      }))
  })
})

layer(CodeRuntimeQuickJs.layer({ cpuMs: 10_000, memoryBytes: 32 * MiB, stackBytes: 256 * 1024 }))("limits (memory and stack)", (it) => {
  it.effect("D-17: a retained typed-array bomb ends with kind memory at the instance's cap", () =>
    Effect.gen(function*() {
      memoryError(yield* run("const kept = []\nwhile (true) kept.push(new Uint8Array(1 << 20))"), "32 MiB memory limit")
      yield* healthy
    }))

  it.effect("D-17: a retained string bomb and a small-object bomb end with kind memory", () =>
    Effect.gen(function*() {
      memoryError(yield* run("const kept = []\nwhile (true) kept.push('x'.repeat(1 << 16) + kept.length)"), "32 MiB memory limit")
      memoryError(yield* run("const kept = []\nwhile (true) kept.push({ n: kept.length, s: [kept.length] })"), "32 MiB memory limit")
      yield* healthy
    }))

  it.effect("D-17: out of memory caught by the program still ends the run with kind memory", () =>
    Effect.gen(function*() {
      const result = yield* run(
        "let kept = []\ntry { while (true) kept.push(new Uint8Array(1 << 20)) } catch (e) { kept = [] }\nreturn 'recovered'"
      )
      memoryError(result, "32 MiB memory limit")
      memoryError(yield* run("try { new Uint8Array(64 << 20) } catch (e) {}\nreturn 1"), "32 MiB memory limit")
      yield* healthy
    }))

  it.effect("D-17: deep recursion overflows the stack limit: kind memory, even when caught", () =>
    Effect.gen(function*() {
      const stack = "256 KiB stack limit (stack overflow)"
      memoryError(yield* run("function f(n) { return f(n + 1) + 1 }\nreturn f(0)"), stack)
      memoryError(yield* run("function f(n) { return f(n + 1) + 1 }\ntry { f(0) } catch (e) {}\nreturn 'recovered'"), stack)
      memoryError(yield* run("return JSON.parse('['.repeat(200000))"), stack)
      assert.deepStrictEqual(
        yield* run("function f(n) { return n === 0 ? 0 : f(n - 1) + 1 }\nreturn f(300)"),
        { value: 300, logs: [] }
      )
      yield* healthy
    }))
})

layer(CodeRuntimeQuickJs.layer({ cpuMs: 3_000 }))("limits (defaults)", (it) => {
  it.effect("D-17: a 10 MB console flood ends with output-limit at the default 64 KiB", () =>
    Effect.gen(function*() {
      const result = yield* run("for (let i = 0; i < 100000; i++) console.log('x'.repeat(100))")
      assert.deepStrictEqual(result.error, { kind: "output-limit", message: "the program printed more than the 64 KiB console limit" })
      assert.strictEqual(result.logs.length, Math.floor((64 * 1024) / 101))
      yield* healthy
    }))

  it.effect("D-17: a result over the default 1 MiB is output-limit", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual((yield* run("return 'x'.repeat(1100000)")).error, {
        kind: "output-limit",
        message: "the program's result is over the 1 MiB result limit"
      })
    }))

  it.effect("D-17: 10,000 sequential sub-calls end with call-limit after exactly the default 256", () =>
    Effect.gen(function*() {
      const { binding, calls } = recording()
      const result = yield* run("for (let i = 0; i < 10000; i++) await tools.x({ i })", [tools({ x: binding("x") })])
      assert.deepStrictEqual(result.error, { kind: "call-limit", message: "the program made more than 256 tool calls" })
      assert.strictEqual(calls.length, 256)
      yield* healthy
    }))

  it.effect("D-17: 10,000 sub-calls in one Promise.all end with call-limit; queued calls never start", () =>
    Effect.gen(function*() {
      const { binding, calls } = recording()
      const result = yield* run(
        "const all = []\nfor (let i = 0; i < 10000; i++) all.push(tools.x({ i }))\nreturn (await Promise.all(all)).length",
        [tools({ x: binding("x") })]
      )
      assert.deepStrictEqual(result.error, { kind: "call-limit", message: "the program made more than 256 tool calls" })
      assert.deepStrictEqual(calls.map((call) => call.args), Array.from({ length: 32 }, (_, i) => ({ i })))
      yield* healthy
    }))

  it.effect("D-17: deep recursion at the default 1 MiB stack ends with kind memory", () =>
    Effect.gen(function*() {
      memoryError(yield* run("function f(n) { return f(n + 1) + 1 }\ntry { f(0) } catch {}\nreturn 1"), "1 MiB stack limit (stack overflow)")
      yield* healthy
    }))
})

describe("the layer's scope", () => {
  it.effect("RT-6: closing the scope stops a live run (abort) and interrupts its tool; later runs are refused", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(CodeRuntimeQuickJs.layer(), scope)
      const runtime = context.pipe((c) => c.unsafeMap.get(CodeRuntime.key) as CodeRuntime["Type"])
      const tool = yield* hanging
      const fiber = yield* Effect.fork(runtime.run({ program: "await tools.hang({})", bindings: [tools({ hang: tool.binding })] }))
      yield* Deferred.await(tool.started)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* Fiber.join(fiber), {
        logs: [],
        error: { kind: "abort", message: "the code runtime was shut down" }
      })
      yield* Deferred.await(tool.interrupted)
      const refused = yield* Effect.flip(runtime.run({ program: "return 1", bindings: [] }))
      assert.strictEqual(refused.message, "the code runtime is shut down")
    }))
})

describe("options", () => {
  const invalid = (options: unknown) =>
    Effect.flip(Effect.scoped(Layer.build(CodeRuntimeQuickJs.layer(options as CodeRuntimeQuickJs.Options))))

  it.effect("invalid options fail the layer with CodeRuntimeError saying which and why", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ cpuMs: -1 }, "cpuMs must be a positive integer, got -1"],
        [{ cpuMs: 1.5 }, "cpuMs must be a positive integer, got 1.5"],
        [{ wallMs: Infinity }, "wallMs must be a positive integer, got Infinity"],
        [{ maxToolCalls: "5" }, `maxToolCalls must be a positive integer, got "5"`],
        [{ maxInFlight: 0 }, "maxInFlight must be a positive integer, got 0"],
        [{ memoryBytes: MiB }, "memoryBytes must be at least 16 MiB (16777216), got 1048576"],
        [{ memoryBytes: 4096 * MiB }, "memoryBytes must be at most 2 GiB (2147483648), got 4294967296"],
        [{ stackBytes: 16 * MiB }, "stackBytes must be at most 4 MiB (4194304), got 16777216"],
        [{ cpuMS: 5 }, `unknown option "cpuMS"`],
        [{ typescript: "yes" }, `typescript must be a boolean, got "yes"`],
        [null, "options must be an object"],
        [throwingProxy(), "options could not be read"]
      ]
      for (const [options, problem] of cases) {
        const error = yield* invalid(options)
        assert.instanceOf(error, CodeRuntimeError)
        assert.strictEqual(error.message, `invalid CodeRuntimeQuickJs options: ${problem}`)
      }
    }))
})
